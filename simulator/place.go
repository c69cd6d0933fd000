package simulator

import (
	"fmt"
	"sort"

	"github.com/tiler-dev/tiler/api"
)

// restriction narrows where a pod may go: gangs with node or zone topology use it.
type restriction struct {
	node *simNode // only this node
	zone string   // only this zone
	// pool and maxPrice restrict the offerings of nodes opened under the restriction (split).
	pool     *poolInfo
	maxPrice float64
	// offs, when set, are the only offerings nodes opened under the restriction may be bought as
	// (repack).
	offs map[int]bool
}

// allows reports whether a node opened under the restriction may be bought as o.
func (r restriction) allows(o *offering) bool {
	return (r.zone == "" || o.zone == r.zone) && (r.pool == nil || o.pool == r.pool) && (r.maxPrice == 0 || o.price <= r.maxPrice) &&
		(r.offs == nil || r.offs[o.idx])
}

// failure remembers why a pod found no place, to pick its reason code.
type failure struct {
	limit   bool   // a new node would have fit but a limit stopped it
	newNode string // why no new node could be opened, when not a limit
}

// placeAll places the pending pods in order: each pod goes to the first node that can take it —
// existing and in-flight nodes first (already paid for), then new nodes in the order they were
// opened — and otherwise opens a new node. With pods sorted largest first this is first-fit
// decreasing, and since a new node keeps every offering that can still hold its pods, packing
// fixes the node's contents and price picks its type at the end.
func (s *state) placeAll() {
	s.placeAssigned()
	var deferred []deferredPlacement
	for i := 0; i < len(s.pending); {
		pi := s.pending[i]
		if pi.assigned {
			i++
			continue
		}
		if g := pi.gang; g != nil {
			i += len(g.members)
			if f, ok := s.tryGang(g); !ok {
				if gangHasAffinity(g) {
					deferred = append(deferred, deferredPlacement{gang: g, f: f})
				} else {
					s.failGang(g, f)
				}
			}
			continue
		}
		if f, ok := s.placeOne(pi, restriction{}); !ok {
			if len(pi.affinity) > 0 {
				deferred = append(deferred, deferredPlacement{pod: pi, f: f})
			} else {
				s.fail(pi, f)
			}
		}
		i++
	}
	// A pod or gang whose required pod affinity targets pods placed after it (of lower priority,
	// or smaller) is tried again once they are placed, as the scheduler binds it once they are
	// bound; again while that places more of them.
	for progress := true; progress && len(deferred) > 0; {
		progress = false
		kept := deferred[:0]
		for _, d := range deferred {
			var ok bool
			if d.gang != nil {
				d.f, ok = s.tryGang(d.gang)
			} else {
				d.f, ok = s.placeOne(d.pod, restriction{})
			}
			if ok {
				progress = true
			} else {
				kept = append(kept, d)
			}
		}
		deferred = kept
	}
	for _, d := range deferred {
		if d.gang != nil {
			s.failGang(d.gang, d.f)
		} else {
			s.fail(d.pod, d.f)
		}
	}
}

// deferredPlacement is a pod or a whole gang placeAll tries again after the others, and why its
// last try failed.
type deferredPlacement struct {
	pod  *podInfo
	gang *gang
	f    failure
}

// gangHasAffinity reports whether a member of the gang has required pod affinity.
func gangHasAffinity(g *gang) bool {
	for _, m := range g.members {
		if len(m.affinity) > 0 {
			return true
		}
	}
	return false
}

func (s *state) fail(pi *podInfo, f failure) {
	switch {
	case f.limit:
		s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.LimitExceeded, Reason: "a new node would fit, but a pool limit or the budget does not allow it"}
	case s.claimFailure(pi) != "":
		s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.Unschedulable, Reason: s.claimFailure(pi)}
	case s.neverFits(pi) != "":
		s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.NeverFits, Reason: s.neverFits(pi)}
	case f.newNode == noOffering && len(pi.ports) > 0:
		// neverFits found an offering by resources and labels: its DaemonSets' host ports are
		// what is left.
		s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.Unschedulable, Reason: hostPortReason(pi)}
	default:
		reason := "no node satisfies its topology spread or pod affinity constraints: " + f.newNode
		if why := s.unusableDomain(pi); why != "" {
			reason += "; " + why
		}
		s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.Unschedulable, Reason: reason}
	}
}

