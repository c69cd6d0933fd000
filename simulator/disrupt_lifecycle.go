package simulator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// The node-lifecycle half of the disruption plan: which nodes must go whatever they cost — the
// interrupted, the unhealthy, the expired and the drifted — decided from the snapshot, the policy
// and Now alone. disrupt_forced.go turns them into actions.

// forced is why a node must go.
type forced struct {
	reason  api.DisruptionReason
	message string
	// deadline is when the cloud reclaims an interrupted node.
	deadline *time.Time
	// grace is the pool's terminationGracePeriod when it lets the node go past PodDisruptionBudgets
	// and do-not-disrupt pods (forcedKeep), and held says which of them hold its pods.
	grace time.Duration
	held  []string
}

// forcible reports whether the node goes although PodDisruptionBudgets or do-not-disrupt pods
// would keep it, its drain waiting for them at most the grace period.
func (x *forced) forcible() bool { return x.grace > 0 }

// graceFor is the terminationGracePeriod that lets a node of pool pl due for reason go past
// PodDisruptionBudgets and do-not-disrupt pods: the pool's, for Drifted, Expired,
// ReservationEnding and Unhealthy; 0 for none. An unhealthy node is planned whatever holds its
// pods, but on one still Ready its drain honours them as long as it lasts (its do-not-disrupt pods
// stay, its refused evictions are retried): the period bounds that too, so that a pod that never
// ends does not keep a broken node and its replacement both paid for. An interrupted node needs
// none (the cloud takes it), and consolidation never forces.
func graceFor(pl *policy.Pool, reason api.DisruptionReason, orphan bool) time.Duration {
	switch reason {
	case api.ReasonDrifted, api.ReasonExpired, api.ReasonReservationEnding, api.ReasonUnhealthy:
	default:
		return 0
	}
	if orphan {
		return 0 // its pool is gone from the policy, and its settings with it
	}
	g, _ := pl.TerminationGracePeriodOf()
	return g
}

// urgent reports whether the node goes whether Tiler acts or not (broken or reclaimed): then
// do-not-disrupt annotations, cordons and PodDisruptionBudgets do not keep it — its pods are lost
// with it anyway, and moving them first is the kindest thing left to do.
func (x *forced) urgent() bool {
	return x.reason == api.ReasonUnhealthy || x.reason == api.ReasonInterrupted
}

// forcedRank orders the reasons, most urgent first: an interrupted node has minutes, a broken one
// serves nothing, one whose reservation ends has until the end, an expired or drifted one can
// wait for the budget.
func forcedRank(r api.DisruptionReason) int {
	switch r {
	case api.ReasonInterrupted:
		return 0
	case api.ReasonUnhealthy:
		return 1
	case api.ReasonReservationEnding:
		return 2
	case api.ReasonExpired:
		return 3
	}
	return 4
}

// detectForced decides whether a managed node must go, and why (the most urgent reason wins); it
// also records the node's health signals for the plan's unhealthy list.
func (d *disruptor) detectForced(f *nodeFacts) {
	n := f.node
	if deadline, ok := d.in.Options.Interrupted[n.Name]; ok {
		dl := deadline
		f.forced = &forced{reason: api.ReasonInterrupted, deadline: &dl,
			message: fmt.Sprintf("interrupted: the cloud reclaims the node at %s", deadline.UTC().Format(time.RFC3339))}
		if !deadline.IsZero() && deadline.After(d.now) {
			f.forced.message += fmt.Sprintf(" (in %s)", deadline.Sub(d.now).Round(time.Second))
		}
	}
	f.health = d.healthSignals(f)
	if f.forced == nil {
		var due []string
		for _, h := range f.health {
			if h.Due {
				due = append(due, h.Message)
			}
		}
		if len(due) > 0 {
			f.forced = &forced{reason: api.ReasonUnhealthy, message: "unhealthy: " + strings.Join(due, "; ")}
		}
	}
	if f.forced == nil && !f.orphan {
		f.forced = d.reservationEnding(f)
	}
	if f.forced == nil && !f.orphan {
		if after, ok := f.pol.ExpireAfterOf(); ok && !n.CreationTimestamp.IsZero() {
			if age := d.now.Sub(n.CreationTimestamp.Time); age >= after {
				f.forced = &forced{reason: api.ReasonExpired,
					message: fmt.Sprintf("expired: created %s ago, pool %s's expireAfter is %s", age.Round(time.Second), f.pol.Name, after)}
			}
		}
	}
	if f.forced == nil {
		if drift := d.driftOf(f); len(drift) > 0 {
			f.forced = &forced{reason: api.ReasonDrifted, message: "drifted: " + strings.Join(drift, "; ")}
		}
	}
}

