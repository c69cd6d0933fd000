package simulator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// nodeFacts is what the disruption plan knows about one node of the snapshot.
type nodeFacts struct {
	node *corev1.Node
	sim  *simNode
	// pol is the node's policy pool (nil: unmanaged) and pool the simulation's; price is the
	// node's catalog price per hour.
	pol      *policy.Pool
	pool     *poolInfo
	price    float64
	offering api.Offering
	gpus     int
	// consolidateAfter is the pool's wait; since the node's AnnotationCandidateSince (zero when
	// absent); ready whether the wait is over.
	consolidateAfter time.Duration
	since            time.Time
	ready            bool
	// pods are the pods that must move if the node goes: not DaemonSet, mirror, finished or
	// terminating pods, which go with it.
	pods []*corev1.Pod
	use  nodeUse
	// keep is the reason the node is kept whatever the search finds; nil for candidates.
	keep *api.KeptNode
	// disrupting: the node is already going; it counts against its pool's budget. listed: the
	// caller lists it among Options.Disrupting.
	disrupting, listed bool
	// orphan: the node's tiler.dev/pool names a pool the policy no longer has; pol is a stand-in
	// of that name with the default settings.
	orphan bool
	// forced is why the node must go whatever it costs (nil: it may only be consolidated);
	// health are its health signals, due or not.
	forced *forced
	health []api.UnhealthyNode
	// behind are the pods that stay with a forced node instead of moving: nothing recreates them,
	// or (urgent reasons) their gang runs on other nodes too.
	behind []string
}

// pdbInfo is a PodDisruptionBudget and how many disruptions it allows now.
type pdbInfo struct {
	key     string
	ns      string
	sel     labels.Selector
	allowed int32
}