// placeAssigned puts pending pods back on the in-flight (or registered, Options.Bought) nodes
// that were bought for them, with every filter checked, before anything else is placed. Gang
// members are left to the gang logic.
//
// The pods are put back one from each node in turn, and those a filter refuses are tried again
// after the others, until a round places none: the plan that bought the nodes was valid as a
// whole, but a pod spread over zones (DoNotSchedule) can be refused while its group's pods of the
// other zones are not back yet — put back node by node, a node's third pod of a group exceeds the
// skew before the other zones' nodes hold theirs. Refused for that, the pod would be planned on a
// new node, and its room on the in-flight node bought twice.
func (s *state) placeAssigned() {
	byKey := map[string]*podInfo{}
	for _, pi := range s.pending {
		if pi.gang == nil {
			byKey[pi.key] = pi
		}
	}
	type assignment struct {
		pi *podInfo
		n  *simNode
	}
	var perNode [][]assignment
	add := func(i int, pods []string) {
		var as []assignment
		for _, key := range pods {
			if pi := byKey[key]; pi != nil {
				as = append(as, assignment{pi, s.nodes[i]})
			}
		}
		perNode = append(perNode, as)
	}
	for _, f := range s.in.Options.InFlight {
		if i := s.nodeIndex(f.Name); i >= 0 && s.nodes[i].inFlight {
			add(i, f.Pods)
		}
	}
	for _, b := range s.in.Options.Bought {
		if i := s.nodeIndex(b.Name); i >= 0 && s.nodes[i].existing && s.nodes[i].available() {
			add(i, b.Pods)
		}
	}
	var todo []assignment
	for k := 0; ; k++ {
		more := false
		for _, as := range perNode {
			if k < len(as) {
				todo = append(todo, as[k])
				more = true
			}
		}
		if !more {
			break
		}
	}
	for placed := true; placed && len(todo) > 0; {
		placed = false
		left := todo[:0]
		for _, a := range todo {
			switch {
			case a.pi.assigned:
			case s.tryNode(a.pi, a.n, restriction{node: a.n}):
				a.pi.assigned, placed = true, true
			default:
				left = append(left, a)
			}
		}
		todo = left
	}
	s.undo = s.undo[:0]
}

// placeOne places a pod on an existing, in-flight or new node, or opens a new node for it.
func (s *state) placeOne(pi *podInfo, r restriction) (failure, bool) {
	if r.node != nil {
		return failure{newNode: "the gang's node is full"}, s.tryNode(pi, r.node, r)
	}
	if s.softOn && pi.soft != nil {
		return s.placeOneSoft(pi, r)
	}
	for _, n := range s.rankedGPUNodes(pi) {
		if s.tryNode(pi, n, r) {
			return failure{}, true
		}
	}
	nodes := s.nodes
	if s.bestFit {
		nodes = s.tightestFirst()
	}
	for _, n := range nodes {
		if n.available() && s.tryNode(pi, n, r) {
			return failure{}, true
		}
	}
	return s.openNode(pi, r)
}

// tightestFirst returns the nodes with the existing and in-flight ones (which come first) sorted
// by the room they have left, least first: the sum over the resources they have of the share of
// allocatable not used. Ties keep name order.
func (s *state) tightestFirst() []*simNode {
	end := 0
	for end < len(s.nodes) && s.nodes[end].existing {
		end++
	}
	type ranked struct {
		n    *simNode
		free float64
	}
	rs := make([]ranked, end)
	for i, n := range s.nodes[:end] {
		rs[i].n = n
		for d, a := range n.alloc {
			if a > 0 {
				rs[i].free += float64(a-n.used[d]) / float64(a)
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].free < rs[j].free })
	out := make([]*simNode, 0, len(s.nodes))
	for _, r := range rs {
		out = append(out, r.n)
	}
	return append(out, s.nodes[end:]...)
}

// tryNode places the pod on n if every filter passes, recording how to undo it.
func (s *state) tryNode(pi *podInfo, n *simNode, r restriction) bool {
	if !s.portsFree(pi, n) {
		return false
	}
	if n.existing {
		if !s.nodeCompatible(pi.sig, n) || !s.podFits(pi, n.used, n.alloc) {
			return false
		}
		if r.zone != "" && n.labels[LabelZone] != r.zone {
			return false
		}
		if !s.topologyAllows(pi, n, n.labels[LabelZone]) {
			return false
		}
		if pi.dra != nil && !s.existingAllows(pi, n) {
			return false
		}
		s.commit(pi, n, nil, "")
		return true
	}
	return s.tryNewNode(pi, n, r)
}

