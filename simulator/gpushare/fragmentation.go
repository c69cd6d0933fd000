package gpushare

// Buckets of the paper's fragmentation amount (utils.FragRatioDataMap), in its summation order.
const (
	fragQ1LackBoth  = iota // the pod's GPU and CPU do not fit
	fragQ2LackGPU          // the GPU does not fit
	fragQ3Satisfied        // both fit: only GPUs too small for the pod are fragment
	fragQ4LackCPU          // GPUs fit, CPU does not
	fragXLSatisfied        // CPU-only pod, CPU fits: idle GPUs are useless to it
	fragXRLackCPU          // CPU-only pod, CPU does not fit
	fragNoAccess           // the pod may not use this GPU model
	fragBuckets
)

// Fragmentation is the FGD paper's expected fragmented GPU of a node, in milli-GPU, against the
// mix (NodeGpuShareFragAmountScore in its simulator):
//
//	F(node) = Σ_t w_t · frag_t(node)
//	frag_t  = Σ free milli of GPUs with free < GPUMilli_t   if t's GPUs and CPU both fit ("Q3")
//	        = Σ free milli of all GPUs                      otherwise (t cannot use the node's
//	                                                        idle GPU: lacks GPU, CPU or model,
//	                                                        or t is CPU-only)
//
// where w_t is the probability of typical pod t and "t's GPUs fit" means at least NumGPUs_t
// GPUs each have GPUMilli_t free. Memory is not considered, as in the paper.
func (m *PodMix) Fragmentation(node *NodeState) float64 {
	return m.fragmentation(node.Model, node.CPUMilliFree, &node.GPUMilliFree, node.NumGPUs)
}

// fragmentation is Fragmentation over the node's parts, so that callers can evaluate a what-if
// state without building a NodeState. It accumulates per bucket and sums the buckets except Q3
// in the paper's order, so results match the paper's floating point bit for bit.
func (m *PodMix) fragmentation(model string, cpuFree int64, gpus *[MaxGPUsPerNode]int64, numGPUs int) float64 {
	var total int64
	for i := 0; i < numGPUs; i++ {
		total += gpus[i]
	}
	var b [fragBuckets]float64
	for k := range m.entries {
		e := &m.entries[k]
		w, s := e.Weight, &e.Shape
		if s.GPUMilli == 0 {
			if cpuFree >= s.CPUMilli {
				b[fragXLSatisfied] += w * float64(total)
			} else {
				b[fragXRLackCPU] += w * float64(total)
			}
			continue
		}
		if !modelAccessible(e.models, model) {
			b[fragNoAccess] += w * float64(total)
			continue
		}
		fits, small := 0, int64(0)
		for i := 0; i < numGPUs; i++ {
			if gpus[i] >= s.GPUMilli {
				fits++
			} else {
				small += gpus[i]
			}
		}
		gpuOK, cpuOK := fits > 0 && fits >= s.NumGPUs, cpuFree >= s.CPUMilli
		switch {
		case gpuOK && cpuOK:
			b[fragQ2LackGPU] += w * float64(small)
			b[fragQ3Satisfied] += w * float64(total-small)
		case gpuOK:
			b[fragQ4LackCPU] += w * float64(total)
		case cpuOK:
			b[fragQ2LackGPU] += w * float64(total)
		default:
			b[fragQ1LackBoth] += w * float64(total)
		}
	}
	var out float64
	for i := 0; i < fragBuckets; i++ {
		if i != fragQ3Satisfied {
			out += b[i]
		}
	}
	return out
}

// modelAccessible is the paper's IsNodeAccessibleToPodByType: a shape without models may use
// any node, one with models never a node without GPUs and otherwise only the listed models.
func modelAccessible(models []string, model string) bool {
	if len(models) == 0 {
		return true
	}
	if model == "" {
		return false
	}
	for _, m := range models {
		if m == model {
			return true
		}
	}
	return false
}