// classify builds the facts of every node of the snapshot, sorted by name, and decides the keep
// reasons that need no simulation (checked in order; the first applies).
func (d *disruptor) classify() {
	snap := d.in.Snapshot
	d.buildPDBs(snap)
	byNode := map[string][]*corev1.Pod{}
	for _, p := range snap.Pods {
		if snapshot.IsActive(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	going := setOf(d.in.Options.Disrupting)
	inFlight := map[string]bool{}
	for _, f := range d.in.Options.InFlight {
		inFlight[f.Name] = true
	}
	d.deviceTaints = indexDeviceTaints(snap.ResourceSlices)
	gangNodes := d.gangNodes()
	for _, n := range snap.Nodes {
		f := d.newFacts(n, byNode[n.Name], going[n.Name])
		switch {
		case f.pol == nil:
			f.keep = &api.KeptNode{Reason: api.KeepUnmanaged, Message: "no " + api.LabelPool + " label"}
		case inFlight[n.Name]:
			f.keep = &api.KeptNode{Reason: api.KeepTooYoung, Message: "the node is still being launched"}
		default:
			if d.detectForced(f); f.forced != nil {
				f.keep = d.forcedKeep(f, gangNodes)
			} else {
				f.keep = d.nodeKeep(f)
			}
		}
		if f.keep != nil {
			f.keep.Name = n.Name
			if f.pol != nil {
				f.keep.Pool = f.pol.Name
			}
		}
	}
	sort.Slice(d.facts, func(i, j int) bool { return d.facts[i].node.Name < d.facts[j].node.Name })
	d.pauseRolls()
	d.holdWideFaults()
	d.keepGangs()
}

// pauseRolls keeps the drifted and expired nodes whose replacement would boot from an image a
// node booted from shows a health signal (due or not: a driver that fails on the first node will
// on the next), or that the caller remembers as failed (Options.FailedImages): a bad image is
// rolled onto one node under the budgets, not over the fleet.
func (d *disruptor) pauseRolls() {
	sick := map[string]string{} // image → why the roll onto it is paused
	for _, f := range d.facts {
		if booted := d.in.Options.Images[f.node.Name].BootedAs(); booted != "" && len(f.health) > 0 && sick[booted] == "" {
			sick[booted] = fmt.Sprintf("node %s, booted from it, is unhealthy (%s: %s)", f.node.Name, f.health[0].Signal, f.health[0].Message)
		}
	}
	for img, why := range d.in.Options.FailedImages {
		if sick[img] == "" {
			sick[img] = "it failed before: " + why
		}
	}
	for _, f := range d.facts {
		img := d.in.Options.Images[f.node.Name]
		now := img.NowAs()
		if f.keep != nil || f.forced == nil || (f.forced.reason != api.ReasonDrifted && f.forced.reason != api.ReasonExpired) ||
			now == img.BootedAs() || sick[now] == "" {
			continue
		}
		f.keep = &api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: api.KeepRollPaused,
			Message: fmt.Sprintf("%s; the roll onto image %s is paused: %s", f.forced.message, now, sick[now])}
	}
}

// holdWideFaults keeps the nodes due for repair in a pool where more nodes show a health signal
// (due or not, already under repair or not) than its repair.maxUnhealthy allows: a fault that
// wide (a zone's network, the control plane, a driver pushed to every node) is not the nodes',
// and replacing them one budget after another would not mend it.
func (d *disruptor) holdWideFaults() {
	nodes, sick := map[string]int{}, map[string]int{}
	for _, f := range d.facts {
		if f.pol == nil {
			continue
		}
		nodes[f.pol.Name]++
		if len(f.health) > 0 {
			sick[f.pol.Name]++
		}
	}
	for _, f := range d.facts {
		if f.keep != nil || f.forced == nil || f.forced.reason != api.ReasonUnhealthy {
			continue
		}
		rs, pool := f.pol.RepairOf(), f.pol.Name
		if limit := rs.AllowedUnhealthy(nodes[pool]); sick[pool] > limit {
			f.keep = &api.KeptNode{Name: f.node.Name, Pool: pool, Reason: api.KeepTooManyUnhealthy,
				Message: fmt.Sprintf("%s; %d of pool %s's %d nodes show a health signal, more than its repair.maxUnhealthy (%s: %d) allows: a fault that wide is not the nodes', so none is repaired until it narrows",
					f.forced.message, sick[pool], pool, nodes[pool], rs.MaxUnhealthy, limit)}
		}
	}
}

// failedImages lists the images of the nodes that show a health signal younger than
// Options.ImageProbation, one node per image (the first by name), sorted by image.
func (d *disruptor) failedImages() []api.ImageFailure {
	if d.in.Options.ImageProbation <= 0 {
		return nil
	}
	byImage := map[string]api.ImageFailure{}
	for _, f := range d.facts {
		img := d.in.Options.Images[f.node.Name].BootedAs()
		age := d.now.Sub(f.node.CreationTimestamp.Time)
		if img == "" || len(f.health) == 0 || f.node.CreationTimestamp.IsZero() || age >= d.in.Options.ImageProbation {
			continue
		}
		if prev, ok := byImage[img]; ok && prev.Node < f.node.Name {
			continue
		}
		h := f.health[0]
		byImage[img] = api.ImageFailure{Image: img, Node: f.node.Name,
			Message: fmt.Sprintf("node %s, booted from it %s before, shows %s: %s", f.node.Name, age.Round(time.Second), h.Signal, h.Message)}
	}
	out := make([]api.ImageFailure, 0, len(byImage))
	for _, img := range slices.Sorted(maps.Keys(byImage)) {
		out = append(out, byImage[img])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// newFacts records what the labels, the catalog and the pods running there say about a node;
// listed says the caller lists it as being disrupted.
func (d *disruptor) newFacts(n *corev1.Node, pods []*corev1.Pod, listed bool) *nodeFacts {
	f := &nodeFacts{node: n, listed: listed}
	d.facts = append(d.facts, f)
	d.byName[n.Name] = f
	f.pol = policyPool(d.in.Policy, n.Labels[api.LabelPool])
	if name := n.Labels[api.LabelPool]; f.pol == nil && name != "" {
		// Tiler bought the node for a pool that has since been removed: it is managed, and drifted.
		f.pol, f.orphan = &policy.Pool{Name: name}, true
	}
	f.gpus, f.offering, f.price = d.nodeType(n)
	for _, p := range pods {
		if movesWithNode(p) {
			f.pods = append(f.pods, p)
		}
	}
	f.disrupting = listed || n.DeletionTimestamp != nil || n.Spec.Unschedulable || !nodeReady(n)
	return f
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// nodeKeep returns the static keep reason of a managed node, or nil.
func (d *disruptor) nodeKeep(f *nodeFacts) *api.KeptNode {
	n, pl := f.node, f.pol
	f.consolidateAfter = pl.ConsolidateAfterOf(d.poolHasGPUs(pl))
	if v, ok := n.Annotations[api.AnnotationCandidateSince]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			d.warnings = append(d.warnings, fmt.Sprintf("node %s: %s %q is not an RFC 3339 time; ignored", n.Name, api.AnnotationCandidateSince, v))
		}
		f.since = t
	}
	f.ready = d.in.Options.IgnoreCandidateWait || f.consolidateAfter <= 0 || !f.since.IsZero() && d.now.Sub(f.since) >= f.consolidateAfter
	keep := func(r api.KeepReason, format string, a ...any) *api.KeptNode {
		return &api.KeptNode{Reason: r, Message: fmt.Sprintf(format, a...)}
	}
	age := d.now.Sub(n.CreationTimestamp.Time)
	switch {
	case d.in.Options.Keep[n.Name] != "":
		return keep(api.KeepKept, "%s", d.in.Options.Keep[n.Name])
	case nodeDoNotDisrupt(n):
		return keep(api.KeepDoNotDisrupt, "the node is annotated not to be disrupted")
	case f.disrupting:
		return keep(api.KeepDisrupting, "already being disrupted (listed, deleting, cordoned or not Ready)")
	case f.price <= 0:
		return keep(api.KeepUnpriced, "catalog %s has no price for %s", d.in.Catalog.Name, f.offering)
	case pl.ConsolidationOf() == policy.Never:
		return keep(api.KeepConsolidationDisabled, "pool %s: consolidation is never", pl.Name)
	case !n.CreationTimestamp.IsZero() && age < f.consolidateAfter:
		return keep(api.KeepTooYoung, "created %s ago, consolidateAfter is %s", age.Round(time.Second), f.consolidateAfter)
	}
	for _, p := range f.pods {
		if k := d.podKeep(p); k != nil {
			return k
		}
	}
	if len(f.pods) > 0 && pl.ConsolidationOf() == policy.WhenEmpty {
		return keep(api.KeepConsolidationDisabled, "pool %s consolidates only empty nodes; %d pods run here", pl.Name, len(f.pods))
	}
	return nil
}

// nodeDoNotDisrupt reports whether the node is annotated do-not-disrupt (tiler.dev, karpenter.sh)
// or scale-down-disabled (the Cluster Autoscaler's).
func nodeDoNotDisrupt(n *corev1.Node) bool {
	a := n.Annotations
	return a[api.AnnotationDoNotDisrupt] == "true" || a[api.AnnotationKarpenterDoNotDisrupt] == "true" ||
		a[api.AnnotationScaleDownDisabled] == "true"
}

// podDoNotDisrupt reports whether the pod is annotated do-not-disrupt (tiler.dev, karpenter.sh)
// or safe-to-evict "false" (the Cluster Autoscaler's).
func podDoNotDisrupt(p *corev1.Pod) bool {
	a := p.Annotations
	return a[api.AnnotationDoNotDisrupt] == "true" || a[api.AnnotationKarpenterDoNotDisrupt] == "true" ||
		a[api.AnnotationSafeToEvict] == "false"
}

// notePDBs records the PodDisruptionBudgets that select the pod, so that the actions evicting it
// use one of their disruptions each, and returns the first that allows none now (-1: none).
func (d *disruptor) notePDBs(p *corev1.Pod) int {
	key, blocked := podKey(p), -1
	for i, b := range d.pdbs {
		if b.ns != p.Namespace || !b.sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if b.allowed <= 0 && blocked < 0 {
			blocked = i
		}
		d.podPDBs[key] = append(d.podPDBs[key], i)
	}
	return blocked
}

// podKeep returns why the pod keeps its node, or nil; it records the budgets that select it.
func (d *disruptor) podKeep(p *corev1.Pod) *api.KeptNode {
	key := podKey(p)
	a := p.Annotations
	safe := a[api.AnnotationSafeToEvict] == "true"
	switch {
	case podDoNotDisrupt(p):
		return &api.KeptNode{Reason: api.KeepPodDoNotDisrupt, Message: "pod " + key + " is annotated not to be disrupted"}
	case !safe && metav1.GetControllerOf(p) == nil:
		return &api.KeptNode{Reason: api.KeepPodWithoutController, Message: "pod " + key + " has no controller to recreate it"}
	case !safe && hasLocalStorage(p):
		return &api.KeptNode{Reason: api.KeepLocalStorage, Message: "pod " + key + " has local storage (emptyDir or hostPath) and is not annotated " + api.AnnotationSafeToEvict + ": \"true\""}
	}
	if i := d.notePDBs(p); i >= 0 {
		delete(d.podPDBs, key)
		return &api.KeptNode{Reason: api.KeepPDB, Message: "PodDisruptionBudget " + d.pdbs[i].key + " allows no disruption of pod " + key}
	}
	return nil
}

// movesWithNode reports whether the pod would have to be moved: DaemonSet and mirror pods, and
// finished or terminating ones, end with their node.
func movesWithNode(p *corev1.Pod) bool {
	if snapshot.IsDaemonSetPod(p) || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	c := metav1.GetControllerOf(p)
	return c == nil || c.Kind != "Node"
}

// hasLocalStorage reports whether the pod uses node-local storage, as the Cluster Autoscaler
// counts it: a hostPath volume or an emptyDir not in memory.
func hasLocalStorage(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil || v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
			return true
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true // a node without conditions (a hand-written snapshot) is taken as Ready
}

// policyPool returns the policy's pool of that name, or nil.
func policyPool(pol *policy.CostPolicy, name string) *policy.Pool {
	for i := range pol.Pools {
		if pol.Pools[i].Name == name && name != "" {
			return &pol.Pools[i]
		}
	}
	return nil
}

// poolHasGPUs reports whether the pool may buy a type with GPUs (remembered per pool): what
// decides its default consolidateAfter.
func (d *disruptor) poolHasGPUs(pl *policy.Pool) bool {
	if v, ok := d.gpuPools[pl.Name]; ok {
		return v
	}
	v := false
	pi := &poolInfo{Pool: pl}
	reqs, err := poolRequirements(pi)
	for ti := 0; err == nil && ti < len(d.in.Catalog.Types) && !v; ti++ {
		it := &d.in.Catalog.Types[ti]
		if it.GPU.Count == 0 {
			continue
		}
		for _, o := range it.Offerings {
			node := &corev1.Node{}
			node.Labels = offeringLabels(d.in.Catalog, pi, it, o.Zone, o.CapacityType)
			if ok, _ := reqs.Match(node); ok && poolAllows(pi, it, o) {
				v = true
				break
			}
		}
	}
	d.gpuPools[pl.Name] = v
	return v
}

// nodeType returns the node's GPU count, offering and catalog price (0 when unknown).
func (d *disruptor) nodeType(n *corev1.Node) (int, api.Offering, float64) {
	np := priceNode(d.types, d.in.Catalog, n)
	return np.gpus, np.offering, np.price
}

// gpuModel returns the node's GPU count, model and per-GPU memory for utilisation.
func (d *disruptor) gpuModel(n *corev1.Node) (int, string, int64) {
	np := priceNode(d.types, d.in.Catalog, n)
	return d.byName[n.Name].gpus, np.model, np.memMiB
}

// typesByLabel indexes the catalog's types by the label form of their names (CatalogTypeOf).
func typesByLabel(cat *catalog.Catalog) map[string]*catalog.InstanceType {
	out := make(map[string]*catalog.InstanceType, len(cat.Types))
	for i := range cat.Types {
		out[catalogTypeLabel(cat.Types[i].Name)] = &cat.Types[i]
	}
	return out
}

// buildPDBs reads the snapshot's PodDisruptionBudgets. A budget whose selector does not parse
// selects nothing, with a warning.
func (d *disruptor) buildPDBs(snap *snapshot.Snapshot) {
	for _, b := range snap.PodDisruptionBudgets {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			d.warnings = append(d.warnings, fmt.Sprintf("PodDisruptionBudget %s/%s: %v; ignored", b.Namespace, b.Name, err))
			continue
		}
		if b.Spec.Selector == nil {
			sel = labels.Nothing()
		}
		d.pdbs = append(d.pdbs, &pdbInfo{key: b.Namespace + "/" + b.Name, ns: b.Namespace, sel: sel, allowed: b.Status.DisruptionsAllowed})
	}
}

// keepGangs keeps the nodes of gangs that cannot move whole: a gang moves only when every member
// runs on a node that may be disrupted (a pending member, or one on a kept node, pins the rest),
// until no more nodes are kept.
func (d *disruptor) keepGangs() {
	members := map[string][]*corev1.Pod{}
	var keys []string
	for _, p := range d.in.Snapshot.Pods {
		name, _, _ := d.groups.gangOf(p)
		if name == "" || !(snapshot.IsPending(p) || snapshot.IsActive(p) && movesWithNode(p)) {
			continue
		}
		key := p.Namespace + "/" + name
		if members[key] == nil {
			keys = append(keys, key)
		}
		members[key] = append(members[key], p)
	}
	sort.Strings(keys)
	for changed := true; changed; {
		changed = false
		for _, key := range keys {
			stuck := ""
			for _, p := range members[key] {
				// A member left behind on a node that goes whatever happens (urgent) cannot move
				// either; the node itself goes nonetheless.
				if f := d.byName[p.Spec.NodeName]; f == nil || f.keep != nil || f.urgent() && slices.Contains(f.behind, podKey(p)) {
					stuck = podKey(p)
					break
				}
			}
			if stuck == "" {
				continue
			}
			for _, p := range members[key] {
				if f := d.byName[p.Spec.NodeName]; f != nil && f.keep == nil && !f.urgent() {
					f.keep = &api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: api.KeepGang,
						Message: fmt.Sprintf("gang %s moves whole or not at all, and its member %s cannot move", key, stuck)}
					changed = true
				}
			}
		}
	}
}
