package simulator

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
)

// openNode opens a new node for the pod. Every pool is asked for the offerings that can hold the
// pod on an empty node (its claims included); the pool whose cheapest such offering is cheapest
// wins, ties going to the higher weight (pools are sorted by weight). The node keeps all those
// offerings as candidates.
func (s *state) openNode(pi *podInfo, r restriction) (failure, bool) {
	if s.dra != nil {
		if m, why := s.dra.pinned(pi); m != nil {
			return failure{newNode: why}, false
		}
	}
	if s.newNodeCap > 0 && len(s.nodes) >= s.newNodeCap {
		return failure{newNode: "no further new node may be opened"}, false
	}
	var best, all []*offering
	var bestPool *poolInfo
	limited := false
	empty := make(vec, len(s.dims.names))
	for _, pl := range s.pools {
		var cands []*offering
		for _, o := range pl.offs {
			if r.allows(o) && s.offeringCompatible(pi.sig, o) && s.fitsEmpty(pi, empty, o) && offeringCarriesKeys(pi, o) && s.reservationOpen(o) && !s.closesDomain(o) {
				cands = append(cands, o)
			}
		}
		if len(cands) == 0 {
			continue
		}
		if !s.withinLimits(pl, nil, cands) {
			limited = true
			continue
		}
		if best == nil || cheapest(cands).price < cheapest(best).price {
			best, bestPool = cands, pl
		}
		if s.softOn && pi.soft != nil {
			all = append(all, cands...)
		}
	}
	if best == nil {
		return failure{limit: limited, newNode: noOffering}, false
	}
	n := &simNode{name: s.newName(bestPool), pool: bestPool, cands: best, used: empty, labels: map[string]string{}}
	zone, ok := s.chooseZone(pi, n, best)
	if !ok {
		return failure{newNode: "no zone of a new node satisfies them"}, false
	}
	if soft := s.softNarrow(pi, n, all, cheapest(best).price); len(soft) != len(all) {
		// The pool of the cheapest well-scored offering, where its limits and the pod's hard
		// constraints allow it; otherwise the cost choice stands.
		pl := cheapest(soft).pool
		soft = filterShared(soft, func(o *offering) bool { return o.pool == pl })
		if s.withinLimits(pl, nil, soft) {
			if z, ok := s.chooseZone(pi, n, soft); ok {
				if z == "" {
					z = oneZone(soft)
				}
				if pl != bestPool {
					n.name = s.newName(pl) // the name starts with the pool's
				}
				best, bestPool, zone = soft, pl, z
				n.pool, n.cands = pl, soft
			}
		}
	}
	if zone != "" {
		best = inZone(best, zone)
	}
	mark := s.checkpoint()
	n.idx = len(s.nodes)
	s.nodes = append(s.nodes, n)
	bestPool.nodes++
	s.undo = append(s.undo, func() {
		s.setChosen(n, nil)
		bestPool.nodes--
		s.nodes = s.nodes[:len(s.nodes)-1]
	})
	if s.dra != nil && pi.dra != nil {
		if best, ok = s.allocateOnNew(pi, n, best); !ok {
			s.revert(mark)
			return failure{newNode: "its claims cannot be allocated on a new node"}, false
		}
	}
	s.commit(pi, n, best, zone)
	return failure{}, true
}

// noOffering is openNode's failure when no offering can hold the pod on an empty node.
const noOffering = "no offering can hold it"

// newName returns a deterministic, unique node name: prefix, pool, and five base-36 characters
// hashed from the seed and a counter.
func (s *state) newName(pl *poolInfo) string {
	s.newCount++
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", s.in.Options.Seed, s.newCount)))
	suffix := strconv.FormatUint(binary.BigEndian.Uint64(sum[:8])%60466176, 36) // 36^5
	for len(suffix) < 5 {
		suffix = "0" + suffix
	}
	return s.in.Options.NodeNamePrefix + pl.Name + "-" + suffix
}

// chooseZone returns the zone a new node must be pinned to for the pod ("" when the pod's
// constraints do not depend on the zone), and false when no candidate zone satisfies them. Among
// allowed zones it prefers the one with the fewest pods of the pod's hard (DoNotSchedule) spread
// groups, then the one with the cheapest candidate (ScheduleAnyway spread is a soft constraint,
// softNarrow).
func (s *state) chooseZone(pi *podInfo, n *simNode, cands []*offering) (string, bool) {
	if n.zone != "" || !s.zoneSensitive(pi) {
		return n.zone, s.topologyAllows(pi, n, n.zone)
	}
	price := map[string]float64{}
	low := map[string]*offering{}
	var zones []string
	for _, o := range cands {
		p, seen := price[o.zone]
		if !seen {
			zones = append(zones, o.zone)
		}
		if !seen || o.price < p {
			price[o.zone], low[o.zone] = o.price, o
		}
	}
	sort.Strings(zones)
	best, bestCount := "", int32(0)
	for _, z := range zones {
		if !s.topologyAllows(pi, n, z) {
			continue
		}
		var c int32
		for _, sc := range pi.spread {
			if sc.key == LabelZone && sc.hard {
				c += s.trackers.list[sc.tracker].counts[z]
			}
		}
		// At the same count and price, a zone where the node opens no domain that a zone spread
		// of the cluster's pods cannot use (opensDomain) is better: keepSpreadDomains cannot move
		// a node whose zone was chosen here.
		tie := best != "" && c == bestCount && price[z] == price[best]
		if best == "" || c < bestCount || c == bestCount && price[z] < price[best] ||
			tie && s.opensDomain(low[best], n) != nil && s.opensDomain(low[z], n) == nil {
			best, bestCount = z, c
		}
	}
	return best, best != ""
}

// zoneSensitive reports whether any constraint the pod is subject to is keyed by zone.
func (s *state) zoneSensitive(pi *podInfo) bool {
	for _, t := range pi.matches {
		if tr := s.trackers.list[t]; tr.key == LabelZone && !tr.preferredOnly {
			return true
		}
	}
	for _, a := range pi.antiAgainst {
		if s.trackers.list[s.antiTerms[a].tracker].key == LabelZone {
			return true
		}
	}
	for _, c := range pi.spread {
		if c.key == LabelZone && c.hard {
			return true
		}
	}
	for _, t := range append(pi.affinity, pi.anti...) {
		if t.key == LabelZone {
			return true
		}
	}
	return false
}
