package simulator

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// configBound is a lower bound on the $/h of any set of new nodes that holds the pods this plan
// puts on new nodes, tighter than lowerBound's resource LP: the configuration (Gilmore–Gomory)
// LP. Its columns are node patterns — an offering and how many pods of each class one node of
// it holds — and it covers every class's pods at least min Σ price·x. A pattern honours what
// any node of the offering must: each resource the pods request (CPU, memory, pods, device-plugin
// GPUs, time-sliced replicas and MIG slices, which the offerings advertise as resources), the
// devices of DRA claims (deviceCapacity), and hostname anti-affinity (two pods one of which
// repels the other by hostname never share a node). Everything else (zones, spread, pod
// affinity, pool limits, ports) is left out, which only relaxes the LP.
//
// Under device-plugin MIG the plan's offering has the layout chosen for the pending demand, but
// another node of the type may be partitioned otherwise, and a split of the pods over nodes of
// other layouts may need fewer nodes: a pattern of a MIG offering may use any layout of its GPU
// model on each GPU (migNodeCaps). The offering becomes one offer per Pareto-maximal choice of
// the node's slice counts (capped at the component's demand), and a pod whose slices fit some
// choice may use it; patterns of other offerings are as before. Pricing only the plan's
// layouts went above the optimum (TestMIGBoundNeverAboveOptimum: 4 of its 60 cases).
//
// The LP is solved by column generation: a restricted LP over the patterns found so far
// (cbLP), whose duals π price the classes, and a pricing problem per offering — the most a node
// of it can hold at those prices, a small bounded knapsack with one row per resource and
// conflicts, solved by branch and bound. The bound reported is Farley's: for any π ≥ 0,
// Σ b·π / θ with θ = max(1, max over offerings of (max pattern value)/price) is the value of a
// feasible dual (π/θ) of the full LP, hence a lower bound whatever the restricted LP's columns.
// When pricing proves that no pattern prices out (θ = 1) it is the LP's optimum. When the
// search of an offering runs out of its budget, its knapsack's relaxation (an upper bound on
// the most it can hold) takes its place in θ, so the bound stays valid, only weaker.
//
// Work is counted, not timed (the simulator reads no clock): pods on new nodes (cbMaxPods: a plan
// at scale keeps the resource LP alone — `tiler plan` on 20,000 pending pods spent 45 % more CPU
// with the configuration LP), classes per component
// (cbMaxClasses), branch-and-bound nodes per pricing (cbNodeBudget), the work of one component
// (cbMaxWork, pivots and search nodes weighted by their size) and of all (cbTotalWork); beyond
// them a component keeps what was proven. Each component's bound is at least its resource LP
// (the old bound on its pods), and a component whose restricted LP, once the greedy pricing finds
// nothing, is within 2 % of that (before intCoverBound's splits) is not priced exactly: random
// CPU-only sizes gain a few per cent there at a high price, while whole GPUs, MIG slices and
// anti-affinity gain tens of per cent.
func (s *state) configBound() float64 {
	cb := s.newConfigProblem()
	if cb == nil {
		return 0
	}
	var total float64
	comps := cb.components()
	sort.SliceStable(comps, func(i, j int) bool { return len(comps[i]) < len(comps[j]) })
	for _, comp := range comps {
		floor, skip := cb.resourceBound(comp)
		total += max(cb.solve(comp, skip), floor)
	}
	return total
}

// resourceBound is lowerBound's resource LP for the component's pods alone, on every offering
// one of them may use: where the configuration LP runs out of budget, the component still gets
// the bound it had. It also returns that bound without intCoverBound's splits and extended
// resources' tables, against which solve decides whether the configuration LP is worth proving
// (with their higher floor it skipped components where it had gained, and the bound fell).
func (cp *configProblem) resourceBound(comp []int) (floor, skip float64) {
	g := &boundGroup{offs: map[int]bool{}}
	bySig := map[int]int{} // signature → part: its classes' offerings together
	for _, ci := range comp {
		c := cp.classes[ci]
		g.pods = append(g.pods, c.pods...)
		i, ok := bySig[c.rep.sig]
		if !ok {
			i = len(g.parts)
			bySig[c.rep.sig] = i
			g.parts = append(g.parts, boundPart{offs: map[int]bool{}})
		}
		g.parts[i].pods = append(g.parts[i].pods, c.pods...)
		for _, o := range c.offs {
			g.offs[o] = true
			g.parts[i].offs[o] = true
		}
	}
	whole, split := cp.s.intCoverBound(g)
	lp := max(cp.s.lpBound(g), cp.s.singleNodeBound(g))
	return max(lp, split), max(lp, whole)
}

