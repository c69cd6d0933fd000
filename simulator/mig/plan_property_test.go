package mig

import (
	"math/rand/v2"
	"testing"
)

// oracle is the naive planner: it tries every multiset of at most gpus candidates and keeps
// the best by (covered, fewer GPUs, more spare), the first criteria of Plan.
func oracle(p *planner, rem demandVec, gpus int) outcome {
	var best outcome
	var walk func(from, n int, c counts)
	walk = func(from, n int, c counts) {
		if n > 0 {
			o := p.score(rem, &c)
			o.gpus = n
			if o.covered > 0 && o.betterNoTie(&best) {
				best = o
			}
		}
		if n == gpus {
			return
		}
		for i := from; i < len(p.cands); i++ {
			next := c
			for k, x := range p.cands[i].c {
				next[k] += x
			}
			walk(i, n+1, next)
		}
	}
	walk(0, 0, counts{})
	return best
}

// betterNoTie is better without the distinct-layouts and order tie-breaks, which the oracle
// does not track.
func (o *outcome) betterNoTie(b *outcome) bool {
	if o.covered != b.covered {
		return o.covered > b.covered
	}
	if o.gpus != b.gpus {
		return o.gpus < b.gpus
	}
	return o.spare > b.spare
}

// randomDemand draws 1..5 profile picks (without +me) of 1..7 instances each.
func randomDemand(r *rand.Rand, m *GPUModel) demandVec {
	var plain []int
	for i := range m.Profiles {
		if !m.Profiles[i].MediaExtensions {
			plain = append(plain, i)
		}
	}
	var rem demandVec
	for range 1 + r.IntN(5) {
		rem[plain[r.IntN(len(plain))]] += 1 + r.IntN(7)
	}
	return rem
}

// TestPlanMatchesOracle checks the search against the naive planner on random demands: on one
// and two GPUs it is exhaustive, so covered, GPU count and spare must all match; on three GPUs
// (greedy first step) covered and GPU count must match too. Seeded, so failures reproduce.
func TestPlanMatchesOracle(t *testing.T) {
	trials := 150
	if testing.Short() {
		trials = 30
	}
	r := rand.New(rand.NewPCG(2026, 11))
	for _, name := range []string{"A100-40GB", "H100", "A30"} {
		m := model(t, name)
		for trial := range trials {
			rem := randomDemand(r, m)
			gpus := 1 + trial%3
			p := planner{m: m, cands: m.planCands, mix: rem}
			used, rest := p.search(rem, gpus)
			got := p.capacityScore(rem, used)
			want := oracle(&p, rem, gpus)
			if got.covered != want.covered || got.gpus != want.gpus || (gpus <= exactGPUs && got.spare != want.spare) {
				t.Errorf("%s %v on %d GPUs: plan covered %d on %d GPUs (spare %d, left %v), oracle %d on %d (spare %d)",
					name, m.expandCounts(toCounts(rem)), gpus, got.covered, got.gpus, got.spare,
					m.expandCounts(toCounts(rest)), want.covered, want.gpus, want.spare)
			}
		}
	}
}

// capacityScore scores the combined capacity of the used candidates against rem.
func (p *planner) capacityScore(rem demandVec, used []int) outcome {
	var c counts
	for _, i := range used {
		for k, x := range p.cands[i].c {
			c[k] += x
		}
	}
	o := p.score(rem, &c)
	o.gpus = len(used)
	return o
}

// toCounts narrows a small demand for printing with expandCounts.
func toCounts(v demandVec) counts {
	var c counts
	for i, n := range v {
		c[i] = uint8(min(n, 255))
	}
	return c
}

// TestPlanMediaNeverDoubled: whatever the +me demand, no planned GPU holds two +me instances
// or a 1g +me next to another 1g instance, and every layout passes Valid.
func TestPlanMediaNeverDoubled(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	m := model(t, "A100-40GB")
	for range 50 {
		demand := d("1g.5gb+me", 1+r.IntN(4), "1g.5gb", r.IntN(6), "2g.10gb", r.IntN(4), "4g.20gb", r.IntN(2))
		perGPU, _ := m.Plan(demand, 1+r.IntN(8), nil)
		for _, l := range perGPU {
			if _, err := m.Valid(l.Profiles); err != nil {
				t.Fatalf("Plan(%v) gave an invalid layout %v: %v", demand, l.Profiles, err)
			}
		}
	}
}
