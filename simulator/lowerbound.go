package simulator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// lowerBound returns a lower bound on the $/h of any set of new nodes that holds the pods this
// plan puts on new nodes.
//
// Pods are grouped by the offerings able to hold them alone (compatible labels and taints, enough
// room on an empty node); groups whose offering sets overlap are merged, which only relaxes the
// problem. For each merged group the bound is the larger of
//   - the LP relaxation of covering the group's total demand, resource by resource, with
//     fractional nodes of its offerings: min Σ price(o)·x(o) s.t. Σ alloc(o,r)·x(o) ≥ demand(r);
//   - the cheapest offering able to hold the group's most demanding pod (one node is needed);
//   - the LP's integer version on two resources (intCoverBound: CPU and memory, or each extended
//     resource of the allocatable — whole GPUs, time-sliced replicas, MIG slices — with each
//     other one, with CPU and with memory, and each DRA device row below, as one more resource,
//     with CPU, with memory and with each such extended resource; the largest taken), raised by
//     splitting the group's offerings in two where some of its pods cannot leave a
//     subset of them (one zone's, under a zone selector; one family's, under a family selector):
//     each side is bought in whole nodes and covers at least the pods bound to it.
//
// The LP has one more row when pods of the group repel each other by hostname (required
// anti-affinity whose selector matches the pods themselves): k such pods need k distinct nodes,
// so Σ x(o) ≥ k, which charges the per-node overhead those nodes cannot avoid.
//
// Groups use disjoint offerings, so their bounds add up. Pool limits and topology are ignored, so
// the bound stays valid (it may only get weaker): zones enter only through the offerings a pod may
// use (a zone selector or affinity), not through zone spread, zone pod affinity or gangs of
// topology zone, whose zone is not known in advance.
//
// DRA: a pod with claims can only use offerings on which its claims fit an empty node, so its
// group (pods are grouped by signature and claim specs) keeps only those, and the LP has a row
// per such group: the devices its claims take at least (minDevices) must be among the devices
// of nodes of those offerings, Σ devices(o)·x(o) ≥ need, where devices(o) bounds how many
// claims' devices a node of o can hold (its GPUs; seven MIG partitions per GPU under dynamic
// MIG; no row when a GPU's memory is consumable, since then claims share devices); a merged
// group with several claim groups has one more row for all their devices together, and rows for
// nested unions of them (nestedDeviceRows). Each row holds for whole nodes too, so intCoverBound
// covers it in whole nodes with another resource. An extended
// resource that DRA may serve on one of the group's offerings (which does not advertise it but
// publishes devices) is left out of the LP, since there it is not counted in the allocatable.
//
// The result is the larger of this resource bound and the configuration LP's (configBound).
// Under device-plugin MIG the integer cover and the configuration LP let a node of a MIG
// offering have any layout of its GPU model on each GPU, not only the one the plan chose for the
// pending demand (nodeCovers, migNodeCaps), since nodes partitioned otherwise may hold the pods
// on fewer nodes. The fractional LP and the single-node bound still see the offerings' own
// layouts (the one planned for the whole demand and one per demanded profile): they stayed
// within the optimum in TestMIGBoundNeverAboveOptimum, which is not a proof.
func (s *state) lowerBound() float64 {
	return max(s.resourceBound(), s.configBound())
}

// resourceBound is the resource-by-resource LP bound described at lowerBound.
func (s *state) resourceBound() float64 {
	groups := s.boundGroups()
	var total float64
	for _, g := range groups {
		_, split := s.intCoverBound(g)
		total += max(s.lpBound(g), s.singleNodeBound(g), split)
	}
	return total
}

// coverUnits is how many units the demand of each resource is cut into by intCoverBound: its
// tables have at most (coverUnits+1)² entries.
const coverUnits = 300