const (
	cbMaxPods    = 2000
	cbMaxClasses = 400
	cbNodeBudget = 4000
	cbMaxWork    = 40_000_000 // per component
	cbTotalWork  = 100_000_000
	cbMaxRounds  = 200
	cbEps        = 1e-9
)

// cbClass is a class of interchangeable items — pods, or gangs of topology node taken whole
// (gang set; count is then 1 and pods are its members).
type cbClass struct {
	rep    *podInfo
	pods   []*podInfo
	count  int
	gang   bool
	req    vec   // over s.dims
	dev    int64 // devices of claims only this item uses
	offs   []int // compatible offerings (s.offerings indices)
	anti   []int // trackers of its anti-affinity terms that keep pods off its node (nodeAnti)
	hit    []int // those trackers whose selector matches it
	spread []int // its hostname spread trackers of maxSkew 1 (nodeSpread)
	self   bool  // repels its own class
}

type configProblem struct {
	s        *state
	classes  []*cbClass
	conflict [][]bool
	work     int
}

// nodeAnti reports whether a required anti-affinity term keeps the pods it selects off its
// owner's node: by hostname, or by zone (two pods on one node share its zone; every offering's
// node has a zone).
func nodeAnti(a podAffinityTerm) bool { return a.key == LabelHostname || a.key == LabelZone }

// nodeSpread lists the trackers of the pod's hard hostname spread constraints with maxSkew 1
// that select the pod itself: the simulator and the checker take the smallest count over
// hostname domains as 0 (a new node is always possible), so a second pod carrying the same
// constraint never joins a node holding one. A pod that matches the selector without carrying
// the constraint may (only the incoming pod's constraints are checked), so the conflict is
// between carriers only.
func nodeSpread(pi *podInfo) []int {
	var out []int
	for _, c := range pi.spread {
		if c.hard && c.key == LabelHostname && c.maxSkew == 1 && c.selfMatch && !slices.Contains(out, c.tracker) {
			out = append(out, c.tracker)
		}
	}
	sort.Ints(out)
	return out
}

// nodeGangs returns the gangs of topology node all of whose members are among the pods and
// none of which has DRA claims: each holds its members on one node, so the configuration LP
// takes it as one item, their requests summed.
func nodeGangs(pods []*podInfo) map[*gang]bool {
	in := map[*podInfo]bool{}
	for _, pi := range pods {
		in[pi] = true
	}
	out := map[*gang]bool{}
	for _, pi := range pods {
		g := pi.gang
		if g == nil || g.topology != "node" || g.bound > 0 || out[g] {
			continue
		}
		whole := true
		for _, m := range g.members {
			whole = whole && in[m] && m.dra == nil
		}
		if whole && len(g.members) > 1 {
			out[g] = true
		}
	}
	return out
}

