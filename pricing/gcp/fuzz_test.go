package gcp

import (
	"math"
	"os"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"

	"cloud.google.com/go/billing/apiv1/billingpb"
	"google.golang.org/protobuf/encoding/protojson"
)

// fuzzMachines are shapes the rate card prices in FuzzRateCard: plain, with attached GPUs, with
// built-in GPUs, and the largest the catalog allows.
var fuzzMachines = []Machine{
	{Name: "n1-standard-8", Family: "n1", VCPU: 8, MemoryMiB: 30720},
	{Name: "n1-standard-8+1xnvidia-tesla-t4", Family: "n1", VCPU: 8, MemoryMiB: 30720, Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1},
	{Name: "a2-highgpu-1g", Family: "a2", VCPU: 12, MemoryMiB: 87040, Accelerator: "nvidia-tesla-a100", AcceleratorCount: 1},
	{Name: "huge", Family: "a2", VCPU: catalog.MaxVCPU, MemoryMiB: catalog.MaxMemoryMiB, Accelerator: "nvidia-tesla-a100", AcceleratorCount: catalog.MaxGPUs},
}

// FuzzRateCard feeds Cloud Billing ListSkus pages (the JSON the REST transport decodes) to
// NewRateCard and prices machines with the card: it never panics, and a price is finite, not
// negative and within catalog.MaxPricePerHour (units × 10^9 overflowed int64 before).
func FuzzRateCard(f *testing.F) {
	for _, name := range []string{"cloudbilling.skus.list.page1.json", "cloudbilling.skus.list.page2.json", "cloudbilling.skus.list.extra.json"} {
		if b, err := os.ReadFile("../../testdata/cloud-fixtures/gcp/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		var page billingpb.ListSkusResponse
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &page); err != nil {
			return
		}
		card, err := NewRateCard(page.GetSkus(), "us-central1", "USD")
		if err != nil {
			return
		}
		for _, r := range card.rates {
			if r.nanosPerHour < 0 || r.nanosPerHour > maxRateNanosPerHour {
				t.Fatalf("rate %+v accepted", r)
			}
		}
		for _, m := range fuzzMachines {
			for _, c := range []api.CapacityType{api.OnDemand, api.Spot} {
				p, _, ok := card.Price(m, c)
				if ok && (p < 0 || math.IsNaN(p) || math.IsInf(p, 0) || p > catalog.MaxPricePerHour) {
					t.Fatalf("%s %s: price %v", m.Name, c, p)
				}
			}
		}
	})
}