// reservationEnding returns why the node must go when it runs on one of its pool's reservations
// (api.LabelCapacityReservation) whose drainBefore has begun; nil otherwise.
func (d *disruptor) reservationEnding(f *nodeFacts) *forced {
	id := f.node.Labels[api.LabelCapacityReservation]
	if id == "" {
		return nil
	}
	for i := range f.pol.Reservations {
		r := &f.pol.Reservations[i]
		from, ends := r.DrainFrom()
		if r.ID != id || !ends || d.now.Before(from) {
			continue
		}
		end := r.EndsAt.Time
		return &forced{reason: api.ReasonReservationEnding, deadline: &end,
			message: fmt.Sprintf("capacity reservation %s ends at %s (in %s); its nodes are replaced from %s", id,
				end.UTC().Format(time.RFC3339), end.Sub(d.now).Round(time.Second), from.UTC().Format(time.RFC3339))}
	}
	return nil
}

// driftOf lists how the node no longer matches its pool: what a node bought from the pool now
// would have that it lacks. Labels and taints the pool does not set (the controller's, the
// cluster's) are not compared; settings a node cannot show (labels or taints the pool stopped
// setting) are caught by api.AnnotationPoolHash on nodes that carry it.
func (d *disruptor) driftOf(f *nodeFacts) []string {
	n, pl := f.node, f.pol
	if f.orphan {
		return []string{fmt.Sprintf("its pool %s is no longer in the policy", pl.Name)}
	}
	var out []string
	typ := CatalogTypeOf(n.Labels)
	it := d.types[typ]
	name := api.InstanceTypeName(typ)
	if it != nil {
		name = it.Name
	}
	zone, ct := n.Labels[LabelZone], api.CapacityType(n.Labels[api.LabelCapacityType])
	switch {
	case len(pl.InstanceTypes) > 0 && !slices.Contains(pl.InstanceTypes, name):
		out = append(out, fmt.Sprintf("instance type %s is not in instanceTypes %v", name, pl.InstanceTypes))
	case len(pl.InstanceFamilies) > 0 && !slices.Contains(pl.InstanceFamilies, family(name)):
		out = append(out, fmt.Sprintf("instance family %s is not in instanceFamilies %v", family(name), pl.InstanceFamilies))
	}
	if zone != "" && len(pl.Zones) > 0 && !slices.Contains(pl.Zones, zone) {
		out = append(out, fmt.Sprintf("zone %s is not in zones %v", zone, pl.Zones))
	}
	if ct != "" && !pl.AllowsCapacityType(ct) {
		out = append(out, fmt.Sprintf("capacity type %s is not in capacityTypes %v", ct, pl.CapacityTypes))
	}
	if it != nil && pl.Limits.MaxGPUs != nil && *pl.Limits.MaxGPUs < it.GPU.Count {
		out = append(out, fmt.Sprintf("%d GPUs exceed limits.maxGPUs %d", it.GPU.Count, *pl.Limits.MaxGPUs))
	}
	if len(pl.Requirements) > 0 {
		// The requirements select offerings by the labels a node of the offering carries; the
		// catalog type's labels are those, whatever the node's own labels lack.
		probe := n
		if it != nil {
			probe = &corev1.Node{}
			probe.Labels = offeringLabels(d.in.Catalog, &poolInfo{Pool: pl}, it, zone, ct)
		}
		if reqs, err := poolRequirements(&poolInfo{Pool: pl}); err == nil {
			if ok, _ := reqs.Match(probe); !ok {
				out = append(out, "the pool's requirements exclude it")
			}
		}
	}
	out = append(out, missingLabelsAndTaints(n, pl)...)
	out = append(out, d.gpuDrift(f, it)...)
	img := d.in.Options.Images[n.Name]
	if img.drifted() {
		out = append(out, fmt.Sprintf("booted from image %s; its nodes now boot from %s", img.Booted, img.Now))
	}
	if img.settingsDrifted() {
		out = append(out, fmt.Sprintf("launched with settings %s; its nodes now launch with %s (network, security groups, identity or bootstrap changed)", img.Settings, img.SettingsNow))
	}
	if h, ok := n.Annotations[api.AnnotationPoolHash]; ok && h != d.poolHash(pl) {
		out = append(out, fmt.Sprintf("%s %s differs from the pool's %s (its labels, taints or GPU settings changed)", api.AnnotationPoolHash, h, d.poolHash(pl)))
	}
	return out
}

