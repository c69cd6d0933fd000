package gcp

import (
	"math/bits"

	"github.com/tiler-dev/tiler/api/catalog"
)

// gpuModels maps GCE accelerator types to the catalog's GPU model names (as in the embedded
// gcp-us-central1 catalog and testdata/catalog/gpu-catalog.csv), whose facts catalog.GPUFacts
// has. Machine types whose accelerator is not listed are left out of the catalog: Tiler cannot
// describe their GPUs.
var gpuModels = map[string]string{
	"nvidia-tesla-a100":     "A100-40GB",
	"nvidia-a100-80gb":      "A100-80GB",
	"nvidia-l4":             "L4",
	"nvidia-h100-80gb":      "H100-80GB",
	"nvidia-h100-mega-80gb": "H100-80GB-Mega", // A3 Mega: A3 High's GPU with more network bandwidth
	"nvidia-tesla-t4":       "T4",
	"nvidia-tesla-v100":     "V100",
}

// gpuFor returns the catalog GPU for count accelerators of type acc; GCE does not report the
// memory of an accelerator, so all of it comes from catalog.GPUFacts.
func gpuFor(acc string, count int) (catalog.GPU, bool) {
	model, ok := gpuModels[acc]
	if !ok {
		return catalog.GPU{}, false
	}
	g, ok := catalog.GPUFacts(model)
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
	return min(n, catalog.MaxGPUs) // a payload without maximumCardsPerInstance stays in the catalog's bounds
}
