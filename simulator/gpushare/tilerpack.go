package gpushare

import (
	"os"
	"strconv"
)

func envF(k string, d float64) float64 {
	if s := os.Getenv(k); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	return d
}

// TilerPack is Tiler's GPU-sharing placement policy.
type TilerPack struct {
	mix PodMix
	// waste[f] is the expected GPU share left unusable on one GPU with f milli free (Waste).
	waste [MilliPerGPU + 1]float64

	lc, lm, kc, km, lco, kco float64
	mode, dfor               int
}

// NewTilerPack returns the TilerPack scorer for the pending-pod mix.
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
	t.lc, t.lm = envF("TP_LC", 0), envF("TP_LM", 0)
	t.kc = cpu / gpu * envF("TP_KC", 1)
	t.km = envF("TP_KM", 40) // MiB per milli-GPU
	t.mode = int(envF("TP_MODE", 0))
	t.dfor = int(envF("TP_DFOR", 0))
	t.lco = envF("TP_LCO", t.lc)
	t.kco = t.kc * envF("TP_KCO", 1)
	return t
}

// Name returns "tiler".
func (*TilerPack) Name() string { return "tiler" }

// Waste is the expected share of a GPU with freeMilli free that no pod will ever use.
func (t *TilerPack) Waste(freeMilli int64) float64 {
	return t.waste[min(max(freeMilli, 0), MilliPerGPU)]
}

// dead is the free GPU the node's free CPU (and memory) cannot back.
func (t *TilerPack) dead(gpuFree float64, cpuFree, memFree int64) float64 {
	var d float64
	if t.lc != 0 {
		d += t.lc * max(0, gpuFree-float64(cpuFree)/t.kc)
	}
	if t.lm != 0 {
		d += t.lm * max(0, gpuFree-float64(memFree)/t.km)
	}
	return d
}

func (t *TilerPack) usable(gpus *[MaxGPUsPerNode]int64, n int) float64 {
	var u float64
	for i := 0; i < n; i++ {
		switch t.mode {
		case 0:
			u += float64(gpus[i])
		case 1:
			u += float64(gpus[i]) - t.waste[gpus[i]]
		}
	}
	return u
}

func (t *TilerPack) score(node *NodeState, pod Request, before, after float64, set GPUSet) int64 {
	delta := before - after
	lc, kc := t.lc, t.kc
	if pod.CPUOnly() {
		t.lc, t.kc = t.lco, t.kco
	}
	defer func() { t.lc, t.kc = lc, kc }()
	if (t.lc != 0 || t.lm != 0) && (t.dfor == 0 || t.dfor == 1 && pod.CPUOnly() || t.dfor == 2 && !pod.CPUOnly()) {
		g := node.GPUMilliFree
		ub := t.usable(&g, node.NumGPUs)
		for i := 0; i < node.NumGPUs; i++ {
			if set.Has(i) {
				g[i] -= pod.GPUMilli
			}
		}
		ua := t.usable(&g, node.NumGPUs)
		delta += t.dead(ub, node.CPUMilliFree, node.MemoryMiBFree) -
			t.dead(ua, node.CPUMilliFree-pod.CPUMilli, node.MemoryMiBFree-pod.MemoryMiB)
	}
	return int64(sigmoid(delta/1000) * 100)
}

// Score returns the node's score and GPUs.
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
		return float64(t.score(node, pod, before, t.mix.afterWhole(node, pod, gpus), gpus)), gpus, true
	}
	best, bestGain, idx := int64(0), 0.0, -1
	for i := 0; i < node.NumGPUs; i++ {
		free := node.GPUMilliFree[i]
		if free < pod.GPUMilli || seenFree(node, i) {
			continue
		}
		s := t.score(node, pod, before, t.mix.afterShared(node, pod, i), GPUSet(0).With(i))
		gain := t.waste[free] - t.waste[free-pod.GPUMilli]
		if idx < 0 || s > best || s == best && gain > bestGain {
			best, bestGain, idx = s, gain, i
		}
	}
	return float64(best), GPUSet(0).With(idx), true
}