// newConfigProblem groups the pods on new nodes into classes of interchangeable items: same
// node-selection signature, claim specs, requests, devices, anti-affinity and spread that keep
// pods apart on a node (nodeAnti, nodeSpread). An item is a pod, or a gang of topology node
// (nodeGangs): its members' requests summed, on the offerings every member may use, conflicting
// with what any member conflicts with.
func (s *state) newConfigProblem() *configProblem {
	var pods []*podInfo
	for _, n := range s.nodes {
		if n.existing || n.removed {
			continue
		}
		pods = append(pods, n.pods...)
	}
	if len(pods) == 0 || len(pods) > cbMaxPods {
		return nil
	}
	antiTrackers := map[int]bool{}
	for _, pi := range pods {
		for _, a := range pi.anti {
			if nodeAnti(a) {
				antiTrackers[a.tracker] = true
			}
		}
	}
	trackerIDs := slices.Sorted(func(yield func(int) bool) {
		for t := range antiTrackers {
			if !yield(t) {
				return
			}
		}
	})
	claimUsers := map[string]int{}
	for _, pi := range pods {
		if pi.dra == nil {
			continue
		}
		for _, c := range pi.dra.claims {
			claimUsers[claimKey(c)]++
		}
	}
	cp := &configProblem{s: s}
	byKey := map[string]*cbClass{}
	gangs := nodeGangs(pods)
	for _, pi := range pods {
		item := []*podInfo{pi}
		if g := pi.gang; g != nil && gangs[g] {
			if g.members[0] != pi {
				continue // the gang is one item, built at its first member
			}
			item = g.members
		}
		c := &cbClass{rep: pi, req: s.dims.grow(make(vec, 0))}
		claimSig := -1
		for _, m := range item {
			for d, v := range m.req {
				c.req[d] += v
			}
			if m.dra != nil {
				if len(m.dra.claims) > 0 {
					claimSig = s.specClaims(m).sig
				}
				for _, cl := range m.dra.claims {
					if claimUsers[claimKey(cl)] == 1 && cl.Status.Allocation == nil {
						c.dev += int64(minDevices(cl))
					}
				}
			}
			for _, a := range m.anti {
				if nodeAnti(a) && !slices.Contains(c.anti, a.tracker) {
					c.anti = append(c.anti, a.tracker)
				}
			}
			for _, t := range nodeSpread(m) {
				if !slices.Contains(c.spread, t) {
					c.spread = append(c.spread, t)
				}
			}
			for _, t := range trackerIDs {
				if s.trackers.list[t].matches(m.pod) && !slices.Contains(c.hit, t) {
					c.hit = append(c.hit, t)
				}
			}
		}
		sort.Ints(c.anti)
		sort.Ints(c.spread)
		sort.Ints(c.hit)
		key := fmt.Sprint(pi.sig, claimSig, []int64(c.req), c.dev, c.anti, c.hit, c.spread)
		if len(item) > 1 {
			key = "gang " + pi.gang.name
		}
		if prev := byKey[key]; prev != nil {
			prev.count++
			prev.pods = append(prev.pods, pi)
			continue
		}
		c.count = 1
		c.pods = item
		c.gang = len(item) > 1
		byKey[key] = c
		cp.classes = append(cp.classes, c)
	}
	zero := make(vec, len(s.dims.names))
	kept := cp.classes[:0]
	for _, c := range cp.classes {
		pi := c.rep
		var spec *claimSet
		if pi.dra != nil && len(pi.dra.claims) > 0 {
			spec = s.specClaims(pi)
		}
		for _, o := range s.offerings {
			if c.gang {
				// Members have no DRA (nodeGangs): every one's labels and taints must accept o,
				// and their sum must fit an empty node of it.
				if s.anyLayoutFits(c.req, o) && !slices.ContainsFunc(c.pods, func(m *podInfo) bool { return !s.offeringCompatible(m.sig, o) }) {
					c.offs = append(c.offs, o.idx)
				}
				continue
			}
			if !s.offeringCompatible(pi.sig, o) {
				continue
			}
			// Either way the simulator may find the pod a place on an empty node of o: the
			// union keeps the set of patterns a superset of the feasible ones.
			if (s.anyLayoutFits(c.req, o) && (spec == nil || s.specReason(spec, o.draClass) == nil)) || s.fitsEmptySpec(pi, zero, o) {
				c.offs = append(c.offs, o.idx)
			}
		}
		// An item no offering holds is on no new node of a valid plan; leaving it out relaxes.
		if len(c.offs) > 0 {
			kept = append(kept, c)
		}
	}
	cp.classes = kept
	cp.conflict = make([][]bool, len(cp.classes))
	for i, a := range cp.classes {
		cp.conflict[i] = make([]bool, len(cp.classes))
		for j, b := range cp.classes {
			cp.conflict[i][j] = intersects(a.anti, b.hit) || intersects(b.anti, a.hit) || intersects(a.spread, b.spread)
		}
		a.self = cp.conflict[i][i]
	}
	return cp
}

