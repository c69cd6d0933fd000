package catalog

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
)

func TestEmbeddedCatalogsValidate(t *testing.T) {
	for _, name := range EmbeddedNames() {
		if _, err := Embedded(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// small is a valid one-type catalog for the bad-input cases to break.
func small() *Catalog {
	return &Catalog{Name: "test", Provider: "aws", Region: "us-east-1", Zones: []string{"us-east-1a"},
		Types: []InstanceType{{Name: "m7i.large", VCPU: 2, MemoryMiB: 8192, Arch: "amd64",
			Offerings: []ZonePrice{{Zone: "us-east-1a", CapacityType: api.OnDemand, PricePerHour: 0.1}}}}}
}

func TestValidateBadInput(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(*Catalog)
		want    string
	}{
		{"2^62 vCPU", func(c *Catalog) { c.Types[0].VCPU = 1 << 62 }, "type m7i.large: vcpu 4611686018427387904 must be in 1..65536"},
		{"memory overflow", func(c *Catalog) { c.Types[0].MemoryMiB = 1 << 50 }, "memoryMiB 1125899906842624 must be in 1..67108864"},
		{"negative gpus", func(c *Catalog) { c.Types[0].GPU.Count = -1 }, "gpu.count -1 must be in 0..64"},
		{"gpus without model", func(c *Catalog) { c.Types[0].GPU.Count = 1 }, "gpu.model is empty"},
		{"gpu memory", func(c *Catalog) { c.Types[0].GPU = GPU{Model: "L4", Count: 1, MemoryMiB: -1} }, "gpu.memoryMiB -1"},
		{"max pods", func(c *Catalog) { c.Types[0].MaxPods = -3 }, "maxPods -3"},
		{"NaN price", func(c *Catalog) { c.Types[0].Offerings[0].PricePerHour = math.NaN() }, "offerings[0].pricePerHour NaN must be positive"},
		{"infinite price", func(c *Catalog) { c.Types[0].Offerings[0].PricePerHour = math.Inf(1) }, "offerings[0].pricePerHour +Inf"},
		{"offering twice", func(c *Catalog) {
			c.Types[0].Offerings = append(c.Types[0].Offerings, ZonePrice{Zone: "us-east-1a", CapacityType: api.OnDemand, PricePerHour: 0.2})
		}, "offerings[1] repeats offerings[0] (us-east-1a on-demand)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat := small()
			if err := cat.Validate(); err != nil {
				t.Fatalf("the valid catalog fails: %v", err)
			}
			c.breakIt(cat)
			err := cat.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDecodeRejectsTrailingData(t *testing.T) {
	b, _ := json.Marshal(small())
	if _, err := Decode(strings.NewReader(string(b) + string(b))); err == nil || !strings.Contains(err.Error(), "after the catalog") {
		t.Errorf("two catalogs in one file: error %v", err)
	}
}

func TestDecodeRejectsDuplicateKeys(t *testing.T) {
	_, err := Decode(strings.NewReader(`{"name":"a","name":"b","provider":"aws","region":"r","zones":[],"types":[]}`))
	if err == nil || !strings.Contains(err.Error(), `duplicate field "name"`) {
		t.Errorf("error %v", err)
	}
}
