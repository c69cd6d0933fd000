package simulator

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/simulator/dra"
)

// The DRA filter: a pod with claims fits a node only if dra.Allocator.Fit allocates them next to
// what is already committed there. Allocations are committed when the pod is placed and undone
// through the undo log, like every other placement.
//
// A new node keeps several candidate offerings. Its allocations are computed for one offering
// class (slices and advertised resources), that of its cheapest candidate, which the plan buys.
// Candidates of other classes are checked against those allocations as they are — exact for the
// class they were made for, an approximation for others — and when placing a pod makes another
// class the cheapest, every claim of the node is allocated again for it (replay). A class that
// cannot hold them all is dropped, so the plan's allocations always fit the type it buys.

// nodeDRA is what a node holds through DRA.
type nodeDRA struct {
	// class is the offering class the allocations of a new node were made for (-1: none yet).
	class int
	// pods are the DRA pods placed on the node, in placement order (replays follow it).
	pods []*podInfo
	// commits are the allocations made on the node, in commit order.
	commits []claimCommit
	// ver identifies the node's allocations: it changes with every commit and release and
	// returns to its old value when they are undone. memo remembers, per (version, class,
	// claims signature), whether the claims fit — first fit and consolidation ask full nodes the
	// same question over and over, also of versions undone to.
	ver  int
	memo map[[3]int]bool
	// podsVer identifies the list of DRA pods as ver does the allocations (a pod whose claims
	// are allocated elsewhere, or that has none for the node's class, changes no allocation).
	podsVer int
	// replays remembers, per (ver, podsVer, class), what replaying the node's claims for the
	// class gave: placing a pod on a full node makes a bigger type the cheapest, and first fit
	// and consolidation try, and undo, the same replay over and over (98 % repeats with plain
	// GPU pods that DRA may serve beside claims).
	replays map[[3]int]replayMemo
}

// replayMemo is the outcome of a replay: per DRA pod of the node, its claims' allocations (nil
// for a pod without claims for the class), or ok false.
type replayMemo struct {
	ok      bool
	results [][]resourcev1.AllocationResult
}

// claimCommit is one claim this simulation allocated on a node.
type claimCommit struct {
	pod    *podInfo
	claim  *resourcev1.ResourceClaim
	result resourcev1.AllocationResult
	undo   func()
}

func (n *simNode) draState() *nodeDRA {
	if n.dra == nil {
		n.dra = &nodeDRA{class: -1}
	}
	return n.dra
}

// fitsOnNode fits the claim set on node n (seen as node, with slices) with what is allocated
// there, remembering the answer for the node's current allocations when it depends on nothing
// else (no claim allocated yet, no cluster-wide slices). class is the new node's offering class,
// -1 for an existing node. Only the answer is kept, not the allocation.
func (s *state) fitsOnNode(n *simNode, class int, node *corev1.Node, slices []*resourcev1.ResourceSlice, cs *claimSet) bool {
	if m, ok := s.memoOf(n, class, cs); ok {
		return m
	}
	_, r := s.dra.fit(node, slices, cs.claims)
	s.remember(n, class, cs, r == nil)
	return r == nil
}

// memoOf returns the remembered answer for the claim set on node n now, if any.
func (s *state) memoOf(n *simNode, class int, cs *claimSet) (fit, known bool) {
	if n.dra == nil || s.dra.noMemo || s.dra.clusterSlices || s.dra.anyAllocated(cs.claims) {
		return false, false
	}
	fit, known = n.dra.memo[[3]int{n.dra.ver, class, cs.sig}]
	return fit, known
}

// remember records whether the claim set fits node n now, when the answer depends only on n.
func (s *state) remember(n *simNode, class int, cs *claimSet, fit bool) {
	if s.dra.noMemo || s.dra.clusterSlices || s.dra.anyAllocated(cs.claims) {
		return
	}
	nd := n.draState()
	if nd.memo == nil {
		nd.memo = map[[3]int]bool{}
	}
	nd.memo[[3]int{nd.ver, class, cs.sig}] = fit
}

// bump gives the node's allocations a new version, undoably.
func (s *state) bump(nd *nodeDRA) {
	prev := nd.ver
	s.dra.epoch++
	nd.ver = s.dra.epoch
	s.undo = append(s.undo, func() { nd.ver = prev })
}

// holdsDRAPods reports whether DRA pods are placed on the node.
func (n *simNode) holdsDRAPods() bool { return n.dra != nil && len(n.dra.pods) > 0 }

