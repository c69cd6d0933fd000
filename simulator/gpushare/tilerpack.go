package gpushare

// TilerPack is Tiler's GPU-sharing placement policy. Placeholder: refined below.
type TilerPack struct {
	mix PodMix
}

// NewTilerPack returns the TilerPack scorer measuring fragmentation against mix.
func NewTilerPack(mix PodMix) *TilerPack { return &TilerPack{mix: mix} }

// Name returns "tiler".
func (*TilerPack) Name() string { return "tiler" }

// Score is defined below.
func (t *TilerPack) Score(node *NodeState, pod Request) (float64, GPUSet, bool) {
	if !node.Fits(pod) {
		return 0, 0, false
	}
	before := t.mix.Fragmentation(node)
	if pod.Shares() {
		best, idx := 0.0, -1
		for i := 0; i < node.NumGPUs; i++ {
			if node.GPUMilliFree[i] < pod.GPUMilli || seenFree(node, i) {
				continue
			}
			s := before - t.mix.afterShared(node, pod, i)
			if idx < 0 || s > best {
				best, idx = s, i
			}
		}
		return best, GPUSet(0).With(idx), true
	}
	gpus, ok := node.firstFullGPUs(pod.NumGPUs)
	if !ok {
		return 0, 0, false
	}
	return before - t.mix.afterWhole(node, pod, gpus), gpus, true
}
