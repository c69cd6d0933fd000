package simulator

import "sort"

// consolidate improves the packing: for each new node, least utilised first, it tries to move
// all of its pods onto the other nodes (existing, in-flight and new) and drop it. A move is kept
// when the plan's total price falls — the receiving nodes may grow into bigger candidates, so a
// move that only shifts cost is undone. Nodes holding gang members are left alone.
func (s *state) consolidate() {
	var order []*simNode
	for _, n := range s.nodes {
		if !n.existing && !n.removed && len(n.pods) > 0 && !hasGang(n) {
			order = append(order, n)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return utilisation(order[i]) < utilisation(order[j]) })
	s.improving = true
	defer func() { s.improving = false }()
	for _, n := range order {
		mark := s.checkpoint()
		before := s.budget
		if s.evacuate(n) && s.budget < before-1e-9 {
			continue
		}
		s.revert(mark)
	}
	s.undo = s.undo[:0]
}

// evacuate removes n and re-places its pods on other nodes without opening new ones.
func (s *state) evacuate(n *simNode) bool {
	pods := s.clear(n)
	for _, pi := range pods {
		placed := false
		for _, m := range s.nodes {
			if !m.removed && s.tryNode(pi, m, restriction{}) {
				placed = true
				break
			}
		}
		if !placed {
			return false
		}
	}
	return true
}

func hasGang(n *simNode) bool {
	for _, p := range n.pods {
		if p.gang != nil {
			return true
		}
	}
	return false
}

// utilisation is the larger of the CPU and memory shares the node's pods use of its chosen
// offering.
func utilisation(n *simNode) float64 {
	a := n.chosen.alloc
	return max(float64(n.used[dimCPU])/float64(max(a[dimCPU], 1)), float64(n.used[dimMemory])/float64(max(a[dimMemory], 1)))
}

// clear removes every pod from a new node (and its claim allocations) and drops the node,
// undoably, and returns the pods.
func (s *state) clear(n *simNode) []*podInfo {
	pods := s.takePods(n)
	s.drop(n)
	return pods
}

// takePods removes every pod the simulation placed on the node, and its claim allocations,
// undoably, and returns them.
func (s *state) takePods(n *simNode) []*podInfo {
	pods := n.pods
	prevUsed := n.used.clone()
	var uncount []func()
	for _, pi := range pods {
		uncount = append(uncount, s.uncountPod(pi, n))
	}
	n.pods = nil
	for i := range n.used {
		n.used[i] = 0
	}
	s.undo = append(s.undo, func() {
		for _, f := range uncount {
			f()
		}
		n.pods = pods
		copy(n.used, prevUsed)
	})
	s.clearDRA(n)
	return append([]*podInfo(nil), pods...)
}

// drop removes an empty new node from the plan, undoably.
func (s *state) drop(n *simNode) {
	prev := n.chosen
	n.removed = true
	n.pool.nodes--
	s.setChosen(n, nil)
	s.undo = append(s.undo, func() {
		n.removed = false
		n.pool.nodes++
		s.setChosen(n, prev)
	})
}

// uncountPod reverses countPod and returns the function that counts the pod again.
func (s *state) uncountPod(pi *podInfo, n *simNode) func() {
	n.ports.add(pi.ports, -1)
	var done []*tracker
	var doms []string
	sub := func(t *tracker) {
		if d, ok := n.domain(t.key); ok {
			t.counts[d]--
			t.total--
			done, doms = append(done, t), append(doms, d)
		}
	}
	for _, ti := range pi.matches {
		sub(s.trackers.list[ti])
	}
	for _, a := range pi.anti {
		sub(s.trackers.list[a.owner])
	}
	return func() {
		n.ports = n.ports.add(pi.ports, 1)
		for i, t := range done {
			t.counts[doms[i]]++
			t.total++
		}
	}
}