// podFits is fits for the pod, except that an extended resource a DeviceClass serves does not
// count on a node that does not advertise it: DRA serves it there, through a claim.
func (s *state) podFits(pi *podInfo, used, alloc vec) bool {
	if pi.dra == nil || len(pi.dra.ext) == 0 {
		return fits(used, pi.req, alloc)
	}
	for i, r := range pi.req {
		if r != 0 && used[i]+r > alloc[i] && !(alloc[i] == 0 && s.dra.isExt(i)) {
			return false
		}
	}
	return true
}

// podFitsBound is podFits against a bound of several offerings' allocatable (maxAlloc): the
// DRA-served extended resources are left out, since a candidate may serve them through DRA.
func (s *state) podFitsBound(pi *podInfo, used, bound vec) bool {
	if pi.dra == nil || len(pi.dra.ext) == 0 {
		return fits(used, pi.req, bound)
	}
	for i, r := range pi.req {
		if r != 0 && used[i]+r > bound[i] && !s.dra.isExt(i) {
			return false
		}
	}
	return true
}

// shortfall is firstShortfall with podFits' exception.
func (s *state) shortfall(pi *podInfo, used, alloc vec) (corev1.ResourceName, bool) {
	if pi.dra == nil || len(pi.dra.ext) == 0 {
		return s.dims.firstShortfall(used, pi.req, alloc)
	}
	for i, r := range pi.req {
		if r != 0 && used[i]+r > alloc[i] && !(alloc[i] == 0 && s.dra.isExt(i)) {
			return s.dims.names[i], true
		}
	}
	return "", false
}

// mayServe reports whether a node of the offering may have DRA devices: its own slices or
// cluster-wide ones.
func (d *draState) mayServe(o *offering) bool { return d.clusterSlices || d.hasSlices(o.draClass) }

// isExt reports whether dimension i is an extended resource a DeviceClass serves.
func (d *draState) isExt(i int) bool {
	for _, x := range d.extDims {
		if x == i {
			return true
		}
	}
	return false
}

// fitsEmpty reports whether the pod alone fits an empty new node of the offering: resources
// (podFits) and claims.
func (s *state) fitsEmpty(pi *podInfo, zero vec, o *offering) bool {
	if !s.podFits(pi, zero, o.alloc) || !offeringPortsFree(pi, o) {
		return false
	}
	return pi.dra == nil || s.emptyReason(s.claimsOn(pi, o.alloc), o.draClass) == nil
}

// fitsEmptySpec is fitsEmpty by the claims' specs, whatever is allocated now (specReason): for
// estimates about pods already placed (split sizes, the lower bound).
func (s *state) fitsEmptySpec(pi *podInfo, zero vec, o *offering) bool {
	if !s.podFits(pi, zero, o.alloc) {
		return false
	}
	return pi.dra == nil || s.specReason(s.claimsOn(pi, o.alloc), o.draClass) == nil
}

// existingAllows fits the pod's claims on an existing or in-flight node with what is allocated
// there and commits them; it reports false, committing nothing, when they do not fit.
func (s *state) existingAllows(pi *podInfo, n *simNode) bool {
	if pi.dra == nil {
		return true
	}
	if m, _ := s.dra.pinned(pi); m != nil && m != n {
		return false
	}
	cs := s.claimsOn(pi, n.alloc)
	if len(cs.claims) > 0 {
		if !s.dra.mayHaveDevices(n) && !s.dra.anyAllocated(cs.claims) {
			return false
		}
		results := s.recordedFit(n, cs.claims)
		if results == nil {
			if fit, known := s.memoOf(n, -1, cs); known && !fit {
				return false
			}
			var r *dra.Reason
			if results, r = s.dra.fit(n.node, n.slices, cs.claims); r != nil {
				s.remember(n, -1, cs, false)
				return false
			}
		}
		s.commitClaims(n, pi, cs.claims, results)
	}
	s.addDRAPod(n, pi)
	return true
}

// recordedFit fits the claims on in-flight node n to the devices the plan that bought the node
// recorded for them (InFlightNode.Claims): the node's planned slices with only those devices
// left. It returns nil when a claim has no record or its devices are not free, and the claims
// are fitted as on any node.
func (s *state) recordedFit(n *simNode, claims []*resourcev1.ResourceClaim) []resourcev1.AllocationResult {
	if len(n.recorded) == 0 {
		return nil
	}
	keep := map[string]bool{}
	for _, c := range claims {
		devs, ok := n.recorded[claimKey(c)]
		if !ok {
			return nil
		}
		for _, d := range devs {
			keep[d] = true
		}
	}
	only := make([]*resourcev1.ResourceSlice, len(n.slices))
	for i, sl := range n.slices {
		cp := *sl
		cp.Spec.Devices = nil
		for _, d := range sl.Spec.Devices {
			if keep[d.Name] {
				cp.Spec.Devices = append(cp.Spec.Devices, d)
			}
		}
		only[i] = &cp
	}
	results, r := s.dra.fit(n.node, only, claims)
	if r != nil {
		return nil
	}
	return results
}