func intersects(a, b []int) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// components splits the classes into groups that share no offering: their LPs are independent.
func (cp *configProblem) components() [][]int {
	parent := make([]int, len(cp.classes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[int]int{}
	for i, c := range cp.classes {
		for _, o := range c.offs {
			if j, ok := owner[o]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[o] = i
			}
		}
	}
	groups := map[int][]int{}
	var roots []int
	for i := range cp.classes {
		r := find(i)
		if groups[r] == nil {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], i)
	}
	out := make([][]int, 0, len(roots))
	for _, r := range roots {
		out = append(out, groups[r])
	}
	return out
}

// cbOffer is one offering as the component's pricing sees it: capacity on the component's
// rows (−1: unlimited) and the component's classes it may hold. A device-plugin MIG offering is
// several, one per choice of its node's slice counts over any layouts (migNodeCaps).
type cbOffer struct {
	price   float64
	cap     []int64
	classes []int // local class indices
	has     []bool
}

// solve returns the component's bound: 0 when it is beyond the budgets, has a free offering or
// cannot beat floor (the resource LP's bound) by more than 2 %.
func (cp *configProblem) solve(comp []int, floor float64) float64 {
	if len(comp) > cbMaxClasses || cp.work > cbTotalWork {
		return 0
	}
	work := 0
	defer func() { cp.work += work }()
	s := cp.s
	classes := make([]*cbClass, len(comp))
	for i, ci := range comp {
		classes[i] = cp.classes[ci]
	}
	// Rows of the knapsack: the dimensions some class asks for, then devices.
	var dimsUsed []int
	for d := range s.dims.names {
		for _, c := range classes {
			if d < len(c.req) && c.req[d] > 0 {
				dimsUsed = append(dimsUsed, d)
				break
			}
		}
	}
	withDev := false
	for _, c := range classes {
		withDev = withDev || c.dev > 0
	}
	nrow := len(dimsUsed)
	if withDev {
		nrow++
	}
	weights := make([][]int64, len(classes))
	for i, c := range classes {
		w := make([]int64, nrow)
		for r, d := range dimsUsed {
			w[r] = c.req[d]
		}
		if withDev {
			w[nrow-1] = c.dev
		}
		weights[i] = w
	}
	local := map[int][]int{} // offering → local classes
	var offIdx []int
	for i, c := range classes {
		for _, o := range c.offs {
			if local[o] == nil {
				offIdx = append(offIdx, o)
			}
			local[o] = append(local[o], i)
		}
	}
	sort.Ints(offIdx)
	// The most the component's items ask of each dimension: a device-plugin MIG node's slices
	// beyond it make no difference (migNodeCaps).
	most := make([]int64, len(dimsUsed))
	for i, c := range classes {
		for r := range dimsUsed {
			most[r] += int64(c.count) * weights[i][r]
		}
	}
	byKey := map[string]*cbOffer{}
	var offers []*cbOffer
	for _, idx := range offIdx {
		o := s.offerings[idx]
		if o.price <= 0 {
			return 0 // a free node holds any number of its pods: nothing to bound
		}
		capv := make([]int64, nrow)
		for r, d := range dimsUsed {
			switch {
			case s.dra != nil && o.alloc[d] == 0 && s.dra.isExt(d) && s.dra.mayServe(o):
				capv[r] = -1 // DRA may serve it: not counted in the allocatable
			default:
				capv[r] = max(o.alloc[d], 0)
			}
		}
		if withDev {
			capv[nrow-1] = -1
			if s.dra != nil {
				if n, bounded := s.dra.deviceCapacity(o); bounded {
					capv[nrow-1] = int64(n)
				}
			}
		}
		// A device-plugin MIG node may have any layout per GPU: one offer per choice of slice
		// counts, which together hold every pattern of any such node.
		caps := [][]int64{capv}
		if per, node := s.migNodeCaps(o, dimsUsed, most); node != nil {
			caps = caps[:0]
			for _, n := range node {
				v := slices.Clone(capv)
				for r := range dimsUsed {
					if per[r] && v[r] >= 0 {
						v[r] = n[r]
					}
				}
				caps = append(caps, v)
			}
		}
		for _, capv := range caps {
			key := fmt.Sprint(capv, local[idx])
			if prev := byKey[key]; prev != nil {
				prev.price = min(prev.price, o.price)
				continue
			}
			off := &cbOffer{price: o.price, cap: capv, classes: local[idx], has: make([]bool, len(classes))}
			for _, c := range off.classes {
				off.has[c] = true
			}
			byKey[key] = off
			offers = append(offers, off)
		}
	}
	offers = undominated(offers)
	work += len(offers) * len(offers)

	pr := &pricer{weights: weights, conflict: make([][]bool, len(classes)), counts: make([]int, len(classes))}
	for i, ci := range comp {
		pr.counts[i] = classes[i].count
		pr.conflict[i] = make([]bool, len(classes))
		for j, cj := range comp {
			pr.conflict[i][j] = cp.conflict[ci][cj]
		}
	}
	b := make([]float64, len(classes))
	maxPrice := 0.0
	for i, c := range classes {
		b[i] = float64(c.count)
	}
	for _, o := range offers {
		maxPrice = max(maxPrice, o.price)
	}
	lp := newCBLP(b, 2*maxPrice+1)
	// Start from one greedy pattern per class on the cheapest offering holding it, so that every
	// class is covered by a real column.
	ones := make([]float64, len(classes))
	for i := range classes {
		// One that holds a pod of it, if any (of a MIG offering's choices of slices, some may not).
		var best *cbOffer
		for _, fits := range []bool{true, false} {
			for _, o := range offers {
				if o.has[i] && (!fits || pr.limit(o, i) > 0) && (best == nil || o.price < best.price) {
					best = o
				}
			}
			if best != nil {
				break
			}
		}
		if best == nil {
			return 0
		}
		for j := range ones {
			ones[j] = 0
		}
		ones[i] = 1
		if k, _ := pr.greedy(best, ones); k != nil {
			lp.addColumn(k, best.price)
		}
	}
	bound := 0.0
	heuristic := true
	for round := 0; round < cbMaxRounds; round++ {
		lp.solve(&work)
		pi := lp.duals()
		for i := range pi {
			pi[i] = max(pi[i], 0)
		}
		if heuristic {
			added := 0
			for _, o := range offers {
				if k, v := pr.greedy(o, pi); k != nil && v > o.price*(1+cbEps) {
					lp.addColumn(k, o.price)
					added++
				}
			}
			work += len(offers) * len(classes) * nrow
			if added > 0 && work < cbMaxWork {
				continue
			}
			heuristic = false
			// The restricted LP's value is above the full LP's: when it is within 2 % of the
			// resource LP, proving the bound is not worth the exact pricing (random CPU-only
			// sizes: the configuration LP gains a few per cent there, at a high price).
			if lp.value() <= floor*1.02 {
				return 0
			}
		}
		if work > cbMaxWork {
			break // no budget left to prove a bound at these prices
		}
		// Exact pricing: the most each offering can hold at prices π proves the bound.
		theta := 1.0
		added := 0
		for _, o := range offers {
			k, v, ub := pr.exact(o, pi, &work)
			theta = max(theta, ub*(1+cbEps)/o.price)
			if k != nil && v > o.price*(1+cbEps) {
				lp.addColumn(k, o.price)
				added++
			}
		}
		var dual float64
		for i := range pi {
			dual += b[i] * pi[i]
		}
		bound = max(bound, dual/theta)
		if added == 0 || work > cbMaxWork {
			break
		}
		heuristic = true
	}
	return bound
}

