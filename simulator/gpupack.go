package simulator

import (
	"sort"
	"strconv"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// GPU pods on nodes that already exist (or are in flight) are placed with Tiler's GPU-sharing
// policy, gpushare.TilerPack — the policy `tiler bench fgd` measures on the Alibaba trace —
// rather than first fit: among the existing nodes that can take a pod asking for device-plugin
// GPUs, the one whose fragmentation against the pending pods' mix grows least is tried first.
// New nodes are still filled first fit: they are bought for what is pending, which the packing
// and the choice of their types already fit together.
//
// The node's GPU state is what the device plugin exposes: G physical GPUs (nvidia.com/gpu.count,
// else the tiler.dev/gpu-count label) advertised as K replicas each (nvidia.com/gpu.replicas,
// time-slicing or MPS; 1 for exclusive GPUs), as nvidia.com/gpu or nvidia.com/gpu.shared. A pod
// asking r units takes r/K of one GPU (r < K) or r whole GPUs (K = 1). The scheduler sees only
// the count, not which GPU a replica is on; the state assumes replicas are handed out GPU by GPU
// (the device plugin's order), so u used units fill the first ⌊u/K⌋ GPUs. MIG slices and DRA
// devices are not ranked this way (MIG layouts and the allocator decide those).

// gpuRank is the ranking's working set: the scorer built from the pending pods' mix, per GPU
// resource.
type gpuRank struct {
	scorer *gpushare.TilerPack
	dims   []int // the device-plugin GPU dimensions ranked
	// nodes are the existing nodes that expose ranked GPUs, in node order, and shapes their
	// shapes: built on first use (existing nodes never change their labels or allocatable), so
	// that ranking does not walk every node of a large cluster for every GPU pod.
	nodes  []*simNode
	shapes []gpuShape
	built  bool
}

// gpuShape is how a node exposes its GPUs: physical count, replicas per GPU, model and the
// resource they are advertised as.
type gpuShape struct {
	gpus, replicas int
	model          string
	dim            int
}

// setupGPURank builds the scorer when pending pods ask for device-plugin GPUs and some existing
// node offers them; it returns nil otherwise.
func (s *state) setupGPURank() *gpuRank {
	var dims []int
	for _, name := range []string{"nvidia.com/gpu", string(api.ResourceGPUShared)} {
		if i, ok := s.dims.index[corev1.ResourceName(name)]; ok {
			dims = append(dims, i)
		}
	}
	if len(dims) == 0 {
		return nil
	}
	any := false
	for _, n := range s.nodes {
		if _, ok := s.gpuShapeOf(n, dims); ok && n.existing {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	// The mix: the pending GPU pods' requests, in units of the most common replica count of the
	// existing nodes that advertise their resource.
	var reqs []gpushare.Request
	common := map[int]int{}
	for _, pi := range s.pending {
		for _, d := range dims {
			if r := pi.req[d]; r > 0 {
				k, ok := common[d]
				if !ok {
					k = s.commonReplicas(d, dims)
					common[d] = k
				}
				if req, ok := gpuRequest(pi, r, k, ""); ok {
					reqs = append(reqs, req)
				}
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	mix, err := gpushare.NewPodMix(reqs, gpushare.DefaultMixCoveragePct)
	if err != nil {
		return nil
	}
	return &gpuRank{scorer: gpushare.NewTilerPack(mix), dims: dims}
}

func (s *state) commonReplicas(dim int, dims []int) int {
	counts := map[int]int{}
	best, bestN := 1, 0
	for _, n := range s.nodes {
		if sh, ok := s.gpuShapeOf(n, dims); ok && n.existing && sh.dim == dim {
			counts[sh.replicas]++
			if c := counts[sh.replicas]; c > bestN || c == bestN && sh.replicas < best {
				best, bestN = sh.replicas, c
			}
		}
	}
	return best
}

// gpuShapeOf reads an existing node's GPU exposure; false for nodes without device-plugin GPUs.
func (s *state) gpuShapeOf(n *simNode, dims []int) (gpuShape, bool) {
	if n.alloc == nil {
		return gpuShape{}, false
	}
	for _, d := range dims {
		units := n.alloc[d]
		if units <= 0 {
			continue
		}
		k := 1
		if v, err := strconv.Atoi(n.labels[api.LabelGPUReplicas]); err == nil && v > 0 {
			k = v
		}
		g := 0
		for _, l := range []string{api.LabelGPUCountNVIDIA, api.LabelGPUCount} {
			if v, err := strconv.Atoi(n.labels[l]); err == nil && v > 0 {
				g = v
				break
			}
		}
		if g == 0 {
			g = int(units) / k
		}
		if g <= 0 || g > gpushare.MaxGPUsPerNode || int64(g*k) < units {
			return gpuShape{}, false
		}
		model := n.labels[api.LabelGPUProduct]
		if model == "" {
			model = n.labels[api.LabelGPUModel]
		}
		if model == "" {
			model = "gpu"
		}
		return gpuShape{gpus: g, replicas: k, model: model, dim: d}, true
	}
	return gpuShape{}, false
}

// gpuRequest converts a pod asking r units of a resource with k replicas per GPU.
func gpuRequest(pi *podInfo, r int64, k int, model string) (gpushare.Request, bool) {
	req := gpushare.Request{CPUMilli: pi.req[dimCPU], MemoryMiB: pi.req[dimMemory] >> 20}
	switch {
	case k == 1:
		req.NumGPUs, req.GPUMilli = int(r), gpushare.MilliPerGPU
	case r < int64(k):
		req.NumGPUs, req.GPUMilli = 1, r*gpushare.MilliPerGPU/int64(k)
	default:
		return gpushare.Request{}, false
	}
	if req.NumGPUs > gpushare.MaxGPUsPerNode {
		return gpushare.Request{}, false
	}
	return req, true
}

// nodeState is the node's free capacity as gpushare sees it.
func (s *state) nodeState(n *simNode, sh gpuShape) (gpushare.NodeState, bool) {
	free := func(d int) int64 { return max(n.alloc[d]-n.used[d], 0) }
	ns, err := gpushare.NewNodeState(n.name, sh.model, n.alloc[dimCPU], n.alloc[dimMemory]>>20, sh.gpus)
	if err != nil {
		return ns, false
	}
	ns.CPUMilliFree, ns.MemoryMiBFree = free(dimCPU), free(dimMemory)>>20
	used := n.used[sh.dim]
	k := int64(sh.replicas)
	for i := 0; i < sh.gpus; i++ {
		onGPU := min(max(used-int64(i)*k, 0), k) // units used on GPU i
		ns.GPUMilliFree[i] = (k - onGPU) * gpushare.MilliPerGPU / k
	}
	return ns, true
}

// rankable builds, once, the list of existing nodes whose GPUs are ranked.
func (s *state) rankable() {
	g := s.gpuRank
	if g.built {
		return
	}
	g.built = true
	for _, n := range s.nodes {
		if sh, ok := s.gpuShapeOf(n, g.dims); ok && n.existing {
			g.nodes, g.shapes = append(g.nodes, n), append(g.shapes, sh)
		}
	}
}

// rankedGPUNodes returns the existing nodes that can take the pod by its GPU request, best
// TilerPack score first (ties in node order), or nil when the pod asks for no ranked GPU.
func (s *state) rankedGPUNodes(pi *podInfo) []*simNode {
	if s.gpuRank == nil {
		return nil
	}
	type cand struct {
		n     *simNode
		score float64
	}
	var cands []cand
	s.rankable()
	for i, n := range s.gpuRank.nodes {
		sh := s.gpuRank.shapes[i]
		if !n.available() || pi.req[sh.dim] <= 0 || !s.podFits(pi, n.used, n.alloc) {
			continue
		}
		req, ok := gpuRequest(pi, pi.req[sh.dim], sh.replicas, sh.model)
		if !ok {
			continue
		}
		ns, ok := s.nodeState(n, sh)
		if !ok {
			continue
		}
		if score, _, fits := s.gpuRank.scorer.Score(&ns, req); fits {
			cands = append(cands, cand{n, score})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	out := make([]*simNode, len(cands))
	for i, c := range cands {
		out[i] = c.n
	}
	return out
}
