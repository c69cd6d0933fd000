package gpushare

// TilerPack is Tiler's GPU-sharing placement policy. It ranks nodes like FGD — an integer score
// of a fragmentation delta against the typical-pod mix, so that nearly equal nodes tie and the
// scheduler packs them in its node order — but its delta also counts GPU that the node's CPU can
// no longer feed (see Score), and on a node it picks the GPU whose free share the pods still to
// come are expected to fill best (see Waste).
type TilerPack struct {
	mix PodMix
	// waste[f] is the expected GPU share left unusable on one GPU with f milli free (Waste).
	waste [MilliPerGPU + 1]float64
	// cpuPerGPU is κ of Score: the mix's GPU pods' CPU per milli-GPU; cpuPerGPUForCPUOnly is κ/2.
	cpuPerGPU, cpuPerGPUForCPUOnly float64
}

// NewTilerPack returns the TilerPack scorer for the pending-pod mix; it precomputes the
// per-GPU expected waste table (1001 entries, O(1000 × mix size)) and the mix's CPU per GPU.
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
	var cpu, gpu float64
	for _, e := range mix.entries {
		if e.Shape.NumGPUs > 0 {
			cpu += e.Weight * float64(e.Shape.CPUMilli)
			gpu += e.Weight * float64(int64(e.Shape.NumGPUs)*e.Shape.GPUMilli)
		}
	}
	if gpu > 0 && cpu > 0 {
		t.cpuPerGPU = cpu / gpu
		t.cpuPerGPUForCPUOnly = t.cpuPerGPU / 2
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

// starved is the node's free GPU, in milli-GPU, that its free CPU cannot feed when GPU pods need
// cpuPerGPU milli-CPU per milli-GPU: max(0, gpuFree − cpuFree/cpuPerGPU). It is 0 when the mix
// has no GPU pods.
func starved(gpuFree, cpuFree int64, cpuPerGPU float64) float64 {
	if cpuPerGPU <= 0 {
		return 0
	}
	return max(0, float64(gpuFree)-float64(cpuFree)/cpuPerGPU)
}

// Score returns the node's score and GPUs:
//
//	ΔF(g)    = F(node) − F(node after the pod takes GPUs g)          (PodMix.Fragmentation)
//	S(n)     = max(0, G(n) − C(n)/κ)                                 (GPU the CPU cannot feed)
//	ΔS(g)    = S(node) − S(node after the pod takes GPUs g)
//	score(g) = trunc(100 · sigmoid((ΔF(g) + ΔS(g)) / 1000))
//	ΔW(g)    = Σ_gpu V(free) − Σ_gpu V(free after g)                 (V as in Waste)
//	g*       = argmax_g (score(g), ΔW(g))   lexicographically; the lowest index on full ties
//	Score    = score(g*)
//
// where G(n) is the node's free GPU and C(n) its free CPU (milli), and κ is the CPU the mix's GPU
// pods ask per milli-GPU (Σ w_t·cpu_t / Σ w_t·gpus_t·m_t over its GPU shapes, about 11 cores per
// GPU on the Alibaba trace). S is the fragmentation FGD does not see: GPU on a node whose CPU
// is spent is as lost as a GPU sliver, but FGD only notices it when the CPU falls below a whole
// typical pod's request. With ΔS a CPU-heavy GPU pod goes to a CPU-rich node, and a CPU-only pod
// to a node whose CPU the free GPUs do not need. For CPU-only pods κ is halved: a CPU-only pod
// may take a node's CPU down to half of what its free GPUs would need before it is steered away.
// Protecting the full κ fills the CPU-rich nodes with CPU-only pods first and, when CPU-only pods
// ask for more CPU than the cluster can spare (the cpu250 trace), costs 1.5 points of GPU
// allocation there and changes nothing elsewhere; κ/3 to κ/1.4 agree within the seed noise.
//
// The integer score is FGD's quantisation, kept on purpose: nodes within one point tie and the
// scheduler takes the first in its node order, which consolidates. A fractional pod tries every
// GPU that holds it; a CPU-only or whole-GPU pod has one choice, the lowest-indexed fully free
// GPUs.
func (t *TilerPack) Score(node *NodeState, pod Request) (float64, GPUSet, bool) {
	if !node.Fits(pod) {
		return 0, 0, false
	}
	kappa := t.cpuPerGPU
	if pod.CPUOnly() {
		kappa = t.cpuPerGPUForCPUOnly
	}
	gpuFree := node.GPUMilliFreeTotal()
	// ΔS does not depend on which GPUs the pod takes, only on how much GPU and CPU.
	dStarved := starved(gpuFree, node.CPUMilliFree, kappa) -
		starved(gpuFree-pod.TotalGPUMilli(), node.CPUMilliFree-pod.CPUMilli, kappa)
	before := t.mix.Fragmentation(node)
	score := func(after float64) int64 {
		return int64(sigmoid((before-after+dStarved)/1000) * 100)
	}
	if !pod.Shares() {
		gpus, ok := node.firstFullGPUs(pod.NumGPUs)
		if !ok {
			return 0, 0, false
		}
		return float64(score(t.mix.afterWhole(node, pod, gpus))), gpus, true
	}
	best, bestGain, idx := int64(0), 0.0, -1
	for i := 0; i < node.NumGPUs; i++ {
		free := node.GPUMilliFree[i]
		if free < pod.GPUMilli || seenFree(node, i) {
			continue
		}
		s := score(t.mix.afterShared(node, pod, i))
		// Only GPU i changes, so ΔW reduces to V(free) − V(free − m).
		gain := t.waste[free] - t.waste[free-pod.GPUMilli]
		if idx < 0 || s > best || s == best && gain > bestGain {
			best, bestGain, idx = s, gain, i
		}
	}
	return float64(best), GPUSet(0).With(idx), true
}
