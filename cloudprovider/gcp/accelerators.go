package gcp

import (
	"math/bits"

	"github.com/tiler-dev/tiler/api/catalog"
)

// gpus maps GCE accelerator types to the catalog's GPU descriptions (models as in the embedded
// gcp-us-central1 catalog and testdata/catalog/gpu-catalog.csv). Machine types whose accelerator
// is not listed are left out of the catalog: Tiler cannot describe their GPUs.
var gpus = map[string]catalog.GPU{
	"nvidia-tesla-a100": {Model: "A100-40GB", MemoryMiB: 40960, Product: "NVIDIA A100-SXM4-40GB", Architecture: "Ampere", CUDAComputeCapability: "8.0"},
	"nvidia-a100-80gb":  {Model: "A100-80GB", MemoryMiB: 81920, Product: "NVIDIA A100-SXM4-80GB", Architecture: "Ampere", CUDAComputeCapability: "8.0"},
	"nvidia-l4":         {Model: "L4", MemoryMiB: 24576, Product: "NVIDIA L4", Architecture: "Ada Lovelace", CUDAComputeCapability: "8.9"},
	"nvidia-h100-80gb":  {Model: "H100-80GB", MemoryMiB: 81920, Product: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
	// A3 Mega has the same GPU as A3 High with more network bandwidth; gpu-catalog.csv names it
	// apart so that pools can choose it.
	"nvidia-h100-mega-80gb": {Model: "H100-80GB-Mega", MemoryMiB: 81920, Product: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
	"nvidia-tesla-t4":       {Model: "T4", MemoryMiB: 16384, Product: "Tesla T4", Architecture: "Turing", CUDAComputeCapability: "7.5"},
	"nvidia-tesla-v100":     {Model: "V100", MemoryMiB: 16384, Product: "Tesla V100-SXM2-16GB", Architecture: "Volta", CUDAComputeCapability: "7.0"},
}

// gpuFor returns the catalog GPU for count accelerators of type acc.
func gpuFor(acc string, count int) (catalog.GPU, bool) {
	g, ok := gpus[acc]
	g.Count = count
	return g, ok
}

// attachable lists the accelerators that are attached to N1 machines (guestAccelerators) rather
// than built into the machine type. P4 and P100 are attachable too but have no catalog model.
var attachable = map[string]bool{"nvidia-tesla-t4": true, "nvidia-tesla-v100": true}

// attachesGPUs reports whether a machine type takes attached GPUs: the predefined N1 shapes.
// Shared-core (f1, g1) and memory-optimised N1 shapes (megamem, ultramem) do not.
func attachesGPUs(machineType string) bool {
	for _, p := range []string{"n1-standard-", "n1-highmem-", "n1-highcpu-"} {
		if len(machineType) > len(p) && machineType[:len(p)] == p {
			return true
		}
	}
	return false
}

// attachCount is the number of GPUs the catalog attaches to an N1 machine: one GPU per 8 vCPUs,
// at least one, rounded up to a power of two (GCE allows 1, 2, 4 or 8) and capped at the
// accelerator's maximumCardsPerInstance. The catalog offers one GPU count per machine shape so
// that it stays small; this reproduces the embedded catalog's N1 shapes (n1-standard-4 and -8 with
// one GPU, n1-standard-16 with two) and stays within GCE's vCPU limits per GPU count (V100: 12
// vCPUs per GPU; T4: 48 vCPUs for one or two GPUs, 96 for four).
func attachCount(vcpu, maxCards int) int {
	n := max(1, vcpu/8)
	n = 1 << bits.Len(uint(n-1)) // next power of two ≥ n
	if maxCards > 0 {
		n = min(n, maxCards)
	}
	return n
}
