package simulator

import (
	"sort"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	v1helper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// simNode is a node in the simulation: an existing Node, an in-flight launch, or a new node the
// plan buys. A new node keeps every offering still able to hold its pods (cands); the cheapest
// one is chosen when the plan is built, so packing decides the size and price decides the type.
type simNode struct {
	name     string
	existing bool
	inFlight bool
	labels   map[string]string
	taints   []corev1.Taint
	node     *corev1.Node
	alloc    vec
	used     vec
	pods     []*podInfo
	planned  []*podInfo // pending pods placed by this simulation
	pool     *poolInfo
	// cands are the offerings a new node can still be bought as, in offering order.
	cands []*offering
	// maxAlloc bounds every candidate's allocatable (see maxAlloc).
	maxAlloc vec
	// zone is the pinned zone of a new node, "" while any candidate zone will do.
	zone string
	// chosen is the cheapest candidate: what the node costs if bought now. Pool limits and the
	// budget are counted with it.
	chosen *offering
	// removed marks a new node that consolidation emptied and dropped, or an existing node the
	// disruption plan removes.
	removed bool
	// noTarget keeps pods off the node: a node already being disrupted, or the replacement of an
	// earlier action of a disruption plan (so that actions do not depend on each other's
	// replacements). Simulate never sets it.
	noTarget bool
	idx      int
	// dra holds the node's DRA pods and claim allocations (filter_dra.go).
	dra *nodeDRA
	// slices are the ResourceSlices an in-flight node will publish, while the snapshot has none
	// of it.
	slices []*resourcev1.ResourceSlice
	// recorded are the devices (by name, in slices) the plan that bought an in-flight node
	// allocated to each claim there (InFlightNode.Claims), by claim key.
	recorded map[string][]string
	// compatBySig caches anyCompatible for the candidates identified by compatCands/compatLen.
	compatBySig map[int]bool
	compatCands **offering
	compatLen   int
	// ports are the host ports its pods bind (countPod keeps them).
	ports portSet
}

// available reports whether pods may be placed on the node.
func (n *simNode) available() bool { return !n.removed && !n.noTarget }

// domain returns the node's value of a topology key, and false when the node has none yet (a
// new node whose zone is not pinned).
func (n *simNode) domain(key string) (string, bool) {
	switch {
	case key == LabelHostname:
		return n.name, true
	case n.existing:
		v, ok := n.labels[key]
		return v, ok
	case key == LabelZone:
		return n.zone, n.zone != ""
	}
	v, ok := n.cands[0].labels[key]
	if !ok {
		return "", false
	}
	for _, c := range n.cands[1:] {
		if c.labels[key] != v {
			return "", false
		}
	}
	return v, true
}

// addExistingNodes adds the snapshot's schedulable nodes with the resources their bound pods use.
func (s *state) addExistingNodes() {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range s.in.Snapshot.Pods {
		if snapshot.IsActive(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	nodes := append([]*corev1.Node(nil), s.in.Snapshot.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		sn := &simNode{name: n.Name, existing: true, labels: n.Labels, taints: n.Spec.Taints, node: n,
			alloc: s.dims.grow(s.dims.fromList(n.Status.Allocatable, false)), used: make(vec, len(s.dims.names))}
		for _, p := range byNode[n.Name] {
			sn.used.add(s.dims.grow(s.dims.fromList(podRequests(p), false)))
		}
		if pl := s.poolNamed(n.Labels[api.LabelPool]); pl != nil {
			s.countManaged(pl, CatalogTypeOf(n.Labels), sn)
		}
		sn.idx = len(s.nodes)
		s.nodes = append(s.nodes, sn)
	}
}

// CatalogTypeOf returns the label form of the catalog type of a node with the given labels (see
// InstanceTypeLabels): tiler.dev/instance-type when set, else node.kubernetes.io/instance-type.
func CatalogTypeOf(labels map[string]string) string {
	if v := labels[api.LabelCatalogInstanceType]; v != "" {
		return v
	}
	return labels[LabelInstanceType]
}

// countManaged adds an existing node of a pool to the pool's limit counters and the budget;
// typeLabel is CatalogTypeOf the node.
func (s *state) countManaged(pl *poolInfo, typeLabel string, sn *simNode) {
	pl.nodes++
	for ti := range s.cat.Types {
		it := &s.cat.Types[ti]
		if catalogTypeLabel(it.Name) != typeLabel {
			continue
		}
		pl.vcpu += it.VCPU
		pl.gpus += it.GPU.Count
		price, _ := s.cat.Price(api.Offering{InstanceType: it.Name, Zone: sn.labels[LabelZone], CapacityType: api.CapacityType(sn.labels[api.LabelCapacityType])})
		pl.price += price
		s.budget += price
	}
}

func (s *state) poolNamed(name string) *poolInfo {
	for _, pl := range s.pools {
		if pl.Name == name && name != "" {
			return pl
		}
	}
	return nil
}

// unschedulable reports whether the scheduler would skip the node outright.
func unschedulableNode(n *corev1.Node) bool { return n.Spec.Unschedulable }

// nodeCompatible answers, with a cache per signature, whether pods of signature sig may use an
// existing node by its labels and taints.
func (s *state) nodeCompatible(sig int, n *simNode) bool {
	for len(s.nodeOK) <= sig {
		s.nodeOK = append(s.nodeOK, nil)
	}
	row := s.nodeOK[sig]
	if row == nil {
		row = make([]int8, len(s.nodes), len(s.nodes)+64)
		s.nodeOK[sig] = row
	}
	for len(row) <= n.idx {
		row = append(row, 0)
		s.nodeOK[sig] = row
	}
	if row[n.idx] == 0 {
		row[n.idx] = 2
		if podMatchesNode(s.sigPods[sig], n.node) {
			row[n.idx] = 1
		}
	}
	return row[n.idx] == 1
}

// podMatchesNode checks node selector, required node affinity and NoSchedule/NoExecute taints
// (except api.TaintReserved) with the scheduler's own helpers.
func podMatchesNode(p *corev1.Pod, n *corev1.Node) bool {
	if unschedulableNode(n) && !toleratesUnschedulable(p) {
		return false
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); !ok {
		return false
	}
	_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Key != api.TaintReserved && (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
		}, true)
	return !untolerated
}

func toleratesUnschedulable(p *corev1.Pod) bool {
	t := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	for _, tol := range p.Spec.Tolerations {
		if tol.ToleratesTaint(klog.Background(), t, true) {
			return true
		}
	}
	return false
}

// offeringCompatible answers, cached per signature, whether pods of signature sig may use a node
// bought as offering o: its node selection matches the offering and its team may buy from the
// offering's pool, and the pool's priority tier admits them.
func (s *state) offeringCompatible(sig int, o *offering) bool {
	for len(s.compat) <= sig {
		s.compat = append(s.compat, nil)
	}
	row := s.compat[sig]
	if row == nil {
		row = make([]bool, len(s.offerings))
		for i, off := range s.offerings {
			row[i] = poolAllowed(s.sigPools[sig], off.pool.Name) && s.tierAllows(sig, off.pool) && podMatchesNode(s.sigPods[sig], off.node)
		}
		s.compat[sig] = row
	}
	return row[o.idx]
}

// applyDaemonSets subtracts, from every offering's allocatable, the requests of the DaemonSet pods
// that would run on such a node.
func (s *state) applyDaemonSets() {
	for _, o := range s.offerings {
		o.alloc = s.dims.grow(s.dims.fromList(o.capacity, false))
		for _, ds := range s.in.Snapshot.DaemonSets {
			p := &corev1.Pod{Spec: ds.Spec.Template.Spec}
			p.Namespace = ds.Namespace
			if podMatchesNode(p, o.node) {
				o.alloc.sub(s.dims.grow(s.dims.fromList(podRequests(p), false)))
				o.dsPorts = o.dsPorts.add(podHostPorts(p), 1)
			}
		}
	}
}