// poolHash returns policy.PoolHash of the pool, computed once per decision.
func (d *disruptor) poolHash(pl *policy.Pool) string {
	h, ok := d.hashes[pl.Name]
	if !ok {
		h = policy.PoolHash(pl)
		d.hashes[pl.Name] = h
	}
	return h
}

// missingLabelsAndTaints lists the pool's labels and taints the node lacks.
func missingLabelsAndTaints(n *corev1.Node, pl *policy.Pool) []string {
	var out []string
	keys := make([]string, 0, len(pl.Labels))
	for k := range pl.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := n.Labels[k]; !ok {
			out = append(out, fmt.Sprintf("label %s=%s is missing", k, pl.Labels[k]))
		} else if v != pl.Labels[k] {
			out = append(out, fmt.Sprintf("label %s is %q, the pool sets %q", k, v, pl.Labels[k]))
		}
	}
	for _, t := range pl.Taints {
		if !slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool {
			return x.Key == t.Key && x.Value == t.Value && x.Effect == t.Effect
		}) {
			out = append(out, fmt.Sprintf("taint %s=%s:%s is missing", t.Key, t.Value, t.Effect))
		}
	}
	return out
}

// gpuExposure is how a node's GPUs are handed out, as far as its labels (else its advertised
// resources) show: the device plugin's whole GPUs, replicas (time-slicing, MPS), static MIG, or
// the DRA driver alone.
type gpuExposure struct {
	class string // "whole", "replicas", "mig", "dra"; "" when nothing shows it
	// eitherDriver (wanted only): whole GPUs from the device plugin or the DRA driver alone both
	// match, as a pool without gpu.driver buys either.
	eitherDriver bool
	sharing      api.Sharing
	replicas     int
	strategy     string
}

// exposureOf reads a node's GPU exposure from the GPU operator's labels Tiler sets at launch
// (nvidia.com/gpu.deploy.device-plugin, nvidia.com/mig.config, nvidia.com/gpu.replicas and the
// sharing strategy), and for nodes without them (launched by older versions, written by hand)
// from the resources the device plugin advertises. Nothing advertised yet says nothing.
func exposureOf(n *corev1.Node, gpus int) gpuExposure {
	l := n.Labels
	switch {
	case l[api.LabelDeployDevicePlugin] == "false":
		return gpuExposure{class: "dra"}
	case l[api.LabelMIGConfig] != "":
		return gpuExposure{class: "mig", strategy: l[api.LabelMIGStrategy]}
	case l[api.LabelGPUReplicas] != "":
		k, _ := strconv.Atoi(l[api.LabelGPUReplicas])
		return gpuExposure{class: "replicas", replicas: k, sharing: api.Sharing(l[api.LabelSharingStrategy])}
	}
	a := n.Status.Allocatable
	for name := range a {
		if _, ok := mig.ParseResourceName(string(name)); ok {
			return gpuExposure{class: "mig"}
		}
	}
	if q, ok := a[api.ResourceGPUShared]; ok && gpus > 0 {
		return gpuExposure{class: "replicas", replicas: int(q.Value()) / gpus}
	}
	if q, ok := a[api.ResourceGPU]; ok && gpus > 0 {
		if int(q.Value()) > gpus {
			return gpuExposure{class: "replicas", replicas: int(q.Value()) / gpus}
		}
		return gpuExposure{class: "whole"}
	}
	return gpuExposure{}
}