// undominated drops offerings that another at most as expensive beats in every capacity and
// class: each of their patterns is a pattern of the other, at no lower price.
func undominated(offers []*cbOffer) []*cbOffer {
	sort.SliceStable(offers, func(i, j int) bool { return offers[i].price < offers[j].price })
	var out []*cbOffer
	for _, o := range offers {
		dominated := false
		for _, p := range out {
			if p.price <= o.price && covers(p, o) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, o)
		}
	}
	return out
}

// covers reports whether every pattern of o is one of p.
func covers(p, o *cbOffer) bool {
	for r, c := range o.cap {
		if p.cap[r] >= 0 && (c < 0 || c > p.cap[r]) {
			return false
		}
	}
	for i, h := range o.has {
		if h && !p.has[i] {
			return false
		}
	}
	return true
}

// pricer solves the pricing problem: the most a node of an offering holds at class prices π,
// max Σ π·k over k ≤ counts, Σ k·weights ≤ cap, no two conflicting classes together and at most
// one pod of a class that repels itself.
type pricer struct {
	weights  [][]int64
	conflict [][]bool
	counts   []int
}

// limit is how many pods of class c fit a node of o alone.
func (pr *pricer) limit(o *cbOffer, c int) int {
	u := pr.counts[c]
	if pr.conflict[c][c] {
		u = min(u, 1)
	}
	for r, w := range pr.weights[c] {
		if w > 0 && o.cap[r] >= 0 {
			u = min(u, int(o.cap[r]/w))
		}
	}
	return u
}