// intCoverBound is the resource LP's integer version: the cheapest set of whole nodes of the
// group's offerings whose allocatable together covers the group's demand in two of its
// resources — what the fractional LP misses when a few nodes of fixed shapes cannot match the
// demand's. For a group asking only CPU and memory the pair is CPU and memory. For one asking
// extended resources counted in the allocatable (whole GPUs, time-sliced replicas, MIG slices),
// each such resource is paired with every other one (two MIG profiles share a node's GPUs),
// with CPU and with memory, and the largest result is taken: the LP's rows for those resources
// hold for any set of nodes, so any two of them do. Under device-plugin MIG a node may count
// the slices of any layout of its GPUs, not only the plan's offering's (nodeCovers). An extended
// resource DRA may serve on one of the group's offerings is not counted in its allocatable there
// and is left out (as in the LP).
//
// A group with DRA devices also pairs each of the LP's device rows (deviceRows: one per claim
// group, the nested unions', all together; none when a GPU's memory is consumable, since claims
// then share devices) with CPU, with memory and with each extended resource above: the row is a
// resource whose demand is its need and of which a node of offering o has devices(o) when o is
// among the row's offerings, 0 otherwise. That is the LP row Σ devices(o)·x(o) ≥ need in whole
// nodes: in any set of nodes holding the group's pods, the row's claims take at least need
// devices (minDevices, shared claims once), all on nodes of the row's offerings (the pods'
// nodes), and a node of o can hold at most devices(o) of any claims' devices (deviceCapacity).
// An extended resource DRA may serve, left out of the LP above, has a row of its own with the
// claims' devices (extDeviceRow): on a node of the DRA driver each of its units takes a device.
//
// It is solved exactly by dynamic programming over the demand in units (a coverUnits-th of
// each resource's demand, or one unit each when the demand is smaller, as whole GPUs usually
// are), with each offering's allocatable rounded up to whole units and the demand down: a
// relaxation, so the result stays a lower bound. Pods slots are left out (a relaxation too).
// 0 when it does not apply.
//
// It is then raised by splitting the group's offerings in two (coverSplits): when some of its
// pods may only use a subset S of its offerings — one zone's (a zone selector) or their
// signature's own (an instance-family selector) — and others only the rest, the nodes of S hold
// at least the former, the other nodes the latter, both together all the demand, and each side
// is bought in whole nodes. The units a side's nodes cover (each node's allocatable rounded up)
// are at least the demand they hold, rounded up, so the nodes cost at least the least
// f_S(d) + f_rest(max(total − d, forced(rest))) over d ≥ forced(S), f_X being the integer cover
// table on X's offerings: a zone pays for its own partly filled node, where one table over every
// offering lets the free pods fill it. A device row's pairs split with no devices forced on
// either side (only the two sides' total is known), which only relaxes them. It returns the bound
// of the whole CPU-and-memory table
// (0 for a group asking extended resources; configBound decides against it whether the
// configuration LP is worth proving, and a floor raised by the extended tables made it skip
// time-sliced components where it had gained) and the largest bound of all, splits included.
func (s *state) intCoverBound(g *boundGroup) (whole, split float64) {
	if len(g.pods) == 0 {
		return 0, 0
	}
	demand := make(vec, len(s.dims.names))
	for _, pi := range g.pods {
		demand.add(pi.req)
	}
	var offs []*offering
	for _, o := range s.offerings {
		if !g.offs[o.idx] {
			continue
		}
		if o.price <= 0 {
			return 0, 0 // a free node covers any demand
		}
		offs = append(offs, o)
	}
	var pairs [][2]int
	var ext []int
	asksExt := false
	for r := numFixedDims; r < len(demand); r++ {
		asksExt = asksExt || demand[r] > 0
		if demand[r] > 0 && !s.draServable(r, offs) {
			for _, e := range ext {
				pairs = append(pairs, [2]int{e, r})
			}
			ext = append(ext, r)
			pairs = append(pairs, [2]int{r, dimCPU}, [2]int{r, dimMemory})
		}
	}
	if len(pairs) == 0 {
		pairs = [][2]int{{dimCPU, dimMemory}}
	}
	for _, dims := range pairs {
		w, sp := s.pairCover(g, demand, newCoverGrid(dims, demand))
		if !asksExt {
			whole = w
		}
		split = max(split, sp)
	}
	// Each device row as one more resource, paired with CPU, memory and every extended resource
	// paired above: dimension devDim, past the group's resources, is the row's devices.
	devDim := len(demand)
	for _, row := range s.deviceRows(g) {
		caps, ok := s.rowDevices(row)
		if !ok {
			continue
		}
		dx := append(demand[:len(demand):len(demand)], int64(row.need))
		for _, r := range append([]int{dimCPU, dimMemory}, ext...) {
			u := newCoverGrid([2]int{devDim, r}, dx)
			u.devices = caps
			_, sp := s.pairCover(g, dx, u)
			split = max(split, sp)
		}
	}
	return whole, split
}