// wantedExposure is how the pool exposes the GPUs of a node it buys now (deviceVariants).
func wantedExposure(pl *policy.Pool) gpuExposure {
	g := pl.GPU
	if g == nil {
		return gpuExposure{class: "whole", sharing: api.Exclusive, eitherDriver: true}
	}
	switch g.Sharing {
	case "", api.Exclusive:
		switch {
		case g.ConsumableMemory || g.Driver == policy.DriverDRA:
			return gpuExposure{class: "dra", sharing: api.Exclusive}
		case g.Driver == policy.DriverDevicePlugin:
			return gpuExposure{class: "whole", sharing: api.Exclusive}
		}
		return gpuExposure{class: "whole", sharing: api.Exclusive, eitherDriver: true}
	case api.DynamicMIG:
		return gpuExposure{class: "dra", sharing: api.DynamicMIG}
	case api.TimeSlicing, api.MPS:
		k := g.Replicas
		if k == 0 {
			k = policy.DefaultReplicas
		}
		return gpuExposure{class: "replicas", sharing: g.Sharing, replicas: k}
	}
	strategy := g.MIGStrategy
	if strategy == "" {
		strategy = "mixed"
	}
	return gpuExposure{class: "mig", sharing: api.MIG, strategy: strategy}
}

// gpuDrift compares a GPU node's exposure with the pool's: the sharing mode, the replica count,
// the MIG strategy and, when the pool restricts them, every GPU's MIG layout.
func (d *disruptor) gpuDrift(f *nodeFacts, it *catalog.InstanceType) []string {
	if it == nil || it.GPU.Count == 0 {
		return nil
	}
	have, want := exposureOf(f.node, it.GPU.Count), wantedExposure(f.pol)
	switch {
	case have.class == "", want.eitherDriver && (have.class == "whole" || have.class == "dra"):
		return nil
	case have.class != want.class:
		return []string{fmt.Sprintf("its GPUs are exposed as %s, the pool's gpu settings (%s) as %s", have.class, want.sharing, want.class)}
	case have.class == "replicas" && have.sharing != "" && have.sharing != want.sharing:
		return []string{fmt.Sprintf("GPU sharing is %s, the pool's is %s", have.sharing, want.sharing)}
	case have.class == "replicas" && have.replicas > 0 && have.replicas != want.replicas:
		return []string{fmt.Sprintf("%d replicas per GPU, the pool's are %d", have.replicas, want.replicas)}
	case have.class == "mig" && have.strategy != "" && have.strategy != want.strategy:
		return []string{fmt.Sprintf("MIG strategy %s, the pool's is %s", have.strategy, want.strategy)}
	case have.class == "mig" && len(f.pol.GPU.MIGLayouts) > 0:
		return d.layoutDrift(f, it)
	}
	return nil
}

// layoutDrift names the GPUs whose MIG layout is not among the pool's migLayouts. A node whose
// nvidia.com/mig.config names no layout it can read is not judged.
func (d *disruptor) layoutDrift(f *nodeFacts, it *catalog.InstanceType) []string {
	tab, err := loadMIG()
	if err != nil {
		return nil
	}
	m, ok := tab.Model(it.GPU.Model)
	if !ok {
		return nil
	}
	perGPU, err := m.ParseConfigName(f.node.Labels[api.LabelMIGConfig], it.GPU.Count)
	if err != nil {
		return nil
	}
	var allowed []mig.Layout
	for _, spec := range f.pol.GPU.MIGLayouts {
		ls, err := mig.ParseLayoutSpec(m, spec)
		if err != nil {
			return nil // the policy names layouts another model has; nothing to judge by
		}
		allowed = append(allowed, ls...)
	}
	for i, l := range perGPU {
		if !slices.ContainsFunc(allowed, func(a mig.Layout) bool { return slices.Equal(a.Profiles, l.Profiles) }) {
			return []string{fmt.Sprintf("GPU %d's MIG layout %s is not in migLayouts %v", i, m.LayoutName(l), f.pol.GPU.MIGLayouts)}
		}
	}
	return nil
}