// order returns the classes of o worth taking at π, best value per normalised size first.
func (pr *pricer) order(o *cbOffer, pi []float64) []int {
	var items []int
	ratio := map[int]float64{}
	for _, c := range o.classes {
		if pi[c] <= 0 || pr.limit(o, c) == 0 { // every positive price counts, or the maximum would be short
			continue
		}
		size := 0.0
		for r, w := range pr.weights[c] {
			if w > 0 && o.cap[r] > 0 {
				size += float64(w) / float64(o.cap[r])
			}
		}
		ratio[c] = pi[c] / max(size, 1e-12)
		items = append(items, c)
	}
	sort.SliceStable(items, func(a, b int) bool { return ratio[items[a]] > ratio[items[b]] })
	return items
}

// greedy fills a node of o in order: a good pattern, not necessarily the best.
func (pr *pricer) greedy(o *cbOffer, pi []float64) (map[int]int, float64) {
	rem := append([]int64(nil), o.cap...)
	k := map[int]int{}
	v := 0.0
	for _, c := range pr.order(o, pi) {
		blocked := false
		for d := range k {
			blocked = blocked || pr.conflict[c][d]
		}
		if blocked {
			continue
		}
		n := pr.limit(o, c)
		for r, w := range pr.weights[c] {
			if w > 0 && rem[r] >= 0 {
				n = min(n, int(rem[r]/w))
			}
		}
		if n <= 0 {
			continue
		}
		k[c] = n
		v += float64(n) * pi[c]
		for r, w := range pr.weights[c] {
			if rem[r] >= 0 {
				rem[r] -= int64(n) * w
			}
		}
	}
	if len(k) == 0 {
		return nil, 0
	}
	return k, v
}

// exact returns the best pattern of o at π, its value and an upper bound on the value of every
// pattern of o: equal to the value when the search finished, the relaxation's when it ran out of
// nodes.
func (pr *pricer) exact(o *cbOffer, pi []float64, work *int) (map[int]int, float64, float64) {
	items := pr.order(o, pi)
	if len(items) == 0 {
		return nil, 0, 0
	}
	b := &bnb{pr: pr, o: o, pi: pi, items: items, rem: append([]int64(nil), o.cap...),
		k: make([]int, len(pr.counts)), banned: make([]int, len(pr.counts)), budget: cbNodeBudget}
	b.pos = make([]int, len(pr.counts))
	for i, c := range items {
		b.pos[c] = i
	}
	root := b.relax(0)
	if root <= o.price {
		// Nothing of o prices out; the relaxation is bound enough.
		*work += len(items) * (len(o.cap) + 1) * 16
		return nil, 0, root
	}
	b.search(0, 0)
	*work += b.nodes * len(items) * (len(o.cap) + 8) * 4
	if b.aborted {
		return b.bestK, b.best, max(root, b.best)
	}
	return b.bestK, b.best, b.best
}

type bnb struct {
	pr      *pricer
	o       *cbOffer
	pi      []float64
	items   []int
	pos     []int // class → position in items
	rem     []int64
	k       []int
	banned  []int
	best    float64
	bestK   map[int]int
	nodes   int
	budget  int
	aborted bool

	scratch, scratch2 []relaxItem
}