// mayHaveDevices reports whether an existing node can offer DRA devices at all: slices of its
// own (in the snapshot, or planned for an in-flight node) or cluster-wide ones.
func (d *draState) mayHaveDevices(n *simNode) bool {
	return d.clusterSlices || len(n.slices) > 0 || d.nodesWithSlices[n.name]
}

// existingReason fits the pod's claims on an existing node without committing, for reasons.
func (s *state) existingReason(pi *podInfo, n *simNode) *dra.Reason {
	cs := s.claimsOn(pi, n.alloc)
	if len(cs.claims) == 0 {
		return nil
	}
	if m, why := s.dra.pinned(pi); why != "" && m != nil && m != n {
		return &dra.Reason{Code: dra.AllocatedElsewhere, Message: why}
	}
	_, r := s.dra.fit(n.node, n.slices, cs.claims)
	return r
}

// newNodeObject is the Node the allocator sees for new node n bought as o.
func newNodeObject(n *simNode, o *offering) *corev1.Node {
	node := &corev1.Node{}
	node.Name, node.Labels = n.name, o.labels
	return node
}

// narrowClaims keeps the candidates of new node n whose class can hold the pod's claims next to
// the node's allocations (on an empty node: the cached empty-node answer).
func (s *state) narrowClaims(pi *podInfo, n *simNode, cands []*offering) []*offering {
	if pi.dra == nil {
		return cands
	}
	memo := map[[2]int]bool{}
	keep := func(o *offering) bool {
		cs := s.claimsOn(pi, o.alloc)
		if len(cs.claims) == 0 {
			return true
		}
		k := [2]int{o.draClass, cs.sig}
		ok, done := memo[k]
		if !done {
			switch {
			case n.holdsDRAPods() && s.dra.orderSensitive(o.draClass) && s.allocatedAfter(pi, cs, n, o):
				ok = !s.improving // allocateOn replays, or refuses
			case n.holdsDRAPods() || s.dra.anyAllocated(cs.claims):
				ok = s.fitsOnNode(n, o.draClass, newNodeObject(n, o), s.dra.slicesFor(n.name, o.draClass), cs)
			default:
				ok = s.emptyReason(cs, o.draClass) == nil
			}
			memo[k] = ok
		}
		return ok
	}
	return filterShared(cands, keep)
}

// allocateOnNew allocates, on new node n, the pod's claims for the cheapest candidate's class,
// replaying the node's earlier allocations when that class changes. A class that cannot hold
// them is dropped and the next cheapest tried. It returns the remaining candidates (their
// cheapest is of the class allocated for) and false when none is left; every change is in the
// undo log.
func (s *state) allocateOnNew(pi *podInfo, n *simNode, cands []*offering) ([]*offering, bool) {
	for len(cands) > 0 {
		o := cheapest(cands)
		if s.allocateOn(pi, n, o) {
			return cands, true
		}
		kept := make([]*offering, 0, len(cands))
		for _, c := range cands {
			if c.draClass != o.draClass {
				kept = append(kept, c)
			}
		}
		cands = kept
	}
	return nil, false
}

