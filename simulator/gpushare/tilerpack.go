package gpushare

// TilerPack is Tiler's GPU-sharing placement policy. It ranks nodes exactly like FGD — the
// paper's integer score of the fragmentation delta against the typical-pod mix, so that nodes
// within one score point count as equal and the scheduler packs them in its node order — and
// improves the choice of GPU on the node with a lookahead: among the GPUs with the best integer
// score it takes the one whose free share is expected to be filled best by the pods still to
// come (see Waste).
type TilerPack struct {
	mix PodMix
	// waste[f] is the expected GPU share left unusable on one GPU with f milli free (Waste).
	waste [MilliPerGPU + 1]float64
}

// NewTilerPack returns the TilerPack scorer for the pending-pod mix; it precomputes the
// per-GPU expected waste table (1001 entries, O(1000 × mix size)).
func NewTilerPack(mix PodMix) *TilerPack {
	t := &TilerPack{mix: mix}
	for f := 0; f <= MilliPerGPU; f++ {
		var fit, sum float64
		for _, e := range mix.entries {
			if e.Shape.NumGPUs == 1 && e.Shape.GPUMilli <= int64(f) {
				fit += e.Weight
				sum += e.Weight * t.waste[f-int(e.Shape.GPUMilli)]
			}
		}
		if fit == 0 {
			t.waste[f] = float64(f)
		} else {
			t.waste[f] = sum / fit
		}
	}
	return t
}

// Name returns "tiler".
func (*TilerPack) Name() string { return "tiler" }

// Waste is the expected share of a GPU with freeMilli free that no pod will ever use, if pods
// keep arriving from the mix and each one that fits lands on it:
//
//	V(f) = f                                              if no single-GPU shape fits in f
//	V(f) = Σ_{t: m_t ≤ f} w_t · V(f − m_t) / Σ_{t: m_t ≤ f} w_t   otherwise
//
// where m_t is the GPU share and w_t the weight of single-GPU shape t. A one-step measure such as
// FGD's sees 530 free as fragment for every pod above 530; V also sees that a 470 and then a 60
// can fill it.
func (t *TilerPack) Waste(freeMilli int64) float64 {
	return t.waste[min(max(freeMilli, 0), MilliPerGPU)]
}

// Score returns the node's score and GPUs:
//
//	Δ(g)     = F(node) − F(node after the pod takes GPUs g)          (PodMix.Fragmentation)
//	score(g) = trunc(100 · sigmoid(Δ(g) / 1000))                     (FGD's integer score)
//	ΔW(g)    = Σ_gpu V(free) − Σ_gpu V(free after g)                 (V as in Waste)
//	g*       = argmax_g (score(g), ΔW(g))   lexicographically; the lowest index on full ties
//	Score    = score(g*)
//
// A fractional pod tries every GPU that holds it; a CPU-only or whole-GPU pod has one choice,
// the lowest-indexed fully free GPUs, where TilerPack equals FGD.
func (t *TilerPack) Score(node *NodeState, pod Request) (float64, GPUSet, bool) {
	if !node.Fits(pod) {
		return 0, 0, false
	}
	before := t.mix.Fragmentation(node)
	if !pod.Shares() {
		gpus, ok := node.firstFullGPUs(pod.NumGPUs)
		if !ok {
			return 0, 0, false
		}
		return float64(fgdScore(before, t.mix.afterWhole(node, pod, gpus))), gpus, true
	}
	best, bestGain, idx := int64(0), 0.0, -1
	for i := 0; i < node.NumGPUs; i++ {
		free := node.GPUMilliFree[i]
		if free < pod.GPUMilli || seenFree(node, i) {
			continue
		}
		s := fgdScore(before, t.mix.afterShared(node, pod, i))
		// Only GPU i changes, so ΔW reduces to V(free) − V(free − m).
		gain := t.waste[free] - t.waste[free-pod.GPUMilli]
		if idx < 0 || s > best || s == best && gain > bestGain {
			best, bestGain, idx = s, gain, i
		}
	}
	return float64(best), GPUSet(0).With(idx), true
}
