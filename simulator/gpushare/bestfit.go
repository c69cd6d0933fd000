package gpushare

// Normalisers of BestFit: the largest node of the FGD paper's cluster (MaxSpecCpu, MaxSpecGpu in
// its simulator) — 128 cores and 8 GPUs.
const (
	bestFitMaxCPUMilli = 128000
	bestFitMaxGPUMilli = 8 * MilliPerGPU
)

// BestFit is the baseline policy of the FGD paper ("05-BestFit", BestFitScorePlugin in
// hkust-adsl/kubernetes-scheduler-simulator): prefer the node left with the least CPU and GPU
// after placing the pod; on the chosen node a fractional pod goes to the tightest GPU that holds
// it (the paper's "best" GPU selection) and whole GPUs are the lowest-indexed free ones.
type BestFit struct{}

// NewBestFit returns the BestFit scorer; it holds no state.
func NewBestFit() *BestFit { return &BestFit{} }

// Name returns "bestfit".
func (*BestFit) Name() string { return "bestfit" }

// Score returns the paper's integer BestFit score
//
//	leftover = 0.5·(cpuFree − cpuReq)/128000 + 0.5·(gpuFreeTotal − gpuReqTotal)/8000
//	score    = trunc(100 · (1 − leftover))        (0..100, higher = tighter fit)
//
// where cpu is in milli-cores and gpu is the node's free milli-GPU summed over its GPUs. The
// truncation to an integer is kept on purpose: it makes many nodes tie, and the paper's
// scheduler breaks those ties at random, which is part of the published baseline.
func (*BestFit) Score(node *NodeState, pod Request) (float64, GPUSet, bool) {
	if !node.Fits(pod) {
		return 0, 0, false
	}
	gpus, ok := defaultGPUs(node, pod)
	if !ok {
		return 0, 0, false
	}
	return float64(bestFitScore(node, pod)), gpus, true
}

// bestFitScore computes the formula of BestFit.Score in the paper's evaluation order, so that
// the truncation falls on exactly the same side.
func bestFitScore(node *NodeState, pod Request) int64 {
	var leftover float64
	leftover += float64(node.CPUMilliFree-pod.CPUMilli) / bestFitMaxCPUMilli * 0.5
	leftover += float64(node.GPUMilliFreeTotal()-pod.TotalGPUMilli()) / bestFitMaxGPUMilli * 0.5
	return int64((1.0 - leftover) * 100)
}
