package simulator

import (
	"sort"
)

// repackClass is one kind of node the lower bound's LP buys for a group: a pool, instance family
// and capacity type, with the LP's chosen offering as the largest size and target, the total
// allocatable the LP buys of it.
type repackClass struct {
	pool   *poolInfo
	family string
	ct     string
	top    *offering
	target []float64 // per dimension: Σ x·alloc over the LP's offerings of the class
	used   []float64
	offs   map[int]bool // the class's offerings: its family and capacity type, no larger than top
	pods   []*podInfo
}

// repackLP re-packs each lower-bound group after first fit, guided by the group's LP solution.
//
// First fit fills a node up to its largest candidate and then buys the cheapest offering that
// holds what landed there, so a node's CPU-to-memory mix is whatever the pod order gave it: on
// mixed workloads nodes run full on one resource with the other partly idle, and they grow into
// the largest sizes even when a smaller size is cheaper per resource. The LP relaxation knows
// better: it buys a mix of offerings (e.g. compute-optimised and general-purpose nodes of the
// most price-efficient size) whose allocatable sums exactly to the demand. repackLP follows it:
//  1. pods are dealt to the LP's node classes (pool, family, capacity type) so that every class's
//     share fills its target allocatable evenly in every resource (each pod goes where it raises
//     the class's fullest resource least);
//  2. each class's pods are ordered so that every prefix of the stream keeps the class's resource
//     mix (the next pod is taken from the resources that the stream has used least), and placed
//     first fit on nodes that may only be bought as that class — each node then fills evenly and
//     the last one shrinks to the smallest size that holds it.
//
// Placement goes through tryNode and openNode, so every constraint is checked as in first fit.
// The re-pack is kept only when it lowers the plan's price, and is undone otherwise. Groups with
// gangs of a topology, DRA claims or constraints split cannot keep (co-location, other topology
// keys) are left alone.
//
// It reports whether a re-pack was kept; the caller then runs consolidation again, which moves
// the pods of the classes' last, partly filled nodes into the little room left on the full ones.
func (s *state) repackLP() bool {
	kept := false
	for _, g := range s.boundGroups() {
		if s.repackGroup(g) {
			kept = true
		}
	}
	s.undo = s.undo[:0]
	return kept
}

func (s *state) repackGroup(g *boundGroup) bool {
	if len(g.devices) > 0 || len(g.pods) < 2 {
		return false
	}
	inGroup := make(map[*podInfo]bool, len(g.pods))
	for _, pi := range g.pods {
		if pi.dra != nil {
			return false
		}
		inGroup[pi] = true
	}
	var nodes []*simNode
	for _, n := range s.nodes {
		if n.existing || n.removed || len(n.pods) == 0 {
			continue
		}
		if !inGroup[n.pods[0]] {
			continue
		}
		if !s.splittable(n, false) {
			return false
		}
		for _, pi := range n.pods {
			if !inGroup[pi] {
				return false
			}
		}
		nodes = append(nodes, n)
	}
	if len(nodes) < 2 {
		return false
	}
	_, offs, x, ok := s.lpSolution(g)
	if !ok {
		return false
	}
	classes := s.repackClasses(offs, x)
	if len(classes) == 0 {
		return false
	}
	mark := s.checkpoint()
	before := s.budget
	var pods []*podInfo
	for _, n := range nodes {
		pods = append(pods, s.clear(n)...)
	}
	sortPods(pods, s.gpuDims)
	rest := s.deal(pods, classes)
	placed := true
	for _, c := range classes {
		// Nodes opened for the class may only be bought as one of its offerings.
		if !s.placeOnOpened(s.stream(c), restriction{pool: c.pool, offs: c.offs}) {
			placed = false
			break
		}
	}
	for _, pi := range rest {
		if !placed {
			break
		}
		if _, ok := s.placeOne(pi, restriction{}); !ok {
			placed = false
		}
	}
	if !placed || s.budget >= before-1e-9 {
		s.revert(mark)
		return false
	}
	return true
}