// relax bounds what items[from:] can add to the node with the capacity left. Items that do not
// fit once are out, the others capped at what fits alone. Each row alone is a fractional
// knapsack (items free on it taken whole); so is any non-negative combination of two rows (a
// surrogate relaxation): the bound is the least of the rows' and of a few combinations of the
// two tightest rows, every one of which bounds the integer optimum.
func (b *bnb) relax(from int) float64 {
	its := b.scratch[:0]
	all := 0.0
	for _, c := range b.items[from:] {
		if b.banned[c] > 0 {
			continue
		}
		u := b.pr.limit(b.o, c)
		for r, w := range b.pr.weights[c] {
			if w > 0 && b.rem[r] >= 0 {
				u = min(u, int(b.rem[r]/w))
			}
		}
		if u > 0 {
			its = append(its, relaxItem{c: c, u: float64(u), v: b.pi[c] * float64(u)})
			all += b.pi[c] * float64(u)
		}
	}
	b.scratch = its
	if len(its) == 0 {
		return 0
	}
	bound := all
	r1, r2 := -1, -1
	b1, b2 := math.Inf(1), math.Inf(1)
	for r := range b.o.cap {
		if b.rem[r] < 0 {
			continue
		}
		v := b.surrogate(its, r, -1, 1)
		if v < b1 {
			r2, b2 = r1, b1
			r1, b1 = r, v
		} else if v < b2 {
			r2, b2 = r, v
		}
	}
	bound = min(bound, b1)
	if r2 >= 0 {
		lo, hi := 0.0, 1.0
		for range 4 {
			m1, m2 := lo+(hi-lo)/3, hi-(hi-lo)/3
			f1, f2 := b.surrogate(its, r1, r2, m1), b.surrogate(its, r1, r2, m2)
			bound = min(bound, f1, f2)
			if f1 < f2 {
				hi = m2
			} else {
				lo = m1
			}
		}
	}
	return bound
}

type relaxItem struct {
	c       int
	u, v, w float64
}

// surrogate is the fractional knapsack of the constraint lambda·row r1 + (1−lambda)·row r2, each
// row scaled by the capacity left on it (r2 < 0: row r1 alone).
func (b *bnb) surrogate(its []relaxItem, r1, r2 int, lambda float64) float64 {
	free := 0.0
	rest := b.scratch2[:0]
	for _, it := range its {
		w := lambda * float64(b.pr.weights[it.c][r1]) / max(float64(b.rem[r1]), 1e-300)
		if r2 >= 0 {
			w += (1 - lambda) * float64(b.pr.weights[it.c][r2]) / max(float64(b.rem[r2]), 1e-300)
		}
		if w <= 0 {
			free += it.v
			continue
		}
		it.w = w * it.u // the weight of all u copies
		rest = append(rest, it)
	}
	b.scratch2 = rest
	slices.SortFunc(rest, func(x, y relaxItem) int {
		switch a, b := x.v*y.w, y.v*x.w; {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	left := 1.0
	v := free
	for _, it := range rest {
		if it.w <= left {
			v += it.v
			left -= it.w
			continue
		}
		v += it.v * left / it.w
		break
	}
	return v
}

func (b *bnb) search(i int, value float64) {
	if value > b.best {
		b.best = value
		b.bestK = map[int]int{}
		for _, c := range b.items {
			if b.k[c] > 0 {
				b.bestK[c] = b.k[c]
			}
		}
	}
	if i == len(b.items) || b.aborted {
		return
	}
	b.nodes++
	if b.nodes > b.budget {
		b.aborted = true
		return
	}
	if value+b.relax(i)*(1+1e-12) <= b.best {
		return
	}
	c := b.items[i]
	if b.banned[c] > 0 {
		b.search(i+1, value)
		return
	}
	n := b.pr.limit(b.o, c)
	w := b.pr.weights[c]
	for r, x := range w {
		if x > 0 && b.rem[r] >= 0 {
			n = min(n, int(b.rem[r]/x))
		}
	}
	for k := n; k >= 0; k-- {
		if b.aborted {
			return
		}
		if k > 0 {
			b.take(c, k, 1)
			b.search(i+1, value+float64(k)*b.pi[c])
			b.take(c, k, -1)
		} else {
			b.search(i+1, value)
		}
	}
}

// take adds (sign 1) or removes (−1) k pods of class c, banning the classes it conflicts with.
func (b *bnb) take(c, k, sign int) {
	for r, x := range b.pr.weights[c] {
		if b.rem[r] >= 0 {
			b.rem[r] -= int64(sign*k) * x
		}
	}
	b.k[c] += sign * k
	for d, bad := range b.pr.conflict[c] {
		if bad && d != c {
			b.banned[d] += sign
		}
	}
}