// pairCover is intCoverBound on the grid u's two resources: the bound of the whole table on the
// group's offerings, and the largest with coverSplits' splits (0, 0 when the group does not ask
// both resources or its offerings cannot cover them).
func (s *state) pairCover(g *boundGroup, demand vec, u coverGrid) (whole, split float64) {
	if demand[u.dims[0]] <= 0 || demand[u.dims[1]] <= 0 {
		return 0, 0
	}
	w := s.coverTable(g.offs, u)[u.n[0]*(u.n[1]+1)+u.n[1]]
	if math.IsInf(w, 1) {
		return 0, 0
	}
	split = w
	for _, sp := range s.coverSplits(g, demand, u.dims) {
		out := map[int]bool{}
		for idx := range g.offs {
			if !sp.offs[idx] {
				out[idx] = true
			}
		}
		split = max(split, splitCover(s.coverTable(sp.offs, u), s.coverTable(out, u), u, u.units(sp.forced), u.units(sp.forcedOut)))
	}
	return w, split
}

// coverGrid is intCoverBound's units: the resources dims, unit[k] of dims[k] per unit, n[k]
// units in the demand.
type coverGrid struct {
	dims [2]int
	unit [2]int64
	n    [2]int
	// devices is set when dims[0] is a device row's dimension (just past the resources): how many
	// of the row's devices a node of each offering may hold (deviceCapacity; none when absent).
	devices map[int]int64
}

// newCoverGrid cuts the demand of the two resources into at most coverUnits units each. A
// resource not asked for has no units (and pairCover no bound for it).
func newCoverGrid(dims [2]int, demand vec) coverGrid {
	u := coverGrid{dims: dims}
	for k, r := range dims {
		if demand[r] <= 0 {
			u.unit[k] = 1
			continue
		}
		u.unit[k] = (demand[r] + coverUnits - 1) / coverUnits
		u.n[k] = int(demand[r] / u.unit[k])
	}
	return u
}

// units is the demand in whole units, rounded up (nodes holding it cover as many units: each
// node's allocatable is rounded up too), at most the group's.
func (u coverGrid) units(d vec) [2]int {
	var out [2]int
	for k, r := range u.dims {
		out[k] = int(min((max(d[r], 0)+u.unit[k]-1)/u.unit[k], int64(u.n[k])))
	}
	return out
}

// coverTable is the integer cover table on the offerings offs: f[a·(n1+1)+b] is the least price of
// nodes whose allocatable, rounded up to whole units, covers a units of the first resource and b
// of the second (+Inf when offs cannot).
func (s *state) coverTable(offs map[int]bool, u coverGrid) []float64 {
	type item struct {
		c, m  int
		price float64
	}
	best := map[[2]int]float64{}
	for _, o := range s.offerings {
		if !offs[o.idx] {
			continue
		}
		for _, k := range s.nodeCovers(o, u) {
			if k == [2]int{} {
				continue
			}
			if p, ok := best[k]; !ok || o.price < p {
				best[k] = o.price
			}
		}
	}
	var items []item
	for k, p := range best {
		items = append(items, item{k[0], k[1], p})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].price != items[j].price {
			return items[i].price < items[j].price
		}
		if items[i].c != items[j].c {
			return items[i].c > items[j].c
		}
		return items[i].m > items[j].m
	})
	// Drop items another at most as expensive covers in both resources.
	kept := items[:0]
	for _, it := range items {
		dominated := false
		for _, k := range kept {
			if k.c >= it.c && k.m >= it.m {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, it)
		}
	}
	C, w := u.n[0], u.n[1]+1
	f := make([]float64, (C+1)*w)
	for c := 0; c <= C; c++ {
		for m := 0; m < w; m++ {
			if c == 0 && m == 0 {
				continue
			}
			v := math.Inf(1)
			for _, it := range kept {
				v = min(v, it.price+f[max(c-it.c, 0)*w+max(m-it.m, 0)])
			}
			f[c*w+m] = v
		}
	}
	return f
}

