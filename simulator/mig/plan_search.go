package mig

// exactGPUs is how many GPUs the exhaustive tail of the search covers: every layout and every
// pair of layouts (≈ 31 + 496 combinations on an 8-slot GPU).
const exactGPUs = 2

// outcome scores the capacity of up to exactGPUs GPUs (candidate indices) against a demand.
type outcome struct {
	picks   [exactGPUs]int
	gpus    int // GPUs used: picks[:gpus]
	covered int // Σ covered instances × weight
	spare   int // Σ spare instances × weight × (2 if in the demand's mix, else 1)
}

// better reports whether o beats b: more covered, then fewer GPUs, then more useful spare,
// then fewer distinct layouts (one mig-parted entry instead of two). Ties keep b, so the
// earlier enumerated option wins; an outcome covering nothing never beats the empty outcome.
func (o *outcome) better(b *outcome) bool {
	if o.covered != b.covered {
		return o.covered > b.covered
	}
	if o.gpus != b.gpus {
		return o.gpus < b.gpus
	}
	if o.spare != b.spare {
		return o.spare > b.spare
	}
	return o.distinct() < b.distinct()
}

// distinct is the number of different layouts among the outcome's GPUs.
func (o *outcome) distinct() int {
	if o.gpus == 2 && o.picks[0] == o.picks[1] {
		return 1
	}
	return o.gpus
}

// search plans rem on gpus GPUs and returns the candidates of the GPUs that serve demand and
// the demand still uncovered. While more than exactGPUs GPUs are left it takes the greedy step,
// unless the rest fits in exactGPUs GPUs, which the exhaustive step then proves and plans.
func (p *planner) search(rem demandVec, gpus int) ([]int, demandVec) {
	var used []int
	for gpus > exactGPUs && rem != (demandVec{}) {
		if p.lowerBound(rem) <= exactGPUs {
			if o := p.exact(rem, exactGPUs); o.covered == p.weightOf(rem) {
				return p.take(used, rem, &o)
			}
		}
		o := p.exact(rem, 1)
		if o.gpus == 0 {
			return used, rem
		}
		used, rem = p.take(used, rem, &o)
		gpus--
	}
	o := p.exact(rem, min(gpus, exactGPUs))
	return p.take(used, rem, &o)
}

// take appends o's GPUs to used and removes their capacity from rem.
func (p *planner) take(used []int, rem demandVec, o *outcome) ([]int, demandVec) {
	for _, i := range o.picks[:o.gpus] {
		used = append(used, i)
		rem = p.minus(rem, &p.cands[i].c)
	}
	return used, rem
}

// exact returns the best outcome for rem over every single candidate and, when k ≥ 2, every
// unordered pair of candidates. The zero outcome (no GPU) is returned when nothing can be
// covered. Pairs are pruned by the bound covered(i+j) ≤ covered(i) + covered(j), and only
// candidates that cover something alone are paired (a pair with a useless member never beats
// the other member alone).
func (p *planner) exact(rem demandVec, k int) outcome {
	var best outcome
	if rem == (demandVec{}) || k <= 0 {
		return best
	}
	var buf [maxPairable]int
	useful := buf[:0] // candidates covering something, in candidate order
	var cov [maxPairable]int
	maxCov := 0
	for i := range p.cands {
		o := p.score(rem, &p.cands[i].c)
		if o.covered == 0 {
			continue
		}
		o.picks[0], o.gpus = i, 1
		if o.better(&best) {
			best = o
		}
		if len(useful) < maxPairable {
			cov[len(useful)] = o.covered
			useful = append(useful, i)
			maxCov = max(maxCov, o.covered)
		}
	}
	if k < 2 || best.covered == p.weightOf(rem) {
		return best
	}
	for a, i := range useful {
		if !p.canBeat(cov[a]+maxCov, &best) {
			continue
		}
		for b := a; b < len(useful); b++ {
			if p.canBeat(cov[a]+cov[b], &best) {
				p.tryPair(rem, i, useful[b], &best)
			}
		}
	}
	return best
}

// maxPairable bounds the candidates the pair search considers (Layouts has 31 on an 8-slot
// GPU, 34 with the +me layouts); further ones are tried alone only.
const maxPairable = 64

// canBeat reports whether a pair covering at most upper could beat best: a pair beats a single
// only by covering more, another pair also by equal cover and more spare.
func (p *planner) canBeat(upper int, best *outcome) bool {
	return upper > best.covered || (upper == best.covered && best.gpus == 2)
}

// tryPair scores candidates i and j together and keeps them in best if they beat it.
func (p *planner) tryPair(rem demandVec, i, j int, best *outcome) {
	c := p.cands[i].c
	for x, n := range p.cands[j].c {
		c[x] += n
	}
	o := p.score(rem, &c)
	o.picks, o.gpus = [exactGPUs]int{i, j}, 2
	if o.better(best) {
		*best = o
	}
}

// score computes covered and spare for the capacity c against rem.
func (p *planner) score(rem demandVec, c *counts) outcome {
	var o outcome
	for k := range p.m.Profiles {
		have, w := int(c[k]), p.m.weight[k]
		used := min(have, rem[k])
		o.covered += used * w
		spare := (have - used) * w
		if p.mix[k] > 0 {
			spare *= 2
		}
		o.spare += spare
	}
	return o
}

// minus removes the capacity c from rem.
func (p *planner) minus(rem demandVec, c *counts) demandVec {
	for k := range p.m.Profiles {
		rem[k] = max(0, rem[k]-int(c[k]))
	}
	return rem
}

// weightOf is Σ rem × weight, the covered value of serving all of rem.
func (p *planner) weightOf(rem demandVec) int {
	total := 0
	for k, n := range rem {
		total += n * p.m.weight[k]
	}
	return total
}

// lowerBound is the fewest GPUs rem could fit in, by compute slices and memory slots alone.
func (p *planner) lowerBound(rem demandVec) int {
	compute, slots := 0, 0
	for k := range p.m.Profiles {
		compute += rem[k] * p.m.Profiles[k].ComputeSlices
		slots += rem[k] * p.m.Profiles[k].Size
	}
	byCompute := (compute + p.m.TotalComputeSlices - 1) / p.m.TotalComputeSlices
	bySlots := (slots + p.m.TotalMemorySlots - 1) / p.m.TotalMemorySlots
	return max(byCompute, bySlots)
}