// repackClasses turns the LP's solution into node classes, one per pool, family and capacity
// type among the offerings it buys.
func (s *state) repackClasses(offs []*offering, x []float64) []*repackClass {
	type key struct {
		pool   *poolInfo
		family string
		ct     string
	}
	byKey := map[key]*repackClass{}
	var classes []*repackClass
	for j, o := range offs {
		if x[j] <= 1e-9 {
			continue
		}
		k := key{o.pool, family(o.it.Name), string(o.ct)}
		c := byKey[k]
		if c == nil {
			c = &repackClass{pool: o.pool, family: k.family, ct: k.ct, top: o,
				target: make([]float64, len(s.dims.names)), used: make([]float64, len(s.dims.names))}
			byKey[k] = c
			classes = append(classes, c)
		}
		if o.price > c.top.price {
			c.top = o
		}
		for d, a := range o.alloc {
			c.target[d] += x[j] * float64(a)
		}
	}
	for _, c := range classes {
		c.offs = map[int]bool{}
		for _, o := range c.pool.offs {
			if family(o.it.Name) == c.family && string(o.ct) == c.ct && noLarger(o.alloc, c.top.alloc) {
				c.offs[o.idx] = true
			}
		}
	}
	return classes
}

func noLarger(a, b vec) bool {
	for i := range a {
		if a[i] > b[i] {
			return false
		}
	}
	return true
}

// deal gives each pod to the class where it raises the class's fullest resource (relative to
// the class's target) least, among the classes whose top offering can hold it, and returns the
// pods no class can hold.
func (s *state) deal(pods []*podInfo, classes []*repackClass) []*podInfo {
	var rest []*podInfo
	zero := make(vec, len(s.dims.names))
	for _, pi := range pods {
		var best *repackClass
		bestScore, bestAfter := 0.0, 0.0
		for _, c := range classes {
			if !s.offeringCompatible(pi.sig, c.top) || !s.fitsEmpty(pi, zero, c.top) {
				continue
			}
			var was, after float64
			for d, t := range c.target {
				if t <= 0 {
					continue
				}
				was = max(was, c.used[d]/t)
				after = max(after, (c.used[d]+float64(pi.req[d]))/t)
			}
			if score := after - was; best == nil || after < bestAfter-1e-12 || after < bestAfter+1e-12 && score < bestScore {
				best, bestScore, bestAfter = c, score, after
			}
		}
		if best == nil {
			rest = append(rest, pi)
			continue
		}
		for d, r := range pi.req {
			best.used[d] += float64(r)
		}
		best.pods = append(best.pods, pi)
	}
	return rest
}

// stream orders a class's pods so that every prefix keeps the class's resource mix: pods are
// queued by the resource they use most of (relative to the top offering's allocatable), largest
// first, and the next pod comes from the queue of the resource the stream has used least.
func (s *state) stream(c *repackClass) []*podInfo {
	alloc := c.top.alloc
	queues := map[int][]*podInfo{}
	var dimsUsed []int
	for _, pi := range c.pods { // already largest first
		dom, best := -1, -1.0
		for d, r := range pi.req {
			if alloc[d] <= 0 || r <= 0 {
				continue
			}
			if f := float64(r) / float64(alloc[d]); f > best {
				dom, best = d, f
			}
		}
		if _, ok := queues[dom]; !ok {
			dimsUsed = append(dimsUsed, dom)
		}
		queues[dom] = append(queues[dom], pi)
	}
	sort.Ints(dimsUsed)
	fill := make([]float64, len(alloc))
	out := make([]*podInfo, 0, len(c.pods))
	for len(out) < len(c.pods) {
		pick := -2
		for _, d := range dimsUsed {
			if len(queues[d]) == 0 {
				continue
			}
			if pick == -2 || d >= 0 && (pick < 0 || fill[d] < fill[pick]) {
				pick = d
			}
		}
		pi := queues[pick][0]
		queues[pick] = queues[pick][1:]
		out = append(out, pi)
		for d, r := range pi.req {
			if alloc[d] > 0 {
				fill[d] += float64(r) / float64(alloc[d])
			}
		}
	}
	return out
}