// nodeCovers lists the units of u's two resources a node of the offering may cover, each
// rounded up: its allocatable's, or under device-plugin MIG, where the plan's offering has one
// layout per GPU chosen for the pending demand and another node of the type may have any other,
// every Pareto-maximal choice of slice counts the node's GPUs can take together (migNodeCaps,
// capped at the demand, which units caps at anyway), so that the table bounds nodes of any layout.
func (s *state) nodeCovers(o *offering, u coverGrid) [][2]int {
	alloc := o.alloc
	if u.devices != nil {
		alloc = append(alloc[:len(alloc):len(alloc)], u.devices[o.idx])
	}
	dims := u.dims[:]
	per, caps := s.migNodeCaps(o, dims, []int64{int64(u.n[0]) * u.unit[0], int64(u.n[1]) * u.unit[1]})
	if caps == nil {
		return [][2]int{u.units(alloc)}
	}
	out := make([][2]int, 0, len(caps))
	for _, c := range caps {
		v := slices.Clone(alloc)
		for k, r := range dims {
			if per[k] {
				v[r] = c[k]
			}
		}
		out = append(out, u.units(v))
	}
	return out
}

// perGPU reports whether dimension r is an extended resource, which a MIG GPU's layout may
// decide: not CPU, memory or pods, nor intCoverBound's device row dimension past the resources.
func (s *state) perGPU(r int) bool {
	return r >= numFixedDims && r < len(s.dims.names)
}

// maxMIGNodeCaps bounds how many slice vectors migNodeCaps enumerates for a node; beyond it
// the node is credited with each resource's largest count at once (a relaxation).
const maxMIGNodeCaps = 64

// migNodeCaps is, for a device-plugin MIG offering, what a node of it may advertise of the
// resources dims whatever the layout of each of its GPUs — any layout of the GPU model, not only
// the one the plan's offering has for the pending demand, since another node of the type may
// be partitioned otherwise. per[k] tells whether a GPU's layout decides dims[k]
// (nvidia.com/mig-<profile> under the mixed strategy, nvidia.com/gpu, every slice, under
// single); each vector of caps is one Pareto-maximal choice of the node's counts of those
// resources (entries where per is false mean nothing), each count capped at most[k]: a demand of
// at most most[k] cannot tell the difference, and the cap keeps the vectors few. When they are
// more than maxMIGNodeCaps, caps is the one vector of each resource's largest count, which every
// choice stays within (a relaxation). nil for other offerings, or when no resource is per GPU.
func (s *state) migNodeCaps(o *offering, dims []int, most []int64) (per []bool, caps [][]int64) {
	if o.gpu.Sharing != api.MIG || o.it.GPU.Count == 0 {
		return nil, nil
	}
	tab, err := loadMIG()
	if err != nil {
		return nil, nil
	}
	m, ok := tab.Model(o.it.GPU.Model)
	if !ok {
		return nil, nil
	}
	single := o.gpu.MIGStrategy == "single"
	per = make([]bool, len(dims))
	anyPer := false
	for k, r := range dims {
		if !s.perGPU(r) {
			continue
		}
		name := string(s.dims.names[r])
		if single {
			per[k] = name == string(api.ResourceGPU)
		} else {
			_, per[k] = mig.ParseResourceName(name)
		}
		anyPer = anyPer || per[k]
	}
	if !anyPer {
		return nil, nil
	}
	var gpu [][]int64
	for _, l := range m.Layouts() {
		c := make([]int64, len(dims))
		for k, r := range dims {
			if !per[k] {
				continue
			}
			name := string(s.dims.names[r])
			for _, p := range l.Profiles {
				if single || name == mig.ResourceName(p) {
					c[k]++
				}
			}
			c[k] = min(c[k], most[k])
		}
		gpu = append(gpu, c)
	}
	gpu = paretoMaxN(gpu)
	// The node's GPUs together: the sums of one vector per GPU, Pareto-maximal ones kept.
	node := [][]int64{make([]int64, len(dims))}
	for range o.it.GPU.Count {
		var next [][]int64
		for _, a := range node {
			for _, b := range gpu {
				v := make([]int64, len(dims))
				for k := range v {
					v[k] = min(a[k]+b[k], most[k])
				}
				next = append(next, v)
			}
		}
		node = paretoMaxN(next)
		if len(node) > maxMIGNodeCaps {
			box := make([]int64, len(dims))
			for _, c := range gpu {
				for k := range box {
					box[k] = max(box[k], min(c[k]*int64(o.it.GPU.Count), most[k]))
				}
			}
			return per, [][]int64{box}
		}
	}
	return per, node
}

