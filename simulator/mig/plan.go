package mig

import "slices"

// demandVec is a demand as a count per profile index of one model.
type demandVec [maxProfiles]int

// planner holds one Plan call's candidates and the demand's mix.
type planner struct {
	m     *GPUModel
	cands []candidate
	// mix is the whole known demand; spare instances of these profiles are the useful ones.
	mix demandVec
}

// Plan chooses a layout for each of the node's gpus GPUs so that as much of demand (profile →
// instances wanted) as possible fits, and returns the layouts (len gpus) with the demand that
// did not fit (nil when everything fits). Demand for a profile the model lacks is left over.
// With allowed non-nil (a pool's migLayouts, see ParseLayoutSpec) only those layouts are used;
// otherwise Layouts(), plus MediaLayouts() when the demand asks for a +me profile.
//
// The choice is lexicographic: (1) the most demand covered, each instance weighted by
// 8·compute slices + memory slots; (2) the fewest GPUs serving demand; (3) the most useful spare
// capacity on those GPUs, Σ spare instances × weight × (2 if the demand asks for that profile,
// else 1); (4) fewer distinct layouts; (5) the earlier layout in candidate order. The search is greedy per GPU (the layout
// covering the most remaining demand) until the rest could fit in two GPUs, then exhaustive over
// every single layout and pair of layouts, so demand that fits in one or two GPUs is planned
// exactly. GPUs that serve no demand get the layout with the most capacity (by weight) in the
// profiles of the uncovered demand, or of the whole demand if all of it fits, or all-balanced
// when there is no demand. The result is deterministic; its layouts share memory with the
// model's cached layouts and must not be modified.
func (m *GPUModel) Plan(demand map[MIGProfile]int, gpus int, allowed []Layout) ([]Layout, map[MIGProfile]int) {
	rem, unknown := m.demandVector(demand)
	if gpus <= 0 {
		return nil, m.leftover(rem, unknown)
	}
	p := planner{m: m, cands: m.planCandidates(allowed, rem), mix: rem}
	used, rest := p.search(rem, gpus)
	slices.Sort(used) // candidate order, so equal plans print alike
	perGPU := make([]Layout, 0, gpus)
	for _, i := range used {
		perGPU = append(perGPU, p.cands[i].layout)
	}
	if len(perGPU) < gpus {
		fill := p.filler(rest)
		for len(perGPU) < gpus {
			perGPU = append(perGPU, fill)
		}
	}
	return perGPU, m.leftover(rest, unknown)
}

// demandVector splits demand into the model's profiles and the rest; non-positive counts are
// ignored.
func (m *GPUModel) demandVector(demand map[MIGProfile]int) (demandVec, map[MIGProfile]int) {
	var v demandVec
	var unknown map[MIGProfile]int
	for p, n := range demand {
		if n <= 0 {
			continue
		}
		if i, ok := m.index[p]; ok {
			v[i] += n
			continue
		}
		if unknown == nil {
			unknown = map[MIGProfile]int{}
		}
		unknown[p] += n
	}
	return v, unknown
}

// leftover merges the uncovered known demand into unknown; nil when nothing is left.
func (m *GPUModel) leftover(rest demandVec, unknown map[MIGProfile]int) map[MIGProfile]int {
	for i, n := range rest {
		if n > 0 {
			if unknown == nil {
				unknown = map[MIGProfile]int{}
			}
			unknown[m.Profiles[i].Name] += n
		}
	}
	return unknown
}

// planCandidates returns the layouts Plan may use: allowed if non-nil (dropping layouts with a
// profile the model lacks), else the cached Layouts, with the +me layouts when rem asks for one.
func (m *GPUModel) planCandidates(allowed []Layout, rem demandVec) []candidate {
	if allowed != nil {
		out := make([]candidate, 0, len(allowed))
		for _, l := range allowed {
			if c, err := m.countsOf(l.Profiles); err == nil {
				out = append(out, candidate{layout: l, c: c})
			}
		}
		return out
	}
	for i := range m.Profiles {
		if rem[i] > 0 && m.Profiles[i].MediaExtensions {
			return append(append(make([]candidate, 0, len(m.planCands)+len(m.mediaCand)),
				m.planCands...), m.mediaCand...)
		}
	}
	return m.planCands
}

// filler is the layout of a GPU that serves no demand. Its target mix is rest, or the whole
// demand when rest is empty. The candidate that covers the most of the mix (by weight) wins;
// ties go to the candidate whose capacity is split between the profiles most like the mix
// (smallest L1 distance between the weight shares); then the earlier candidate. With no mix,
// or no candidate holding any profile of it, the model's all-balanced layout (or the first
// candidate) is used.
func (p *planner) filler(rest demandVec) Layout {
	if len(p.cands) == 0 {
		return Layout{}
	}
	mix := rest
	if mix == (demandVec{}) {
		mix = p.mix
	}
	best := -1
	var bestScore outcome
	for i := range p.cands {
		o := p.score(mix, &p.cands[i].c)
		if o.covered == 0 {
			continue
		}
		o.spare = -p.shareDistance(mix, &p.cands[i].c)
		if best < 0 || o.better(&bestScore) {
			best, bestScore = i, o
		}
	}
	if best < 0 {
		best = p.balanced()
	}
	return p.cands[best].layout
}

// shareDistance is the L1 distance between the weight shares of capacity c and of mix, scaled
// by both totals to stay in integers: Σ |c[k]·w[k]·M − mix[k]·w[k]·C| with C and M the weight
// totals of c and mix.
func (p *planner) shareDistance(mix demandVec, c *counts) int {
	total := 0
	for k := range p.m.Profiles {
		total += int(c[k]) * p.m.weight[k]
	}
	mixTotal := p.weightOf(mix)
	d := 0
	for k := range p.m.Profiles {
		w := p.m.weight[k]
		diff := int(c[k])*w*mixTotal - mix[k]*w*total
		d += max(diff, -diff)
	}
	return d
}

// balanced returns the index of the model's all-balanced layout among the candidates, or 0.
func (p *planner) balanced() int {
	bl, ok := p.m.namedLay["all-balanced"]
	if !ok {
		return 0
	}
	bc, _ := p.m.countsOf(bl.Profiles)
	for i := range p.cands {
		if p.cands[i].c == bc {
			return i
		}
	}
	return 0
}
