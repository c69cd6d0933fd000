package simulator

import "sort"

// lowerBound returns a lower bound on the $/h of any set of new nodes that holds the pods this
// plan puts on new nodes.
//
// Pods are grouped by the offerings able to hold them alone (compatible labels and taints, enough
// room on an empty node); groups whose offering sets overlap are merged, which only relaxes the
// problem. For each merged group the bound is the larger of
//   - the LP relaxation of covering the group's total demand, resource by resource, with
//     fractional nodes of its offerings: min Σ price(o)·x(o) s.t. Σ alloc(o,r)·x(o) ≥ demand(r);
//   - the cheapest offering able to hold the group's most demanding pod (one node is needed).
//
// The LP has one more row when pods of the group repel each other by hostname (required
// anti-affinity whose selector matches the pods themselves): k such pods need k distinct nodes,
// so Σ x(o) ≥ k, which charges the per-node overhead those nodes cannot avoid.
//
// Groups use disjoint offerings, so their bounds add up. Pool limits and topology are ignored, so
// the bound stays valid (it may only get weaker).
func (s *state) lowerBound() float64 {
	groups := s.boundGroups()
	var total float64
	for _, g := range groups {
		total += max(s.lpBound(g), s.singleNodeBound(g))
	}
	return total
}

type boundGroup struct {
	pods []*podInfo
	offs map[int]bool
}

// boundGroups groups the pods on new nodes by signature. A signature's offerings are those its
// pods' labels and taints accept and that hold the component-wise smallest of its pods on an
// empty node — a superset of what any one pod can use, which only relaxes the bound.
func (s *state) boundGroups() []*boundGroup {
	bySig := map[int]*boundGroup{}
	var order []int
	minReq := map[int]vec{}
	for _, n := range s.nodes {
		if n.existing || n.removed {
			continue
		}
		for _, pi := range n.pods {
			g := bySig[pi.sig]
			if g == nil {
				g = &boundGroup{}
				bySig[pi.sig] = g
				order = append(order, pi.sig)
				minReq[pi.sig] = pi.req.clone()
			}
			g.pods = append(g.pods, pi)
			for r, x := range pi.req {
				minReq[pi.sig][r] = min(minReq[pi.sig][r], x)
			}
		}
	}
	zero := make(vec, len(s.dims.names))
	owner := map[int]*boundGroup{} // offering → group
	var groups []*boundGroup
	for _, sig := range order {
		g := bySig[sig]
		g.offs = map[int]bool{}
		for _, o := range s.offerings {
			if s.offeringCompatible(sig, o) && fits(zero, minReq[sig], o.alloc) {
				g.offs[o.idx] = true
			}
		}
		for idx := range g.offs {
			if h := owner[idx]; h != nil && h != g && h.offs != nil {
				g.pods = append(g.pods, h.pods...)
				for k := range h.offs {
					g.offs[k] = true
				}
				h.pods, h.offs = nil, nil
			}
		}
		for idx := range g.offs {
			owner[idx] = g
		}
		groups = append(groups, g)
	}
	var out []*boundGroup
	for _, g := range groups {
		if len(g.pods) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// lpBound solves the group's covering LP. Rows are scaled by the demand so that every right-hand
// side is 1 (CPU in milli-cores and memory in bytes differ by 10^8).
func (s *state) lpBound(g *boundGroup) float64 {
	demand := make(vec, len(s.dims.names))
	for _, pi := range g.pods {
		demand.add(pi.req)
	}
	var rows []int
	for r, d := range demand {
		if d > 0 {
			rows = append(rows, r)
		}
	}
	var offs []*offering
	for _, o := range s.offerings {
		if g.offs[o.idx] {
			offs = append(offs, o)
		}
	}
	A := make([][]float64, len(rows), len(rows)+1)
	b := make([]float64, len(rows), len(rows)+1)
	c := make([]float64, len(offs))
	for j, o := range offs {
		c[j] = o.price
	}
	for i, r := range rows {
		A[i] = make([]float64, len(offs))
		for j, o := range offs {
			A[i][j] = float64(max(o.alloc[r], 0)) / float64(demand[r])
		}
		b[i] = 1
	}
	if k := s.distinctNodesNeeded(g); k > 1 {
		row := make([]float64, len(offs))
		for j := range row {
			row[j] = 1 / float64(k)
		}
		A, b = append(A, row), append(b, 1)
	}
	v, ok := lpMinCover(A, b, c)
	if !ok {
		return 0
	}
	return v
}

// singleNodeBound is the price of the cheapest offering that can hold the group's most demanding
// pod: offerings are scanned in price order, so each pod stops at its first fit.
func (s *state) singleNodeBound(g *boundGroup) float64 {
	offs := make([]*offering, 0, len(g.offs))
	for _, o := range s.offerings {
		if g.offs[o.idx] {
			offs = append(offs, o)
		}
	}
	sort.SliceStable(offs, func(i, j int) bool { return offs[i].price < offs[j].price })
	zero := make(vec, len(s.dims.names))
	var bound float64
	for _, pi := range g.pods {
		for _, o := range offs {
			if fits(zero, pi.req, o.alloc) && s.offeringCompatible(pi.sig, o) {
				bound = max(bound, o.price)
				break
			}
		}
	}
	return bound
}

// distinctNodesNeeded is the largest number of the group's pods that repel each other by
// hostname anti-affinity, and so need as many nodes.
func (s *state) distinctNodesNeeded(g *boundGroup) int {
	counts := map[int]int{}
	best := 0
	for _, pi := range g.pods {
		for _, a := range pi.anti {
			if a.key == LabelHostname && s.trackers.list[a.tracker].matches(pi.pod) {
				counts[a.tracker]++
				best = max(best, counts[a.tracker])
			}
		}
	}
	return best
}