// allocateOn allocates the pod's claims on new node n for o's class, after reallocating the
// node's claims for that class if they were made for another. On failure it undoes its changes.
func (s *state) allocateOn(pi *podInfo, n *simNode, o *offering) bool {
	mark := s.checkpoint()
	nd := n.draState()
	if nd.class != o.draClass {
		if len(nd.pods) > 0 && !s.replay(n, o) {
			s.revert(mark)
			return false
		}
		prev := nd.class
		nd.class = o.draClass
		s.undo = append(s.undo, func() { nd.class = prev })
	}
	if pi.dra == nil {
		return true
	}
	cs := s.claimsOn(pi, o.alloc)
	if len(cs.claims) > 0 {
		if m, _ := s.dra.pinned(pi); m != nil && m != n {
			s.revert(mark)
			return false
		}
		if fit, known := s.memoOf(n, o.draClass, cs); known && !fit {
			s.revert(mark)
			return false
		}
		results, r := s.dra.fit(newNodeObject(n, o), s.dra.slicesFor(n.name, o.draClass), cs.claims)
		if r != nil {
			s.remember(n, o.draClass, cs, false)
			s.revert(mark)
			return false
		}
		if s.dra.orderSensitive(o.draClass) && s.allocatedAfter(pi, cs, n, o) {
			// The scheduler allocates pi's claims before some already on the node, and what
			// those got may then not be left for them: allocate the node's claims again in its
			// order. Placement mostly follows that order (sortPods); gangs, placed first, and
			// larger pods are the exceptions. Consolidation and split, which try many such
			// moves and lose nothing by skipping one, do not replay but refuse: replaying made
			// planning 200 dynamic-MIG pods 7 times slower for the same plan.
			if s.improving {
				s.revert(mark)
				return false
			}
			s.addDRAPod(n, pi)
			if !s.replay(n, o) {
				s.revert(mark)
				return false
			}
			return true
		}
		s.commitClaims(n, pi, cs.claims, results)
	}
	s.addDRAPod(n, pi)
	return true
}

// orderSensitive reports whether what the claims on a node of the class get depends on the
// order they are allocated in: the allocator fits first, and partitions carved from a GPU's
// shared counters (dynamic MIG) or memory shared by capacity (consumable memory) can be left,
// in one order, without room for a claim that fits in another — 1g.5gb partitions taking the
// slots a 2g.10gb needs. The scheduler allocates in its own order (schedulesBefore), so the
// claims on such a node are allocated in that order too: pods are placed in it (sortPods,
// schedOrder), a pod it takes before some on the node is added by a replay in that order, or
// not at all while consolidating (allocateOn), and replays follow it (allocationOrder).
func (d *draState) orderSensitive(class int) bool {
	c := d.classes[class]
	return c.it != nil && (c.mode == dra.DynamicMIG || c.consumable)
}

// schedulesBefore reports whether kube-scheduler takes pod a before pod b: higher priority
// first, then the one created first (its queue sorts by priority, then by the time a pod was
// queued, which for pods waiting on new nodes follows their creation). Creation times have
// whole seconds, and pods created in one second are taken by name: a guess, but one that does
// not depend on the order a snapshot lists them in.
func schedulesBefore(a, b *podInfo) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	ta, tb := a.pod.CreationTimestamp.Time, b.pod.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.key < b.key
}

// allocatedAfter reports whether new node n holds a pod with other claims than pi's (cs) for
// o's class that the scheduler takes after pi. Claims of one spec get the same devices between
// them in either order: a gang's members, placed in the gang's order, are not refused.
func (s *state) allocatedAfter(pi *podInfo, cs *claimSet, n *simNode, o *offering) bool {
	for _, p := range n.dra.pods {
		if p.dra == nil || !schedulesBefore(pi, p) {
			continue
		}
		if pc := s.claimsOn(p, o.alloc); len(pc.claims) > 0 && pc.sig != cs.sig {
			return true
		}
	}
	return false
}

// allocationOrder returns the indices of the node's DRA pods in the order their claims are
// allocated for the class: the scheduler's where the order matters (orderSensitive), else
// placement order.
func (s *state) allocationOrder(nd *nodeDRA, class int) []int {
	order := make([]int, len(nd.pods))
	for i := range order {
		order[i] = i
	}
	if s.dra.orderSensitive(class) {
		sort.SliceStable(order, func(i, j int) bool { return schedulesBefore(nd.pods[order[i]], nd.pods[order[j]]) })
	}
	return order
}