// anyLayoutFits is boundFits on an empty node of the offering where, under device-plugin MIG,
// the node's GPUs may have any layouts (migNodeCaps): the slices req asks must be what one
// choice of them advertises.
func (s *state) anyLayoutFits(req vec, o *offering) bool {
	if s.boundFits(req, o) {
		return true
	}
	var dims []int
	var most []int64
	for r := numFixedDims; r < len(req); r++ {
		if req[r] > 0 {
			dims = append(dims, r)
			most = append(most, req[r])
		}
	}
	per, caps := s.migNodeCaps(o, dims, most)
	if caps == nil {
		return false
	}
	rest := req.clone()
	for k, r := range dims {
		if per[k] {
			rest[r] = 0
		}
	}
	if !s.boundFits(rest, o) {
		return false
	}
	for _, c := range caps {
		fits := true
		for k := range dims {
			fits = fits && (!per[k] || c[k] >= most[k])
		}
		if fits {
			return true
		}
	}
	return false
}

// paretoMaxN keeps the vectors no other vector is at least as large as in every component
// (one of equal ones).
func paretoMaxN(vs [][]int64) [][]int64 {
	sum := func(v []int64) (t int64) {
		for _, x := range v {
			t += x
		}
		return t
	}
	sort.SliceStable(vs, func(i, j int) bool { return sum(vs[i]) > sum(vs[j]) })
	var out [][]int64
	for _, v := range vs {
		dominated := false
		for _, w := range out {
			ge := true
			for k := range v {
				if w[k] < v[k] {
					ge = false
					break
				}
			}
			if ge {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, v)
		}
	}
	return out
}

// splitCover is the least f_in(a, b) + f_out(max(n0 − a, out0), max(n1 − b, out1)) over a ≥ in0
// and b ≥ in1: the price of covering the demand with whole nodes of both tables when the first
// covers at least in units and the second at least out.
func splitCover(fin, fout []float64, u coverGrid, in, out [2]int) float64 {
	C, M := u.n[0], u.n[1]
	w := M + 1
	v := math.Inf(1)
	for c := in[0]; c <= C; c++ {
		for m := in[1]; m <= M; m++ {
			v = min(v, fin[c*w+m]+fout[max(C-c, out[0])*w+max(M-m, out[1])])
		}
	}
	if math.IsInf(v, 1) {
		return 0
	}
	return v
}

// maxCoverSplits caps the splits intCoverBound tries, those forcing the most demand first.
const maxCoverSplits = 6

// coverSplit is a subset of a group's offerings, the demand of the group's pods that may only
// use offerings of it (forced) and of those that may only use the others (forcedOut).
type coverSplit struct {
	offs              map[int]bool
	forced, forcedOut vec
	share             float64 // of the group's demand forced to either side, the two resources' shares added
}

// coverSplits lists the proper subsets of the group's offerings that some of its pods cannot
// leave: each zone's offerings, and each part's. Those forcing no demand are left out (the split
// cannot beat the whole table).
func (s *state) coverSplits(g *boundGroup, demand vec, dims [2]int) []coverSplit {
	words := (len(s.offerings) + 63) / 64
	bits := func(offs map[int]bool) []uint64 {
		b := make([]uint64, words)
		for idx := range offs {
			b[idx/64] |= 1 << (idx % 64)
		}
		return b
	}
	all := bits(g.offs)
	var cands [][]uint64
	seen := map[string]bool{}
	add := func(b []uint64) {
		if slices.Equal(b, all) || !slices.ContainsFunc(b, func(w uint64) bool { return w != 0 }) {
			return
		}
		key := fmt.Sprint(b)
		if !seen[key] {
			seen[key] = true
			cands = append(cands, b)
		}
	}
	byZone := map[string][]uint64{}
	var zones []string
	for _, o := range s.offerings {
		if !g.offs[o.idx] {
			continue
		}
		if byZone[o.zone] == nil {
			byZone[o.zone] = make([]uint64, words)
			zones = append(zones, o.zone)
		}
		byZone[o.zone][o.idx/64] |= 1 << (o.idx % 64)
	}
	if len(zones) > 1 {
		sort.Strings(zones)
		for _, z := range zones {
			add(byZone[z])
		}
	}
	parts := make([][]uint64, len(g.parts))
	for i, p := range g.parts {
		parts[i] = bits(p.offs)
		add(parts[i])
	}
	var out []coverSplit
	for _, c := range cands {
		sp := coverSplit{offs: map[int]bool{}, forced: make(vec, len(demand)), forcedOut: make(vec, len(demand))}
		for i, p := range g.parts {
			side := sp.forced
			switch {
			case subset(parts[i], c):
			case disjoint(parts[i], c):
				side = sp.forcedOut
			default:
				continue
			}
			for _, pi := range p.pods {
				side.add(pi.req)
			}
		}
		if sp.forced[dims[0]] == 0 && sp.forced[dims[1]] == 0 {
			continue
		}
		for idx := range g.offs {
			if c[idx/64]&(1<<(idx%64)) != 0 {
				sp.offs[idx] = true
			}
		}
		sp.share = float64(sp.forced[dims[0]]+sp.forcedOut[dims[0]])/float64(demand[dims[0]]) +
			float64(sp.forced[dims[1]]+sp.forcedOut[dims[1]])/float64(demand[dims[1]])
		out = append(out, sp)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].share > out[j].share })
	return out[:min(len(out), maxCoverSplits)]
}

