package simulator

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Preemption: a pending pod that kube-scheduler would place on an existing node by evicting
// lower-priority pods there is not bought for. The plan records the preemption (api.Preemption)
// and plans the victims like pending pods: on free room, on new nodes, or unschedulable.
//
// The rule follows the scheduler's DefaultPreemption plugin (pkg/scheduler/framework/plugins/
// defaultpreemption and framework/preemption of kubernetes v1.37):
//   - only a pod the plan could not put on existing or in-flight capacity preempts (the
//     scheduler's PostFilter runs after Filter found no node), and not when its
//     preemptionPolicy is Never;
//   - on each existing node the pod's node selection and taints admit, every pod of lower
//     priority is a potential victim; the node is a candidate when the preemptor fits with all
//     of them gone;
//   - victims are then reprieved one by one, most important first (higher priority, then earlier
//     start), those whose eviction a PodDisruptionBudget does not allow before the others: a pod
//     that fits back with the preemptor stays;
//   - the node is chosen by, in order: fewest PDB violations, lowest highest-victim priority,
//     lowest sum of victim priorities, fewest victims, latest start of the most important
//     victim, then node name (the scheduler samples nodes at random where this takes the first).
//
// Pending pods with priority at least the preemptor's that the plan puts on a node count there:
// the scheduler binds them first. Placeholder pods (api.LabelPlaceholder) are not in the
// simulation at all (withoutPlaceholders), so their room is free and they are never victims.
//
// Not modelled (such pods are bought for as before): preemptors with required pod (anti-)
// affinity, DoNotSchedule topology spread, host ports, DRA claims, or in a gang, and expected pods
// (forecast demand, which never reaches the scheduler); terminating and
// DaemonSet pods are never victims. Victims may preempt in turn, for up to maxPreemptionRounds.

// maxPreemptionRounds bounds the re-simulations: each round's victims, now pending, may preempt
// lower-priority pods elsewhere.
const maxPreemptionRounds = 4

// simulateOnce is one simulation of all the snapshot's pending pods, with the preemptions the
// scheduler would make instead of a purchase.
func simulateOnce(in Input) (*api.Plan, error) {
	plan, err := simulatePlain(in)
	if err != nil || in.Options.NoPreemption || !mayPreempt(in.Snapshot) {
		return plan, err
	}
	var all []api.Preemption
	pinned := map[string]bool{}
	snap := in.Snapshot
	for round := 0; round < maxPreemptionRounds; round++ {
		pre := planPreemptions(snap, plan, pinned)
		if len(pre) == 0 {
			break
		}
		all = append(all, pre...)
		snap = applyPreemptions(snap, pre)
		for _, p := range pre {
			pinned[p.Pod] = true
		}
		next := in
		next.Snapshot = snap
		if plan, err = simulatePlain(next); err != nil {
			return nil, err
		}
	}
	if len(all) == 0 {
		return plan, nil
	}
	plan.Preemptions = all
	for _, p := range all {
		i := sort.Search(len(plan.ExistingNodes), func(i int) bool { return plan.ExistingNodes[i].Name >= p.Node })
		if i == len(plan.ExistingNodes) || plan.ExistingNodes[i].Name != p.Node {
			plan.ExistingNodes = append(plan.ExistingNodes, api.ExistingNode{})
			copy(plan.ExistingNodes[i+1:], plan.ExistingNodes[i:])
			plan.ExistingNodes[i] = api.ExistingNode{Name: p.Node}
		}
		plan.ExistingNodes[i].Pods = append(plan.ExistingNodes[i].Pods, p.Pod)
	}
	return plan, nil
}

// mayPreempt reports, cheaply, whether some pending pod that may preempt has a higher priority
// than some running pod.
func mayPreempt(snap *snapshot.Snapshot) bool {
	prio := priorityClasses(snap)
	lowest, highest := int32(math.MaxInt32), int32(math.MinInt32)
	for _, p := range snap.Pods {
		if isPlaceholder(p) {
			continue
		}
		pr := podPriority(p, prio)
		switch {
		case snapshot.IsActive(p) && p.DeletionTimestamp == nil && !snapshot.IsDaemonSetPod(p):
			lowest = min(lowest, pr)
		case snapshot.IsPending(p) && !neverPreempts(p):
			highest = max(highest, pr)
		}
	}
	return highest > lowest
}

func isPlaceholder(p *corev1.Pod) bool { _, ok := p.Labels[api.LabelPlaceholder]; return ok }

func neverPreempts(p *corev1.Pod) bool {
	return p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == corev1.PreemptNever
}

// preemptionModelled reports whether the preemption rule covers the pod (see the package note
// above); the others are planned without preemption.
func preemptionModelled(p *corev1.Pod) string {
	switch {
	case neverPreempts(p):
		return "preemptionPolicy Never"
	case p.Labels[api.LabelForecastDemand] != "":
		return "forecast demand" // virtual: never reaches the scheduler, so capacity is bought for it
	case len(p.Spec.ResourceClaims) > 0:
		return "DRA claims"
	case p.Labels[api.LabelGang] != "" || p.Spec.SchedulingGroup != nil:
		return "gang"
	case len(podHostPorts(p)) > 0:
		return "host ports"
	}
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0) {
		return "pod affinity"
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return "topology spread"
		}
	}
	return ""
}

