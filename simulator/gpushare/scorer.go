package gpushare

// Scorer ranks one node for one pending pod. Implementations live one per file.
type Scorer interface {
	// Name is the policy's short name, used in flags and results ("bestfit", "fgd", "tiler").
	Name() string
	// Score is called once per candidate node while a pod is being placed. It returns the node's
	// score (higher is better; scores of different scorers are not comparable), the GPUs the pod
	// would use on this node (empty for a CPU-only pod), and ok=false when the pod does not fit
	// (see NodeState.Fits), in which case score and gpus are meaningless. Score never modifies
	// node and never fails otherwise. It is a pure function of node and pod, so the caller may
	// cache its result until the node changes.
	Score(node *NodeState, pod Request) (score float64, gpus GPUSet, ok bool)
}

// Compile-time checks that every policy implements Scorer.
var (
	_ Scorer = (*BestFit)(nil)
	_ Scorer = (*FGD)(nil)
	_ Scorer = (*TilerPack)(nil)
)

// defaultGPUs is the GPU choice of policies that do not pick GPUs themselves: the tightest GPU
// for a fractional pod, the lowest-indexed fully free GPUs otherwise.
func defaultGPUs(node *NodeState, pod Request) (GPUSet, bool) {
	switch {
	case pod.NumGPUs == 0:
		return 0, true
	case pod.Shares():
		i, ok := node.tightestGPU(pod.GPUMilli)
		if !ok {
			return 0, false
		}
		return GPUSet(0).With(i), true
	default:
		return node.firstFullGPUs(pod.NumGPUs)
	}
}