// disjoint reports whether the bit sets a and b have no member in common.
func disjoint(a, b []uint64) bool {
	for i, w := range a {
		if w&b[i] != 0 {
			return false
		}
	}
	return true
}

// subset reports whether every member of the bit set a is in b.
func subset(a, b []uint64) bool {
	for i, w := range a {
		if w&^b[i] != 0 {
			return false
		}
	}
	return true
}

// minNodesBound is a lower bound on the $/h any plan pays to keep the pools' minNodes: every pool
// needs minNodes minus the nodes it has before planning, each at least its cheapest offering, and
// pools do not share nodes. It is a bound of its own, not added to lowerBound: the nodes bought
// for pods may be the ones that fill minNodes. Without it a plan that only buys minNodes nodes
// claimed a lower bound of 0.
func (s *state) minNodesBound() float64 {
	var total float64
	for _, pl := range s.pools {
		if need := pl.MinNodes - pl.before; need > 0 && len(pl.offs) > 0 {
			total += float64(need) * cheapest(pl.offs).price
		}
	}
	return total
}

type boundGroup struct {
	pods []*podInfo
	offs map[int]bool
	// parts are the groups merged into this one, each with its own offerings (a subset).
	parts []boundPart
	// devices are the DRA rows: a claim group's devices and the offerings that may hold them.
	devices []deviceRow
}

// boundPart is pods that may only use the offerings offs.
type boundPart struct {
	offs map[int]bool
	pods []*podInfo
}

// deviceRow says that need devices must be on nodes of the offerings offs.
type deviceRow struct {
	need float64
	offs map[int]bool
	pods []*podInfo // the claim group's pods
	// ext: need includes the units of extended resources DRA may serve that the group's pods
	// request, and a node of o holds devices(o) plus its allocatable of those resources
	// (extDeviceRow).
	ext bool
}