// tryNewNode narrows a new node's candidates to those that can hold the pod too, and pins its
// zone when the pod's constraints depend on it. With DRA pods, the candidates must hold the
// claims as well, and the claims are allocated for the cheapest (filter_dra.go).
func (s *state) tryNewNode(pi *podInfo, n *simNode, r restriction) bool {
	if !s.podFitsBound(pi, n.used, n.maxAlloc) || r.zone != "" && n.zone != "" && n.zone != r.zone {
		return false
	}
	if n.zone != "" && !s.topologyAllows(pi, n, n.zone) || n.zone == "" && !s.topologyAllows(pi, n, "") {
		return false
	}
	if !s.anyCompatible(pi.sig, n) || !s.anyCandidateFits(pi, n, r) {
		return false
	}
	useDRA := s.dra != nil && (pi.dra != nil || n.holdsDRAPods())
	if pi.dra != nil {
		if m, _ := s.dra.pinned(pi); m != nil && m != n {
			return false
		}
	}
	cands := s.narrow(pi, n.cands, n.used, r)
	if useDRA {
		if cands = s.narrowClaims(pi, n, cands); len(cands) == 0 {
			return false
		}
	}
	zone, ok := s.chooseZone(pi, n, cands)
	if !ok {
		return false
	}
	if soft := s.softNarrow(pi, n, cands, cheapest(cands).price); len(soft) != len(cands) {
		// The soft choice holds only where the hard constraints allow its zone.
		if z, ok := s.chooseZone(pi, n, soft); ok {
			if z == "" {
				z = oneZone(soft)
			}
			cands, zone = soft, z
		}
	}
	if zone != "" && zone != n.zone {
		cands = inZone(cands, zone)
	}
	mark := s.checkpoint()
	if useDRA {
		if cands, ok = s.allocateOnNew(pi, n, cands); !ok {
			return false
		}
	}
	if !s.withinLimits(n.pool, n, cands) {
		s.revert(mark)
		return false
	}
	s.commit(pi, n, cands, zone)
	return true
}

// anyCompatible reports whether the pod signature accepts any of a new node's candidates,
// remembered per node until its candidates change: pods that can never join a node (a CPU pod
// and a tainted GPU node with hundreds of candidates) are turned away without a scan.
func (s *state) anyCompatible(sig int, n *simNode) bool {
	if len(n.cands) == 0 {
		return false
	}
	if n.compatCands != &n.cands[0] || n.compatLen != len(n.cands) {
		n.compatCands, n.compatLen = &n.cands[0], len(n.cands)
		clear(n.compatBySig)
	}
	if v, ok := n.compatBySig[sig]; ok {
		return v
	}
	v := false
	for _, o := range n.cands {
		if s.offeringCompatible(sig, o) {
			v = true
			break
		}
	}
	if n.compatBySig == nil {
		n.compatBySig = map[int]bool{}
	}
	n.compatBySig[sig] = v
	return v
}

// anyCandidateFits is the allocation-free fast path of narrow.
func (s *state) anyCandidateFits(pi *podInfo, n *simNode, r restriction) bool {
	for _, o := range n.cands {
		if r.allows(o) && s.podFits(pi, n.used, o.alloc) && s.offeringCompatible(pi.sig, o) && offeringPortsFree(pi, o) && offeringCarriesKeys(pi, o) {
			return true
		}
	}
	return false
}

// narrow returns the candidates that can hold used+req and that the pod's signature accepts.
// When every candidate stays, the slice is shared rather than copied (candidates are never
// modified in place, so sharing is safe and undo keeps the old slice).
func (s *state) narrow(pi *podInfo, cands []*offering, used vec, r restriction) []*offering {
	keep := func(o *offering) bool {
		return r.allows(o) && s.podFits(pi, used, o.alloc) && s.offeringCompatible(pi.sig, o) && offeringPortsFree(pi, o) &&
			offeringCarriesKeys(pi, o)
	}
	return filterShared(cands, keep)
}

// maxAlloc is the element-wise maximum of the candidates' allocatable: a pod that does not fit
// it fits none of them, which rejects most nodes without scanning candidates.
func maxAlloc(cands []*offering) vec {
	m := cands[0].alloc.clone()
	for _, o := range cands[1:] {
		for i, x := range o.alloc {
			m[i] = max(m[i], x)
		}
	}
	return m
}

func inZone(cands []*offering, zone string) []*offering {
	var out []*offering
	for _, o := range cands {
		if o.zone == zone {
			out = append(out, o)
		}
	}
	return out
}

// commit places pi on n. For a new node, cands and zone are its narrowed candidates and zone.
func (s *state) commit(pi *podInfo, n *simNode, cands []*offering, zone string) {
	prevCands, prevZone, prevChosen := n.cands, n.zone, n.chosen
	prevMax := n.maxAlloc
	if !n.existing {
		if len(cands) != len(n.cands) || n.maxAlloc == nil {
			n.maxAlloc = maxAlloc(cands)
		}
		n.cands, n.zone = cands, zone
		s.setChosen(n, cheapest(cands))
	}
	n.used.add(pi.req)
	n.pods = append(n.pods, pi)
	prevNode := pi.node
	pi.node = n
	undoCount := s.countPod(pi, n)
	s.undo = append(s.undo, func() {
		undoCount()
		pi.node = prevNode
		n.pods = n.pods[:len(n.pods)-1]
		n.used.sub(pi.req)
		if !n.existing {
			n.cands, n.zone, n.maxAlloc = prevCands, prevZone, prevMax
			s.setChosen(n, prevChosen)
		}
	})
}

