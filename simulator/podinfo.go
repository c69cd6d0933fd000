package simulator

import (
	"encoding/json"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Pod labels and annotations Tiler reads.
const ()

// podInfo is what the simulation precomputes about one pod.
type podInfo struct {
	pod      *corev1.Pod
	key      string // namespace/name
	req      vec
	priority int32
	// sig indexes the pod's node-selection signature (node selector, required node affinity,
	// tolerations): pods with the same signature are compatible with the same offerings.
	sig int
	// constraints are the pod's own topology spread and pod (anti-)affinity constraints.
	spread   []spreadConstraint
	affinity []podAffinityTerm
	anti     []podAffinityTerm
	// matches lists the trackers whose selector matches this pod's labels: placing it updates
	// their counts.
	matches []int
	// antiAgainst lists the anti-affinity terms of other pods that select this pod.
	antiAgainst []int
	gang        *gang
	// assigned marks a pod placed back on the in-flight node bought for it.
	assigned bool
	// node is the node the pod is placed on now (nil while it has none).
	node *simNode
	// origin is, for a running pod the disruption plan may move, the node it runs on in the
	// snapshot; "" for pending pods.
	origin string
	order  int // position in the input, for stable ordering
	// dra is what the pod asks of DRA (claims, DRA-served extended resources); nil if nothing.
	dra *podClaims
	// flex counts the offerings a GPU pod fits alone (0 for pods without GPUs): among GPU pods
	// of one size, the least flexible are placed first (sortPods).
	flex int
	// ports are the host ports the pod binds (hostports.go).
	ports []hostPort
	// topoKeys are the labels its node must carry for its hard spread and required pod affinity
	// (topologykeys.go).
	topoKeys []topologyKey
	// soft are its soft constraints (soft.go), nil when it has none.
	soft *softTerms
	// schedOrder marks a DRA pod that some offering allocates from devices where the order of
	// allocation matters (draState.orderSensitive): such pods are placed in the scheduler's
	// order (sortPods), which their allocations follow.
	schedOrder bool
}

// size is the sort key of first-fit decreasing: GPUs (device-plugin resources and the devices
// of DRA claims) first, then CPU and memory.
func (p *podInfo) size(gpuDims []int) (int64, int64) {
	var g int64
	for _, i := range gpuDims {
		g += p.req[i]
	}
	if p.dra != nil {
		g += int64(p.dra.devices)
	}
	// CPU in milli plus memory in MiB/4 weighs a core about like 4 GiB.
	return g, p.req[dimCPU] + p.req[dimMemory]>>22
}

// countFlex sets flex on the pending GPU pods.
func (s *state) countFlex() {
	zero := make(vec, len(s.dims.names))
	for _, pi := range s.pending {
		if g, _ := pi.size(s.gpuDims); g == 0 {
			continue
		}
		for _, o := range s.offerings {
			if s.offeringCompatible(pi.sig, o) && s.fitsEmpty(pi, zero, o) {
				pi.flex++
			}
		}
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// podRequests returns the pod's requests as the kube-scheduler counts them (init containers,
// sidecars, overhead), plus one pod.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	l := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	l[corev1.ResourcePods] = *resourceOne()
	return l
}

// signatureKey serialises what decides which nodes a pod may use by labels and taints.
func signatureKey(p *corev1.Pod) string {
	var aff *corev1.NodeAffinity
	if p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil {
		aff = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}
	}
	tol := append([]corev1.Toleration(nil), p.Spec.Tolerations...)
	sort.Slice(tol, func(i, j int) bool { return tol[i].Key < tol[j].Key })
	b, _ := json.Marshal(struct {
		S map[string]string
		A *corev1.NodeAffinity
		T []corev1.Toleration
	}{p.Spec.NodeSelector, aff, tol})
	return string(b)
}

// sortPods orders pods for placement: gangs kept together, higher priority first, then larger
// first (first-fit decreasing), then by input order so the result is deterministic. Among pods
// of one size, those whose allocations depend on their order (schedOrder) come last, in the
// scheduler's order.
func sortPods(pods []*podInfo, gpuDims []int) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		ga, gb := a.gang, b.gang
		if ga != gb {
			if ga == nil || gb == nil {
				return ga != nil
			}
			return ga.name < gb.name
		}
		ag, ac := a.size(gpuDims)
		bg, bc := b.size(gpuDims)
		if ag != bg {
			return ag > bg
		}
		if a.schedOrder != b.schedOrder {
			return b.schedOrder
		}
		if a.schedOrder {
			// Placed as the scheduler takes them, their claims are allocated in its order
			// without allocating a node's claims again (filter_dra.go, allocatedAfter).
			return schedulesBefore(a, b)
		}
		if ag > 0 && a.flex != b.flex {
			// Pods that only some GPU types can hold open their nodes first; pods that any GPU
			// will do then fill what those nodes have left instead of taking it from them.
			return a.flex < b.flex
		}
		if ac != bc {
			return ac > bc
		}
		return a.order < b.order
	})
}
