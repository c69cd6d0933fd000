package gcp

import "testing"

// TestEveryAcceleratorHasFacts: each GCE accelerator the catalog describes names a model that
// catalog.GPUFacts knows, with its memory (GCE does not report it).
func TestEveryAcceleratorHasFacts(t *testing.T) {
	for acc, model := range gpuModels {
		g, ok := gpuFor(acc, 2)
		if !ok || g.Model != model || g.Count != 2 || g.MemoryMiB <= 0 || g.Architecture == "" || g.Product == "" {
			t.Errorf("gpuFor(%s) = %+v, %v; want model %s with its facts", acc, g, ok, model)
		}
	}
	if g, ok := gpuFor("nvidia-tesla-p4", 1); ok {
		t.Errorf("gpuFor(nvidia-tesla-p4) = %+v, want false: the catalog has no P4", g)
	}
}