// preemptNode is an existing node during the preemption search.
type preemptNode struct {
	node  *corev1.Node
	alloc corev1.ResourceList
	// pods are the active pods on the node with their priority; victims of this round are gone.
	pods []preemptPod
	// planned are pending pods the plan put on the node, with their priority.
	planned []preemptPod
}

type preemptPod struct {
	pod      *corev1.Pod
	key      string
	priority int32
	req      corev1.ResourceList
}

// planPreemptions finds, for the pods plan bought for or could not place, the preemptions the
// scheduler would make, highest priority first (then snapshot order, the scheduler's queue
// order). pinned are pods that preempted in an earlier round: never victims.
func planPreemptions(snap *snapshot.Snapshot, plan *api.Plan, pinned map[string]bool) []api.Preemption {
	snap = withoutPlaceholders(snap)
	prio := priorityClasses(snap)
	wants := map[string]bool{}
	for _, n := range plan.NewNodes {
		for _, k := range n.Pods {
			wants[k] = true
		}
	}
	for _, u := range plan.Unschedulable {
		switch u.Code {
		case api.NeverFits, api.LimitExceeded, api.TeamLimitExceeded:
			wants[u.Pod] = true
		}
	}
	if len(wants) == 0 {
		return nil
	}
	plannedOn := map[string]string{}
	for _, n := range plan.ExistingNodes {
		for _, k := range n.Pods {
			plannedOn[k] = n.Name
		}
	}
	nodes := map[string]*preemptNode{}
	var order []*preemptNode
	for _, n := range snap.Nodes {
		pn := &preemptNode{node: n, alloc: n.Status.Allocatable}
		nodes[n.Name] = pn
		order = append(order, pn)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].node.Name < order[j].node.Name })
	var preemptors []preemptPod
	for _, p := range snap.Pods {
		pp := preemptPod{pod: p, key: podKey(p), priority: podPriority(p, prio)}
		switch {
		case snapshot.IsActive(p):
			if pn := nodes[p.Spec.NodeName]; pn != nil {
				pp.req = podRequests(p)
				pn.pods = append(pn.pods, pp)
			}
		case !snapshot.IsPending(p):
		case wants[pp.key] && preemptionModelled(p) == "":
			pp.req = podRequests(p)
			preemptors = append(preemptors, pp)
		case plannedOn[pp.key] != "":
			if pn := nodes[plannedOn[pp.key]]; pn != nil {
				pp.req = podRequests(p)
				pn.planned = append(pn.planned, pp)
			}
		}
	}
	sort.SliceStable(preemptors, func(i, j int) bool { return preemptors[i].priority > preemptors[j].priority })
	pdbs := preemptionPDBs(snap)
	var out []api.Preemption
	for _, pp := range preemptors {
		var best *preemptCandidate
		for _, pn := range order {
			c := pn.candidate(pp, pdbs, pinned)
			if c != nil && (best == nil || c.better(best)) {
				best = c
			}
		}
		if best == nil {
			continue
		}
		victims := make([]string, len(best.victims))
		gone := map[string]bool{}
		for i, v := range best.victims {
			victims[i], gone[v.key] = v.key, true
			for _, b := range pdbs {
				if b.ns == v.pod.Namespace && b.sel.Matches(labels.Set(v.pod.Labels)) {
					b.allowed--
				}
			}
		}
		pn := best.node
		kept := pn.pods[:0]
		for _, q := range pn.pods {
			if !gone[q.key] {
				kept = append(kept, q)
			}
		}
		pn.pods = append(kept, pp)
		out = append(out, api.Preemption{Pod: pp.key, Priority: pp.priority, Node: pn.node.Name, Victims: victims,
			PDBViolations: best.violations, Reason: preemptionReason(pp, best)})
	}
	return out
}

// preemptionReason says why nothing is bought for the preemptor, as the unschedulable reasons do.
func preemptionReason(pp preemptPod, c *preemptCandidate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no free room on existing nodes, so kube-scheduler preempts %d lower-priority pod(s) on %s (priority %d > %d); nothing is bought for it",
		len(c.victims), c.node.node.Name, pp.priority, c.highest)
	if c.violations > 0 {
		fmt.Fprintf(&b, "; %d eviction(s) violate a PodDisruptionBudget (every node needs some)", c.violations)
	}
	return b.String()
}

// preemptCandidate is a node on which the preemptor fits once victims are evicted.
type preemptCandidate struct {
	node       *preemptNode
	victims    []preemptPod
	violations int
	highest    int32
	sum        int64
	start      metav1.Time // start of the most important victim
}

