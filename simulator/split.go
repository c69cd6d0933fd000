package simulator

import "sort"

// maxSplitCaps bounds how many smaller sizes the split pass tries per node.
const maxSplitCaps = 8

// split improves on first-fit's big nodes: instance sizes come in steps (16, 32, 48 vCPU), so one
// node that needs 21 vCPU costs as much as 32 while 16 + 8 costs 24. For each new node it
// re-packs the pods, largest first, into new nodes capped at each of up to maxSplitCaps cheaper
// offering prices, and keeps the cheapest result if it beats the node. Nodes whose pods need
// hostname pod affinity (co-location), belong to gangs of topology node, or have constraints keyed
// by other labels than zone and hostname are left alone: splitting only separates pods and keeps
// the zone, which every other constraint tolerates (a gang of topology zone stays in its zone, and
// a gang without topology only asks that all its members be placed, which a kept split does).
func (s *state) split() {
	s.improving = true
	defer func() { s.improving = false }()
	var order []*simNode
	for _, n := range s.nodes {
		if !n.existing && !n.removed && len(n.pods) > 1 && s.splittable(n, true) {
			order = append(order, n)
		}
	}
	for i := 0; i < len(order); i++ {
		n := order[i]
		if n.removed || len(n.pods) < 2 {
			continue
		}
		zone := splitZone(n)
		caps := s.splitCaps(n, zone)
		best, bestBudget := -1.0, s.budget
		for _, c := range caps {
			mark := s.checkpoint()
			if s.repack(n, zone, c) && s.budget < bestBudget-1e-9 {
				best, bestBudget = c, s.budget
			}
			s.revert(mark)
		}
		if best >= 0 {
			mark := s.checkpoint()
			opened := len(s.nodes)
			if !s.repack(n, zone, best) {
				s.revert(mark)
			} else {
				// The nodes the split opened are split in turn: one cap gives every part the
				// same size limit, where a part holding one large pod may need it and the
				// others not (an 8-GPU node into a 4-GPU one for a 2-GPU pod and two 1-GPU
				// pods, and four 1-GPU nodes for the rest).
				for _, m := range s.nodes[opened:] {
					if !m.removed && len(m.pods) > 1 {
						order = append(order, m)
					}
				}
			}
		}
		s.undo = s.undo[:0]
	}
}

// splittable reports whether n's pods may be spread over other new nodes: of its zone when
// keepZone, of any zone otherwise (then a member of a gang of topology zone keeps the node whole,
// since its members are placed one by one).
func (s *state) splittable(n *simNode, keepZone bool) bool {
	for _, p := range n.pods {
		if g := p.gang; g != nil && (g.topology == "node" || (g.topology != "" && !keepZone)) {
			return false
		}
		for _, t := range p.affinity {
			if t.key != LabelZone {
				return false
			}
		}
		for _, c := range p.spread {
			if c.key != LabelZone && c.key != LabelHostname {
				return false
			}
		}
		for _, t := range p.anti {
			if t.key != LabelZone && t.key != LabelHostname {
				return false
			}
		}
	}
	return true
}

// splitCaps lists up to maxSplitCaps distinct prices below the node's, highest first, among its
// pool's offerings (of zone, unless "") that can hold its largest pod.
func (s *state) splitCaps(n *simNode, zone string) []float64 {
	largest := n.pods[0]
	for _, p := range n.pods[1:] {
		if p.req[dimCPU]+p.req[dimMemory]>>22 > largest.req[dimCPU]+largest.req[dimMemory]>>22 {
			largest = p
		}
	}
	zero := make(vec, len(s.dims.names))
	seen := map[float64]bool{}
	var caps []float64
	for _, o := range n.pool.offs {
		if o.price < n.chosen.price && !seen[o.price] && (zone == "" || o.zone == zone) &&
			s.offeringCompatible(largest.sig, o) && s.fitsEmptySpec(largest, zero, o) {
			seen[o.price] = true
			caps = append(caps, o.price)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(caps)))
	if len(caps) > maxSplitCaps {
		// Keep an even spread of sizes, from the largest cheaper one down.
		picked := make([]float64, 0, maxSplitCaps)
		for i := 0; i < maxSplitCaps; i++ {
			picked = append(picked, caps[i*len(caps)/maxSplitCaps])
		}
		caps = picked
	}
	return caps
}

// repack moves n's pods into new nodes of its pool and of zone (splitZone) priced at most
// capPrice, first fit among the nodes it opens, largest pod first. It reports false when a pod
// finds no place.
func (s *state) repack(n *simNode, zone string, capPrice float64) bool {
	pods := s.clear(n)
	sortPods(pods, s.gpuDims)
	return s.placeOnOpened(pods, restriction{zone: zone, pool: n.pool, maxPrice: capPrice})
}

// splitZone is the zone the nodes a split opens must be in: the node's, or, when its zone is
// not pinned but it holds members of a gang of topology zone (placed under a zone restriction,
// so all its candidates are in that zone), the zone of the offering it is bought as.
func splitZone(n *simNode) string {
	if n.zone != "" || n.chosen == nil {
		return n.zone
	}
	for _, p := range n.pods {
		if p.gang != nil && p.gang.topology == "zone" {
			return n.chosen.zone
		}
	}
	return ""
}

// placeOnOpened places the pods in order, first fit on the nodes it has opened, opening one under
// r when none has room. It reports false when a pod finds no place.
func (s *state) placeOnOpened(pods []*podInfo, r restriction) bool {
	var opened []*simNode
	for _, pi := range pods {
		placed := false
		for _, m := range opened {
			if s.tryNode(pi, m, r) {
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		if _, ok := s.openNode(pi, r); !ok {
			return false
		}
		opened = append(opened, s.nodes[len(s.nodes)-1])
	}
	return true
}