// healthSignals returns the node's health signals, each due or still in its grace period: GPUs
// missing from allocatable (grace from api.AnnotationUnhealthySince), tainted DRA devices and
// repair conditions (due at once), not Ready (grace from the Ready condition's last transition).
func (d *disruptor) healthSignals(f *nodeFacts) []api.UnhealthyNode {
	n := f.node
	r := f.pol.RepairOf()
	var out []api.UnhealthyNode
	add := func(sig api.HealthSignal, due bool, format string, a ...any) {
		out = append(out, api.UnhealthyNode{Name: n.Name, Pool: f.pol.Name, Signal: sig, Due: due, Message: fmt.Sprintf(format, a...)})
	}
	if missing := missingGPUs(n); missing != "" {
		since, known := d.unhealthySince(n)
		switch {
		case d.in.Options.IgnoreCandidateWait:
			add(api.SignalGPUsMissing, true, "%s (the grace period is not waited for)", missing)
		case !known:
			add(api.SignalGPUsMissing, r.GracePeriod <= 0, "%s; the repair grace period (%s) starts when %s is set", missing, r.GracePeriod, api.AnnotationUnhealthySince)
		default:
			elapsed := d.now.Sub(since)
			add(api.SignalGPUsMissing, elapsed >= r.GracePeriod, "%s for %s (gracePeriod %s)", missing, elapsed.Round(time.Second), r.GracePeriod)
		}
	}
	for _, t := range d.deviceTaints[n.Name] {
		add(api.SignalDeviceTainted, true, "%s", t)
	}
	for _, c := range n.Status.Conditions {
		for _, want := range r.Conditions {
			if c.Type == want.Type && c.Status == want.Status {
				add(api.SignalCondition, true, "condition %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		if c.LastTransitionTime.IsZero() {
			add(api.SignalNotReady, false, "Ready is %s since an unknown time (no lastTransitionTime)", c.Status)
			continue
		}
		elapsed := d.now.Sub(c.LastTransitionTime.Time)
		add(api.SignalNotReady, elapsed >= r.NotReadyGracePeriod, "Ready is %s for %s (notReadyGracePeriod %s)", c.Status, elapsed.Round(time.Second), r.NotReadyGracePeriod)
	}
	return out
}

// unhealthySince reads api.AnnotationUnhealthySince; an unreadable value is a warning and unknown.
func (d *disruptor) unhealthySince(n *corev1.Node) (time.Time, bool) {
	v, ok := n.Annotations[api.AnnotationUnhealthySince]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		d.warnings = append(d.warnings, fmt.Sprintf("node %s: %s %q is not an RFC 3339 time; ignored", n.Name, api.AnnotationUnhealthySince, v))
		return time.Time{}, false
	}
	return t, true
}

// missingGPUs describes the GPU resources whose allocatable is below capacity ("" when none): the
// device plugin keeps an unhealthy device in capacity and takes it out of allocatable. A node
// whose MIG manager is applying a new layout withdraws its devices on purpose and is not judged.
func missingGPUs(n *corev1.Node) string {
	if n.Labels[api.LabelMIGConfigState] == api.MIGConfigPending {
		return ""
	}
	var parts []string
	for name, c := range n.Status.Capacity {
		s := string(name)
		if name != api.ResourceGPU && name != api.ResourceGPUShared && !strings.HasPrefix(s, "nvidia.com/mig-") {
			continue
		}
		a := n.Status.Allocatable[name]
		if a.Cmp(c) < 0 {
			parts = append(parts, fmt.Sprintf("%s %s allocatable of %s", s, a.String(), c.String()))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// indexDeviceTaints lists, per node, the devices of its ResourceSlices that carry a NoSchedule or
// NoExecute taint (effect None and unknown effects are informational, as the API says).
func indexDeviceTaints(slices []*resourcev1.ResourceSlice) map[string][]string {
	out := map[string][]string{}
	for _, s := range slices {
		if s.Spec.NodeName == nil {
			continue
		}
		for _, dev := range s.Spec.Devices {
			for _, t := range dev.Taints {
				if t.Effect != resourcev1.DeviceTaintEffectNoSchedule && t.Effect != resourcev1.DeviceTaintEffectNoExecute {
					continue
				}
				out[*s.Spec.NodeName] = append(out[*s.Spec.NodeName],
					fmt.Sprintf("device %s/%s is tainted %s=%s:%s", s.Spec.Driver, dev.Name, t.Key, t.Value, t.Effect))
			}
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}