// boundGroups groups the pods on new nodes by signature and claim specs. A group's offerings are
// those its pods' labels and taints accept, that hold the component-wise smallest of its pods
// on an empty node and on which its claims fit an empty node — a superset of what any one pod
// can use, which only relaxes the bound.
func (s *state) boundGroups() []*boundGroup {
	type key struct{ sig, claims int }
	bySig := map[key]*boundGroup{}
	var order []key
	minReq := map[key]vec{}
	rep := map[key]*podInfo{}
	for _, n := range s.nodes {
		if n.existing || n.removed {
			continue
		}
		for _, pi := range n.pods {
			k := key{pi.sig, -1}
			if pi.dra != nil && len(pi.dra.claims) > 0 {
				k.claims = s.specClaims(pi).sig
			}
			g := bySig[k]
			if g == nil {
				g = &boundGroup{}
				bySig[k] = g
				order = append(order, k)
				minReq[k] = pi.req.clone()
				rep[k] = pi
			}
			g.pods = append(g.pods, pi)
			for r, x := range pi.req {
				minReq[k][r] = min(minReq[k][r], x)
			}
		}
	}
	owner := map[int]*boundGroup{} // offering → group
	var groups []*boundGroup
	for _, k := range order {
		g := bySig[k]
		g.offs = map[int]bool{}
		for _, o := range s.offerings {
			if s.offeringCompatible(k.sig, o) && s.boundFits(minReq[k], o) &&
				(k.claims < 0 || s.specReason(s.specClaims(rep[k]), o.draClass) == nil) {
				g.offs[o.idx] = true
			}
		}
		g.parts = []boundPart{{offs: maps.Clone(g.offs), pods: slices.Clone(g.pods)}}
		if k.claims >= 0 {
			if need := s.claimDeviceNeed(g.pods); need > 0 {
				offs := make(map[int]bool, len(g.offs))
				for idx := range g.offs {
					offs[idx] = true
				}
				g.devices = append(g.devices, deviceRow{need: float64(need), offs: offs, pods: g.pods})
			}
		}
		for idx := range g.offs {
			if h := owner[idx]; h != nil && h != g && h.offs != nil {
				g.pods = append(g.pods, h.pods...)
				g.devices = append(g.devices, h.devices...)
				g.parts = append(g.parts, h.parts...)
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
	v, _, _, ok := s.lpSolution(g)
	if !ok {
		return 0
	}
	return v
}

// lpSolution solves the group's covering LP and returns its value, the group's offerings and
// an optimal basic solution: how many nodes of each offering, fractionally.
func (s *state) lpSolution(g *boundGroup) (float64, []*offering, []float64, bool) {
	demand := make(vec, len(s.dims.names))
	for _, pi := range g.pods {
		demand.add(pi.req)
	}
	var offs []*offering
	for _, o := range s.offerings {
		if g.offs[o.idx] {
			offs = append(offs, o)
		}
	}
	var rows []int
	for r, d := range demand {
		if d > 0 && !s.draServable(r, offs) {
			rows = append(rows, r)
		}
	}
	A := make([][]float64, len(rows), len(rows)+1)
	b := make([]float64, len(rows), len(rows)+1)
	c := make([]float64, len(offs))
	for j, o := range offs {
		c[j] = o.price
	}
	smallest := s.smallestRequest(g.pods)
	for i, r := range rows {
		A[i] = make([]float64, len(offs))
		for j, o := range offs {
			a := float64(max(o.alloc[r], 0))
			if r == dimPods {
				a = min(a, podSlots(o.alloc, smallest))
			}
			A[i][j] = a / float64(demand[r])
		}
		b[i] = 1
	}
	for _, row := range s.deviceRows(g) {
		caps, ok := s.rowDevices(row)
		if !ok {
			continue
		}
		coef := make([]float64, len(offs))
		for j, o := range offs {
			coef[j] = float64(caps[o.idx]) / row.need
		}
		A, b = append(A, coef), append(b, 1)
	}
	if k := s.distinctNodesNeeded(g); k > 1 {
		row := make([]float64, len(offs))
		for j := range row {
			row[j] = 1 / float64(k)
		}
		A, b = append(A, row), append(b, 1)
	}
	v, x, ok := lpSolve(A, b, c)
	return v, offs, x, ok
}

// deviceRows are the group's DRA rows of the LP: one per claim group and, for several, the
// nested unions' (nestedDeviceRows) and one for all the claim groups together, whose devices are
// all on the group's nodes.
func (s *state) deviceRows(g *boundGroup) []deviceRow {
	rows := g.devices
	if len(rows) > 1 {
		rows = append(rows[:len(rows):len(rows)], s.nestedDeviceRows(g.devices)...)
		if need := s.claimDeviceNeed(g.pods); need > 0 {
			rows = append(rows, deviceRow{need: float64(need), offs: g.offs})
		}
	}
	if row, ok := s.extDeviceRow(g); ok {
		rows = append(rows[:len(rows):len(rows)], row)
	}
	return rows
}

// extDeviceRow is the row of the group's extended resources that DRA may serve (nvidia.com/gpu
// under a DeviceClass naming it): the LP leaves them out, since a node of the DRA driver does
// not advertise them, but each unit takes a device there, as the claims do. A node of o holds at
// most its allocatable of them (the device plugin's) plus devices(o) of them and of any claims'
// devices together (a node has one publisher, and devices(o) bounds the devices allocated on it
// at once), so Σ (devices(o) + alloc(o, ext))·x(o) ≥ the claims' devices + the units requested.
// false when the group's pods request none.
func (s *state) extDeviceRow(g *boundGroup) (deviceRow, bool) {
	if s.dra == nil || s.dra.clusterSlices || len(s.dra.extDims) == 0 {
		return deviceRow{}, false
	}
	var units int64
	for _, pi := range g.pods {
		for _, r := range s.dra.extDims {
			units += pi.req[r]
		}
	}
	if units == 0 {
		return deviceRow{}, false
	}
	return deviceRow{need: float64(int64(s.claimDeviceNeed(g.pods)) + units), offs: g.offs, ext: true}, true
}

// rowDevices is devices(o) of the row's offerings — how many devices claims can be allocated
// exclusively on a node of o (deviceCapacity) — by offering index; false when that is
// unbounded on one of them (consumable GPU memory: claims share devices), and the row says
// nothing.
func (s *state) rowDevices(row deviceRow) (map[int]int64, bool) {
	caps := make(map[int]int64, len(row.offs))
	for _, o := range s.offerings {
		if !row.offs[o.idx] {
			continue
		}
		d, bounded := s.dra.deviceCapacity(o)
		if !bounded {
			return nil, false
		}
		caps[o.idx] = int64(d)
		if row.ext {
			for _, r := range s.dra.extDims {
				caps[o.idx] += o.alloc[r]
			}
		}
	}
	return caps, true
}

// nestedDeviceRows adds Hall-type rows for unions of claim groups: the devices of the groups in
// a set S can only be on offerings some group of S may use, so their devices there are at least
// what S's pods need together (claimDeviceNeed, which counts a shared claim once).
// One row per group alone says less when groups overlap (an A100-only group and an any-GPU
// group can both count the same A100s). Rows are added for the prefixes of the groups sorted by
// how few offerings they may use (A100-only ⊂ ≥ 40 GiB ⊂ any GPU), k − 2 rows for k groups
// (the single group and the whole set have theirs already).
func (s *state) nestedDeviceRows(rows []deviceRow) []deviceRow {
	sorted := append([]deviceRow(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].offs) < len(sorted[j].offs) })
	var out []deviceRow
	union := map[int]bool{}
	var pods []*podInfo
	for i, r := range sorted[:len(sorted)-1] {
		for o := range r.offs {
			union[o] = true
		}
		pods = append(pods, r.pods...)
		if i == 0 {
			continue
		}
		if need := s.claimDeviceNeed(pods); need > 0 {
			offs := make(map[int]bool, len(union))
			for o := range union {
				offs[o] = true
			}
			out = append(out, deviceRow{need: float64(need), offs: offs})
		}
	}
	return out
}

// smallestRequest is the component-wise smallest request of the pods.
func (s *state) smallestRequest(pods []*podInfo) vec {
	m := pods[0].req.clone()
	for _, pi := range pods[1:] {
		for d, x := range pi.req {
			m[d] = min(m[d], x)
		}
	}
	return m
}

// podSlots bounds how many of the group's pods a node with allocatable alloc can hold whatever
// their mix: its max pods, and for each resource every pod asks for, the allocatable over the
// smallest request. In the LP's pods row it keeps small nodes from selling pod slots their CPU
// and memory could never fill (110 slots on a 2-core node).
func podSlots(alloc, smallest vec) float64 {
	slots := float64(alloc[dimPods])
	for d, x := range smallest {
		if d != dimPods && x > 0 {
			slots = min(slots, math.Floor(float64(max(alloc[d], 0))/float64(x)))
		}
	}
	return slots
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
			if s.offeringCompatible(pi.sig, o) && s.fitsEmptySpec(pi, zero, o) {
				bound = max(bound, o.price)
				break
			}
		}
	}
	return bound
}

// boundFits is fits on an empty node of the offering, except for extended resources DRA may
// serve there (not advertised, but the node has devices).
func (s *state) boundFits(req vec, o *offering) bool {
	for i, r := range req {
		if r != 0 && r > o.alloc[i] && !(s.dra != nil && o.alloc[i] == 0 && s.dra.isExt(i) && s.dra.mayServe(o)) {
			return false
		}
	}
	return true
}

// draServable reports whether dimension r is an extended resource that DRA may serve on one of
// the offerings: the LP leaves it out.
func (s *state) draServable(r int, offs []*offering) bool {
	if s.dra == nil || !s.dra.isExt(r) {
		return false
	}
	for _, o := range offs {
		if o.alloc[r] == 0 && s.dra.mayServe(o) {
			return true
		}
	}
	return false
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