// setChosen makes o the offering a new node will be bought as (its cheapest candidate) and moves
// the pool's and the budget's sums accordingly. A nil o removes the node from the sums.
func (s *state) setChosen(n *simNode, o *offering) {
	if c := n.chosen; c != nil {
		n.pool.price -= c.price
		n.pool.vcpu -= c.it.VCPU
		n.pool.gpus -= c.it.GPU.Count
		s.budget -= c.price
	}
	n.chosen = o
	if o != nil {
		n.pool.price += o.price
		n.pool.vcpu += o.it.VCPU
		n.pool.gpus += o.it.GPU.Count
		s.budget += o.price
	}
}

// cheapest returns the cheapest offering; ties go to the earlier one (offering order is pool
// weight, then type name, zone and capacity type, so the choice is deterministic).
func cheapest(cands []*offering) *offering {
	best := cands[0]
	for _, o := range cands[1:] {
		if o.price < best.price {
			best = o
		}
	}
	return best
}

// withinLimits reports whether the pool limits and the budget allow n to be bought as the
// cheapest of cands (the offering the plan will choose).
func (s *state) withinLimits(pl *poolInfo, n *simNode, cands []*offering) bool {
	c := cheapest(cands)
	delta := c.price
	nodes, vcpu, gpus := pl.nodes, pl.vcpu+c.it.VCPU, pl.gpus+c.it.GPU.Count
	if n != nil && n.chosen != nil {
		delta -= n.chosen.price
		vcpu -= n.chosen.it.VCPU
		gpus -= n.chosen.it.GPU.Count
	} else {
		nodes++
	}
	// A nil limit is none; 0 allows nothing (policy.Limits).
	l := pl.Limits
	switch {
	case l.MaxNodes != nil && nodes > *l.MaxNodes,
		l.MaxVCPU != nil && vcpu > *l.MaxVCPU,
		l.MaxGPUs != nil && gpus > *l.MaxGPUs,
		l.MaxPricePerHour != nil && pl.price+delta > *l.MaxPricePerHour+1e-9,
		s.in.Policy.Budget != nil && s.budget+delta > s.in.Policy.Budget.MaxPricePerHour+1e-9:
		return false
	}
	return true
}

// checkpoint and revert undo placements back to a mark (gangs).
func (s *state) checkpoint() int { return len(s.undo) }

func (s *state) revert(mark int) {
	for len(s.undo) > mark {
		f := s.undo[len(s.undo)-1]
		s.undo = s.undo[:len(s.undo)-1]
		f()
	}
}

// tryGang places every member of a gang or none (what it placed is undone when it fails). With
// topology "node" all members go to one node; with "zone" to one zone.
func (s *state) tryGang(g *gang) (failure, bool) {
	mark := s.checkpoint()
	var f failure
	ok := false
	switch g.topology {
	case "node":
		f, ok = s.placeGangOnNode(g)
	case "zone":
		f, ok = s.placeGangInZone(g)
	default:
		ok = true
		for _, m := range g.members {
			if f, ok = s.placeOne(m, restriction{}); !ok {
				break
			}
		}
	}
	if !ok {
		s.revert(mark)
	}
	return f, ok
}

// failGang records why the gang cannot be placed: api.GangIncomplete for every member, with the
// cause when a limit stopped it or a member never fits.
func (s *state) failGang(g *gang, f failure) {
	why := fmt.Sprintf("gang %s (%d pods, topology %q) cannot be placed whole", g.name, len(g.members), g.topology)
	var cause api.ReasonCode
	if f.limit {
		why += ": a pool limit or the budget stops it"
		cause = api.LimitExceeded
	}
	for _, m := range g.members {
		if r := s.neverFits(m); r != "" {
			why += "; " + m.key + ": " + r
			cause = api.NeverFits
			break
		}
	}
	for _, m := range g.members {
		s.reasons[m] = api.UnschedulablePod{Pod: m.key, Code: api.GangIncomplete, Reason: why, Cause: cause}
	}
}

// filterShared returns the candidates keep accepts; when it accepts all of them, the slice itself
// (candidate slices are never modified in place, so sharing is safe and undo keeps the old one).
func filterShared(cands []*offering, keep func(*offering) bool) []*offering {
	kept := 0
	for _, o := range cands {
		if keep(o) {
			kept++
		}
	}
	if kept == len(cands) {
		return cands
	}
	out := make([]*offering, 0, kept)
	for _, o := range cands {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}