// better is the scheduler's pickOneNodeForPreemption order (ties: the node seen first).
func (c *preemptCandidate) better(o *preemptCandidate) bool {
	switch {
	case c.violations != o.violations:
		return c.violations < o.violations
	case c.highest != o.highest:
		return c.highest < o.highest
	case c.sum != o.sum:
		return c.sum < o.sum
	case len(c.victims) != len(o.victims):
		return len(c.victims) < len(o.victims)
	}
	return o.start.Before(&c.start)
}

// candidate returns the victims the preemptor needs on the node (nil when it cannot go there,
// or fits without evicting anything).
func (pn *preemptNode) candidate(pp preemptPod, pdbs []*pdbInfo, pinned map[string]bool) *preemptCandidate {
	if !podMatchesNode(pp.pod, pn.node) {
		return nil
	}
	var stay, potential []preemptPod
	for _, q := range pn.pods {
		if q.priority < pp.priority && q.pod.DeletionTimestamp == nil && !snapshot.IsDaemonSetPod(q.pod) && !pinned[q.key] {
			potential = append(potential, q)
		} else {
			stay = append(stay, q)
		}
	}
	for _, q := range pn.planned {
		if q.priority >= pp.priority {
			stay = append(stay, q)
		}
	}
	if len(potential) == 0 || !pn.fits(pp, stay) {
		return nil
	}
	if pn.fits(pp, append(stay, potential...)) {
		return nil // no preemption needed: the plan keeps it off for another reason
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i], potential[j]) })
	// The PodDisruptionBudgets' allowances as this node's evictions would use them.
	allowed := make([]int32, len(pdbs))
	for i, b := range pdbs {
		allowed[i] = b.allowed
	}
	var violating, other []preemptPod
	for _, q := range potential {
		violates := false
		for i, b := range pdbs {
			if b.ns == q.pod.Namespace && b.sel.Matches(labels.Set(q.pod.Labels)) {
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, q)
		} else {
			other = append(other, q)
		}
	}
	c := &preemptCandidate{node: pn}
	reprieve := func(q preemptPod) bool {
		if pn.fits(pp, append(stay, q)) {
			stay = append(stay, q)
			return true
		}
		c.victims = append(c.victims, q)
		return false
	}
	for _, q := range violating {
		if !reprieve(q) {
			c.violations++
		}
	}
	for _, q := range other {
		reprieve(q)
	}
	sort.SliceStable(c.victims, func(i, j int) bool { return moreImportant(c.victims[i], c.victims[j]) })
	c.highest = c.victims[0].priority
	c.start = startTime(c.victims[0].pod)
	for _, v := range c.victims {
		c.sum += int64(v.priority) + math.MaxInt32 + 1
	}
	return c
}

// fits reports whether the preemptor fits on the node next to the pods.
func (pn *preemptNode) fits(pp preemptPod, pods []preemptPod) bool {
	for name, q := range pp.req {
		if q.Sign() <= 0 {
			continue
		}
		alloc, ok := pn.alloc[name]
		if !ok && name == corev1.ResourcePods {
			continue // a node that states no pod capacity is not limited by it here
		}
		used := q.MilliValue()
		for _, o := range pods {
			if r, ok := o.req[name]; ok {
				used += r.MilliValue()
			}
		}
		if used > alloc.MilliValue() {
			return false
		}
	}
	return true
}

// moreImportant is the scheduler's MoreImportantPod: higher priority, then started earlier.
func moreImportant(a, b preemptPod) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	sa, sb := startTime(a.pod), startTime(b.pod)
	return sa.Before(&sb)
}

func startTime(p *corev1.Pod) metav1.Time {
	if p.Status.StartTime != nil {
		return *p.Status.StartTime
	}
	return p.CreationTimestamp
}

// preemptionPDBs reads the snapshot's PodDisruptionBudgets (an unparsable selector selects
// nothing; PlanDisruption warns about it).
func preemptionPDBs(snap *snapshot.Snapshot) []*pdbInfo {
	var out []*pdbInfo
	for _, b := range snap.PodDisruptionBudgets {
		if b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		out = append(out, &pdbInfo{key: b.Namespace + "/" + b.Name, ns: b.Namespace, sel: sel, allowed: b.Status.DisruptionsAllowed})
	}
	return out
}

// applyPreemptions returns the snapshot after the preemptions: each preemptor bound to its node,
// each victim pending again.
func applyPreemptions(snap *snapshot.Snapshot, pre []api.Preemption) *snapshot.Snapshot {
	bind, evict := map[string]string{}, map[string]bool{}
	for _, p := range pre {
		bind[p.Pod] = p.Node
		for _, v := range p.Victims {
			evict[v] = true
		}
	}
	out := *snap
	out.Pods = make([]*corev1.Pod, len(snap.Pods))
	for i, p := range snap.Pods {
		key := podKey(p)
		switch {
		case bind[key] != "":
			p = p.DeepCopy()
			p.Spec.NodeName = bind[key]
			p.Status.Phase = corev1.PodRunning
		case evict[key]:
			p = p.DeepCopy()
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}
		out.Pods[i] = p
	}
	return &out
}
