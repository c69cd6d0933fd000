package gpushare

import "math"

// FGD is the fragmentation gradient descent policy of the FGD paper ("06-FGD",
// FGDScorePlugin in hkust-adsl/kubernetes-scheduler-simulator): place the pod where the
// node's fragmentation against the typical-pod mix grows least, and on that node use the GPU
// that does so. It reproduces the paper's integer scores, ties included.
type FGD struct {
	mix PodMix
}

// NewFGD returns the FGD scorer measuring fragmentation against mix.
func NewFGD(mix PodMix) *FGD { return &FGD{mix: mix} }

// Name returns "fgd".
func (*FGD) Name() string { return "fgd" }

// Score returns the paper's integer FGD score
//
//	Δ     = F(node) − F(node after placing the pod)     (milli-GPU, see PodMix.Fragmentation)
//	score = trunc(100 · sigmoid(Δ / 1000))              (0..100; 50 when nothing changes)
//
// A fractional pod is tried on every GPU that holds it and keeps the best GPU (the lowest index
// among equal integer scores, as the paper does); whole GPUs are the lowest-indexed free ones.
func (f *FGD) Score(node *NodeState, pod Request) (float64, GPUSet, bool) {
	if !node.Fits(pod) {
		return 0, 0, false
	}
	before := f.mix.Fragmentation(node)
	if pod.Shares() {
		best, idx := int64(0), -1
		for i := 0; i < node.NumGPUs; i++ {
			if node.GPUMilliFree[i] < pod.GPUMilli || seenFree(node, i) {
				continue
			}
			s := fgdScore(before, f.mix.afterShared(node, pod, i))
			if idx < 0 || s > best {
				best, idx = s, i
			}
		}
		return float64(best), GPUSet(0).With(idx), true
	}
	gpus, ok := node.firstFullGPUs(pod.NumGPUs)
	if !ok {
		return 0, 0, false
	}
	return float64(fgdScore(before, f.mix.afterWhole(node, pod, gpus))), gpus, true
}

// fgdScore is trunc(100 · sigmoid((before − after)/1000)), the paper's integer FGD score.
func fgdScore(before, after float64) int64 {
	return int64(sigmoid((before-after)/1000) * 100)
}

func sigmoid(x float64) float64 { return 1.0 / (1.0 + math.Exp(-x)) }

// seenFree reports whether a lower-indexed GPU has the same free share as GPU i: placing the pod
// on either leaves the same multiset of free shares, hence the same fragmentation, so only the
// first needs scoring (and the paper would keep the first on the tie anyway).
func seenFree(node *NodeState, i int) bool {
	for j := 0; j < i; j++ {
		if node.GPUMilliFree[j] == node.GPUMilliFree[i] {
			return true
		}
	}
	return false
}

// afterShared is the node's fragmentation after a fractional pod takes its share of GPU i.
func (m *PodMix) afterShared(node *NodeState, pod Request, i int) float64 {
	gpus := node.GPUMilliFree
	gpus[i] -= pod.GPUMilli
	return m.fragmentation(node.Model, node.CPUMilliFree-pod.CPUMilli, &gpus, node.NumGPUs)
}

// afterWhole is the node's fragmentation after a CPU-only or whole-GPU pod takes the GPUs in set.
func (m *PodMix) afterWhole(node *NodeState, pod Request, set GPUSet) float64 {
	gpus := node.GPUMilliFree
	for i := 0; i < node.NumGPUs; i++ {
		if set.Has(i) {
			gpus[i] -= pod.GPUMilli
		}
	}
	return m.fragmentation(node.Model, node.CPUMilliFree-pod.CPUMilli, &gpus, node.NumGPUs)
}