// replay releases the node's allocations and makes them again, for o's class, in allocation
// order (allocationOrder).
// The outcome is remembered (replays): the allocator is deterministic, and what a replay sees of
// a new node is its allocations and its DRA pods, which ver and podsVer identify, and the class —
// unless slices are shared by all nodes or a claim was allocated elsewhere.
func (s *state) replay(n *simNode, o *offering) bool {
	nd := n.dra
	key := [3]int{nd.ver, nd.podsVer, o.draClass}
	if m, ok := nd.replays[key]; ok && !s.dra.noMemo {
		if !m.ok {
			return false
		}
		s.releaseClaims(n)
		for _, i := range s.allocationOrder(nd, o.draClass) {
			p := nd.pods[i]
			if m.results[i] != nil {
				s.commitClaims(n, p, s.claimsOn(p, o.alloc).claims, m.results[i])
			}
		}
		return true
	}
	cacheable := !s.dra.clusterSlices && !s.dra.noMemo
	memo := replayMemo{results: make([][]resourcev1.AllocationResult, len(nd.pods))}
	remember := func(ok bool) bool {
		if cacheable {
			if nd.replays == nil {
				nd.replays = map[[3]int]replayMemo{}
			}
			memo.ok = ok
			nd.replays[key] = memo
		}
		return ok
	}
	s.releaseClaims(n)
	node, slices := newNodeObject(n, o), s.dra.slicesFor(n.name, o.draClass)
	for _, i := range s.allocationOrder(nd, o.draClass) {
		p := nd.pods[i]
		if p.dra == nil {
			continue
		}
		cs := s.claimsOn(p, o.alloc)
		if len(cs.claims) == 0 {
			continue
		}
		if s.dra.anyAllocated(cs.claims) {
			cacheable = false
		}
		results, r := s.dra.fit(node, slices, cs.claims)
		if r != nil {
			return remember(false)
		}
		memo.results[i] = results
		s.commitClaims(n, p, cs.claims, results)
	}
	return remember(true)
}

// commitClaims commits the allocations of the pod's claims on n, undoably. Claims that already
// have an allocation (a shared claim, or one the snapshot allocated) keep it and are not
// recorded again.
func (s *state) commitClaims(n *simNode, pi *podInfo, claims []*resourcev1.ResourceClaim, results []resourcev1.AllocationResult) {
	nd := n.draState()
	added := 0
	for i, c := range claims {
		if s.dra.allocated(c) {
			continue
		}
		undo := s.dra.alloc.Commit(c, results[i])
		s.dra.owner[claimKey(c)] = n
		nd.commits = append(nd.commits, claimCommit{pod: pi, claim: c, result: results[i], undo: undo})
		added++
	}
	if added == 0 {
		return
	}
	s.bump(nd)
	s.undo = append(s.undo, func() {
		for range added {
			last := nd.commits[len(nd.commits)-1]
			last.undo()
			delete(s.dra.owner, claimKey(last.claim))
			nd.commits = nd.commits[:len(nd.commits)-1]
		}
	})
}

// addDRAPod records a DRA pod placed on n, undoably.
func (s *state) addDRAPod(n *simNode, pi *podInfo) {
	nd := n.draState()
	nd.pods = append(nd.pods, pi)
	prev := nd.podsVer
	s.dra.epoch++
	nd.podsVer = s.dra.epoch
	s.undo = append(s.undo, func() { nd.pods, nd.podsVer = nd.pods[:len(nd.pods)-1], prev })
}

// releaseClaims undoes every allocation on n, undoably: reverting commits them again.
func (s *state) releaseClaims(n *simNode) {
	nd := n.dra
	if nd == nil || len(nd.commits) == 0 {
		return
	}
	old := nd.commits
	for i := len(old) - 1; i >= 0; i-- {
		old[i].undo()
		delete(s.dra.owner, claimKey(old[i].claim))
	}
	nd.commits = nil
	s.bump(nd)
	s.undo = append(s.undo, func() {
		for i := range old {
			old[i].undo = s.dra.alloc.Commit(old[i].claim, old[i].result)
			s.dra.owner[claimKey(old[i].claim)] = n
		}
		nd.commits = old
	})
}

// clearDRA releases a new node's allocations and forgets its DRA pods, undoably (clear).
func (s *state) clearDRA(n *simNode) {
	if n.dra == nil {
		return
	}
	s.releaseClaims(n)
	nd := n.dra
	prevPods, prevClass, prevVer := nd.pods, nd.class, nd.podsVer
	s.dra.epoch++
	nd.pods, nd.class, nd.podsVer = nil, -1, s.dra.epoch
	s.undo = append(s.undo, func() { nd.pods, nd.class, nd.podsVer = prevPods, prevClass, prevVer })
}

// claimFailure explains a pod whose claims pin it to a node that could not take it.
func (s *state) claimFailure(pi *podInfo) string {
	if s.dra == nil {
		return ""
	}
	_, why := s.dra.pinned(pi)
	if why == "" {
		return ""
	}
	return why + ", and no node holding it can take the pod"
}

// claimsCheck is the consistency check of buildPlan: a new node's allocations must have been
// made for the class of the offering it is bought as.
func (s *state) claimsCheck(n *simNode) string {
	if n.dra == nil || len(n.dra.commits) == 0 || n.dra.class == n.chosen.draClass {
		return ""
	}
	return fmt.Sprintf("internal: the claims of node %s were allocated for another instance type than %s", n.name, n.chosen.it.Name)
}
