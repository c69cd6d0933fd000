// Package gpushare models the GPU state of nodes for GPU-sharing workloads and ranks nodes for
// a pending pod with pluggable placement policies.
//
// A NodeState is one node: its free CPU and memory, its GPU model and the free share of each GPU
// in milli-GPU (0..1000). A Request is one pod: CPU, memory, and either no GPU, a fraction of one
// GPU (NumGPUs 1, GPUMilli below 1000, the time-slicing / "GPU share" case) or whole GPUs. A
// Scorer looks at one node and one pod and returns a score (higher is better), the GPUs it
// would use, and whether the pod fits at all.
//
// Placement rules, shared by every scorer (see NodeState.Fits):
//   - a fractional pod needs GPUMilli free on ONE GPU;
//   - a whole- or multi-GPU pod needs NumGPUs fully free GPUs (1000 milli each);
//   - CPU and memory must fit; GPUModels, when not empty, lists the GPU models allowed;
//   - a CPU-only pod (NumGPUs 0) needs only CPU and memory.
//
// Scorers:
//   - BestFit, the baseline of the FGD paper: the node that is left with the least CPU and GPU;
//   - FGD, fragmentation gradient descent (Weng et al., USENIX ATC '23): the node and GPU whose
//     fragmentation, measured against a PodMix of typical pods, grows least;
//   - TilerPack, Tiler's policy: FGD's fragmentation delta plus the GPU a node's CPU can no
//     longer feed and the GPU share the pods to come are expected to leave unused.
//
// Every scorer is a pure function of (node, pod): the same inputs always give the same result,
// so callers may cache scores per node version. The package has no I/O, reads no clock and
// draws no random numbers.
package gpushare
