package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEmbeddedGPUsHaveTheFacts: every GPU of the embedded catalogs is one model of GPUFacts and
// carries its facts, so the table and the generated catalogs cannot drift apart.
func TestEmbeddedGPUsHaveTheFacts(t *testing.T) {
	for _, name := range EmbeddedNames() {
		c, err := Embedded(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range c.Types {
			if it.GPU.Count == 0 {
				continue
			}
			want, ok := GPUFacts(it.GPU.Model)
			if !ok {
				t.Errorf("%s %s: GPU model %q is not in GPUFacts", name, it.Name, it.GPU.Model)
				continue
			}
			want.Count = it.GPU.Count
			if diff := cmp.Diff(want, it.GPU); diff != "" {
				t.Errorf("%s %s: GPU differs from GPUFacts (-facts +catalog):\n%s", name, it.Name, diff)
			}
		}
	}
}

func TestGPUFactsOfAnUnknownModel(t *testing.T) {
	g, ok := GPUFacts("MI300X")
	if ok || g != (GPU{Model: "MI300X"}) {
		t.Errorf("GPUFacts(MI300X) = %+v, %v; want only the model and false", g, ok)
	}
}
