package simulator

// maxExactPods bounds the exact search: Bell(9) = 21,147 partitions.
const maxExactPods = 9

// exactSmall solves small plans exactly: when at most maxExactPods pods sit on new nodes and none
// has topology spread, pod (anti-)affinity or a gang of topology node, it enumerates every
// partition of them into nodes, prices each block at its cheapest compatible offering, and
// rebuilds the new nodes from the cheapest partition if it beats the heuristic's. A gang without
// topology needs nothing more (all its members are placed or the rebuild is undone); with a gang
// of topology zone every block is priced and opened in one zone, each zone tried. Plans with DRA
// claims on new nodes are left alone: pricing a block would need the allocator for every block
// and offering. (Pods whose extended resources the device plugin serves take part; blocks are
// priced only on offerings that advertise them.)
func (s *state) exactSmall() {
	var pods []*podInfo
	var nodes []*simNode
	for _, n := range s.nodes {
		if n.existing || n.removed || len(n.pods) == 0 {
			continue
		}
		if n.dra != nil && len(n.dra.commits) > 0 {
			return
		}
		nodes = append(nodes, n)
		pods = append(pods, n.pods...)
	}
	if len(pods) < 2 || len(pods) > maxExactPods {
		return
	}
	zonal, boundZone := false, ""
	for _, p := range pods {
		if g := p.gang; g != nil && g.topology == "zone" {
			if g.bound > 0 && (g.boundZone == "" || boundZone != "" && boundZone != g.boundZone) {
				return
			}
			zonal = true
			if g.bound > 0 {
				boundZone = g.boundZone
			}
		} else if g != nil && g.topology != "" {
			return
		}
		if len(p.spread)+len(p.affinity)+len(p.anti)+len(p.antiAgainst) > 0 {
			return
		}
		if p.dra != nil && len(p.dra.claims) > 0 {
			return
		}
	}
	current := 0.0
	for _, n := range nodes {
		current += n.chosen.price
	}
	// A gang of topology zone keeps every block in one zone (its bound members' when it has
	// some): each zone is tried and the cheapest partition kept.
	zones := []string{""}
	if zonal {
		zones = s.offeringZones()
		if boundZone != "" {
			zones = []string{boundZone}
		}
	}
	var blocks []block
	cost, zone := 0.0, ""
	for _, z := range zones {
		if b, c := s.bestPartition(pods, z); b != nil && (blocks == nil || c < cost) {
			blocks, cost, zone = b, c, z
		}
	}
	if blocks == nil || cost >= current-1e-9 {
		return
	}
	mark := s.checkpoint()
	for _, n := range nodes {
		s.clear(n)
	}
	for _, b := range blocks {
		if !s.buildBlock(b.pods, b.offering, zone) {
			s.revert(mark)
			break
		}
	}
	s.undo = s.undo[:0]
}

type block struct {
	pods     []*podInfo
	offering *offering
}

// bestPartition enumerates partitions by restricted growth strings; blocks are priced in zone
// ("": any).
func (s *state) bestPartition(pods []*podInfo, zone string) ([]block, float64) {
	n := len(pods)
	assign := make([]int, n)
	var best []block
	bestCost := -1.0
	var rec func(i, k int)
	rec = func(i, k int) {
		if i == n {
			blocks := make([]block, k)
			for p, b := range assign {
				blocks[b].pods = append(blocks[b].pods, pods[p])
			}
			cost := 0.0
			for j := range blocks {
				o := s.cheapestFor(blocks[j].pods, zone)
				if o == nil {
					return
				}
				blocks[j].offering = o
				cost += o.price
				if bestCost >= 0 && cost >= bestCost {
					return
				}
			}
			best, bestCost = blocks, cost
			return
		}
		for b := 0; b <= k; b++ {
			assign[i] = b
			if b == k {
				rec(i+1, k+1)
			} else {
				rec(i+1, k)
			}
		}
	}
	rec(0, 0)
	return best, bestCost
}

// cheapestFor returns the cheapest offering (of the zone, unless "") that can hold all the pods
// together.
func (s *state) cheapestFor(pods []*podInfo, zone string) *offering {
	sum := make(vec, len(s.dims.names))
	for _, p := range pods {
		sum.add(p.req)
	}
	zero := make(vec, len(sum))
	var best *offering
	for _, o := range s.offerings {
		if best != nil && o.price >= best.price || zone != "" && o.zone != zone || !fits(zero, sum, o.alloc) {
			continue
		}
		ok := true
		for _, p := range pods {
			if !s.offeringCompatible(p.sig, o) {
				ok = false
				break
			}
		}
		if ok {
			best = o
		}
	}
	return best
}

// buildBlock opens one node for the block in the offering's pool (and the zone, unless "") and
// places its pods there.
func (s *state) buildBlock(pods []*podInfo, o *offering, zone string) bool {
	r := restriction{pool: o.pool, maxPrice: o.price, zone: zone}
	if _, ok := s.openNode(pods[0], r); !ok {
		return false
	}
	n := s.nodes[len(s.nodes)-1]
	for _, p := range pods[1:] {
		if !s.tryNode(p, n, restriction{node: n, pool: o.pool, maxPrice: o.price, zone: zone}) {
			return false
		}
	}
	return true
}
