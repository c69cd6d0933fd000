package replay

import (
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// Bound is the clairvoyant bound of a workload: the integral over the window of a lower bound on
// the $/h of holding the pods alive at each instant, with no boot delay, no packing constraint
// beyond the LP relaxation and full knowledge of the future. No policy can cost less.
type Bound struct {
	// Cost is the integral, in $.
	Cost float64 `json:"cost"`
	// Intervals is the number of intervals between arrivals and departures it was computed on.
	Intervals int `json:"intervals"`
	// Unplaceable are the pods no offering of the catalog can hold (left out of the bound).
	Unplaceable []string `json:"unplaceable,omitempty"`
	// Series is the bound's $/h at the start of each interval.
	Series []BoundSample `json:"series"`
}

// BoundSample is the bound's $/h from At on.
type BoundSample struct {
	At          time.Duration `json:"at"`
	CostPerHour float64       `json:"costPerHour"`
}

// boundPolicy is the policy the bound is computed under: every type of the catalog at the given
// capacity types, CPU types in one pool and GPU types in one time-sliced pool whose GPUs count
// SharedReplicas units each. Every pod asks its GPU demand in those units (⌈GPUs×1000/100⌉), so
// that the nodes of any policy's fleet (whole GPUs or shared, any type) are, as time-sliced nodes
// of the same types, a solution of the bound's problem at the same price: the bound is below
// every policy.
func boundPolicy(capacity []api.CapacityType) *policy.CostPolicy {
	if len(capacity) == 0 {
		capacity = []api.CapacityType{api.OnDemand}
	}
	noGPU := []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}}
	gpu := []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpExists}}
	return &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{
		{Name: "cpu", CapacityTypes: capacity, Requirements: noGPU},
		{Name: "gpu", CapacityTypes: capacity, Requirements: gpu, Taints: []corev1.Taint{policy.DefaultGPUTaint},
			GPU: &policy.GPUPolicy{Sharing: api.TimeSlicing, Replicas: SharedReplicas, RenameShared: true}},
	}}
}

// boundPod is the pod as the bound asks for it: its whole GPU demand in shared units, and no gang
// (all or nothing only constrains a fleet, so the bound without it is still below every policy).
func boundPod(p *Pod, created metav1.Time) *corev1.Pod {
	q := *p
	q.Gang = ""
	if q.NumGPUs > 0 {
		// ⌈GPUs×1000/100⌉ units: one pod of q.NumGPUs×q.GPUMilli milli-GPU on one "GPU" of the
		// shared resource, which the LP only sums.
		q.GPUMilli = int64(q.NumGPUs) * q.GPUMilli
		q.NumGPUs = 1
	}
	o := podObject(&q, true, created)
	if q.NumGPUs > 0 && q.GPUMilli >= 1000 {
		per := int64(1000 / SharedReplicas)
		units := (q.GPUMilli + per - 1) / per
		req := o.Spec.Containers[0].Resources.Requests
		delete(req, api.ResourceGPU)
		req[api.ResourceGPUShared] = *resource.NewQuantity(units, resource.DecimalSI)
		o.Spec.Containers[0].Resources.Limits = gpuLimits(req)
	}
	return o
}

// ClairvoyantBound integrates, between consecutive arrivals and departures (where the set of
// live pods is constant), the simulator's proven lower bound (Plan.LowerBoundPerHour) on the $/h
// of any set of nodes holding the live pods, bought from the catalog at cfg.CapacityTypes.
func ClairvoyantBound(wl *Workload, cfg Config) (*Bound, error) {
	if err := wl.Validate(); err != nil {
		return nil, err
	}
	if cfg.Catalog == nil {
		return nil, fmt.Errorf("catalog is required")
	}
	pol := boundPolicy(cfg.CapacityTypes)
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("bound policy: %w", err)
	}
	cuts := map[time.Duration]bool{0: true, wl.Length: true}
	for _, p := range wl.Pods {
		cuts[p.Arrive], cuts[p.Depart] = true, true
	}
	times := make([]time.Duration, 0, len(cuts))
	for t := range cuts {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	objs := make([]*corev1.Pod, len(wl.Pods))
	for i := range wl.Pods {
		objs[i] = boundPod(&wl.Pods[i], metav1.NewTime(wl.Start.Add(wl.Pods[i].Arrive)))
	}
	b := &Bound{}
	unplaceable := map[string]bool{}
	prog := newProgress(cfg, PolicyClairvoyant, wl.Length)
	for i := 0; i+1 < len(times); i++ {
		from, to := times[i], times[i+1]
		prog.at(from)
		snap := &snapshot.Snapshot{Now: wl.Start.Add(from)}
		for j := range wl.Pods {
			if p := &wl.Pods[j]; p.Arrive <= from && p.Depart > from {
				snap.Pods = append(snap.Pods, objs[j])
			}
		}
		rate := 0.0
		if len(snap.Pods) > 0 {
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cfg.Catalog, Policy: pol,
				Options: simulator.Options{Now: snap.Now, Seed: "bound"}})
			if err != nil {
				return nil, fmt.Errorf("bound at %s: %w", from, err)
			}
			rate = plan.LowerBoundPerHour
			for _, u := range plan.Unschedulable {
				unplaceable[u.Pod] = true
			}
		}
		b.Intervals++
		b.Cost += rate * (to - from).Hours()
		b.Series = append(b.Series, BoundSample{At: from, CostPerHour: rate})
	}
	for p := range unplaceable {
		b.Unplaceable = append(b.Unplaceable, p)
	}
	sort.Strings(b.Unplaceable)
	return b, nil
}
