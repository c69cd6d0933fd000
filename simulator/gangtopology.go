package simulator

import "sort"

// placeGangOnNode puts every member on one node: an existing or in-flight node if one can take
// them all (or, under newNodeCap, a new node already open), else one new node opened by the first
// member and restricted to it. Members already bound fix the node.
func (s *state) placeGangOnNode(g *gang) (failure, bool) {
	if g.bound > 0 {
		i := s.nodeIndex(g.boundNode)
		if g.boundNode == "" || i < 0 {
			return failure{newNode: "the gang's bound members are not on one known node"}, false
		}
		if s.placeMembers(g, restriction{node: s.nodes[i]}) {
			return failure{}, true
		}
		return failure{newNode: "the node of the gang's bound members cannot hold the rest"}, false
	}
	for _, n := range s.nodes {
		// Under a cap on new nodes (a disruption action may open one), the new nodes already
		// open are tried too; purchases keep opening a node of the gang's own.
		if !n.available() || !n.existing && s.newNodeCap == 0 {
			continue
		}
		mark := s.checkpoint()
		if s.placeMembers(g, restriction{node: n}) {
			return failure{}, true
		}
		s.revert(mark)
	}
	mark := s.checkpoint()
	f, ok := s.openNode(g.members[0], restriction{})
	if !ok {
		return f, false
	}
	n := s.nodes[len(s.nodes)-1]
	for _, m := range g.members[1:] {
		if !s.tryNode(m, n, restriction{node: n}) {
			s.revert(mark)
			return failure{newNode: "no single node can hold the whole gang"}, false
		}
	}
	return failure{}, true
}

// placeGangInZone tries each zone in turn and keeps the first where every member fits.
func (s *state) placeGangInZone(g *gang) (failure, bool) {
	zoneSet := map[string]bool{}
	for _, z := range s.offeringZones() {
		zoneSet[z] = true
	}
	for _, n := range s.nodes {
		if z := n.labels[LabelZone]; z != "" {
			zoneSet[z] = true
		}
	}
	zones := make([]string, 0, len(zoneSet))
	for z := range zoneSet {
		if g.bound == 0 || z == g.boundZone {
			zones = append(zones, z)
		}
	}
	sort.Strings(zones)
	var f failure
	for _, z := range zones {
		mark := s.checkpoint()
		ok := true
		for _, m := range g.members {
			if f, ok = s.placeOne(m, restriction{zone: z}); !ok {
				break
			}
		}
		if ok {
			return failure{}, true
		}
		s.revert(mark)
	}
	return f, false
}

func (s *state) placeMembers(g *gang, r restriction) bool {
	for _, m := range g.members {
		if !s.tryNode(m, r.node, r) {
			return false
		}
	}
	return true
}

// offeringZones lists, sorted, the zones of the offerings.
func (s *state) offeringZones() []string {
	seen := map[string]bool{}
	var zones []string
	for _, o := range s.offerings {
		if !seen[o.zone] {
			seen[o.zone] = true
			zones = append(zones, o.zone)
		}
	}
	sort.Strings(zones)
	return zones
}
