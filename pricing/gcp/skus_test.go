package gcp

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/billing/apiv1/billingpb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/type/money"

	"github.com/tiler-dev/tiler/api/catalog"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		desc, usage string
		want        *part
	}{
		{"A2 Instance Core running in Americas", "OnDemand", &part{core, "a2", api.OnDemand}},
		{"A2 Instance Ram running in Americas", "OnDemand", &part{ram, "a2", api.OnDemand}},
		{"Spot Preemptible A2 Instance Core running in Americas", "Preemptible", &part{core, "a2", api.Spot}},
		{"N1 Predefined Instance Ram running in Americas", "OnDemand", &part{ram, "n1", api.OnDemand}},
		{"Spot Preemptible N1 Predefined Instance Core running in Americas", "Preemptible", &part{core, "n1", api.Spot}},
		{"G2 Instance Core running in Americas", "OnDemand", &part{core, "g2", api.OnDemand}},
		{"Nvidia Tesla A100 GPU running in Americas", "OnDemand", &part{gpu, "nvidia-tesla-a100", api.OnDemand}},
		{"Nvidia Tesla A100 80GB GPU running in Americas", "OnDemand", &part{gpu, "nvidia-a100-80gb", api.OnDemand}},
		{"Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas", "Preemptible", &part{gpu, "nvidia-tesla-a100", api.Spot}},
		{"Nvidia L4 GPU running in Americas", "OnDemand", &part{gpu, "nvidia-l4", api.OnDemand}},
		{"Nvidia H100 80GB GPU running in Americas", "OnDemand", &part{gpu, "nvidia-h100-80gb", api.OnDemand}},
		{"Preemptible Nvidia Tesla T4 GPU running in Americas", "Preemptible", &part{gpu, "nvidia-tesla-t4", api.Spot}},
		// Not machine parts, or not offerings:
		{"N1 Custom Instance Core running in Americas", "OnDemand", nil},
		{"Commitment v1: A2 Cpu in Americas for 1 Year", "Commit1Yr", nil},
		{"A2 Instance Core running in Americas", "Commit1Yr", nil},
		{"Nvidia Tesla T4 Virtual Workstation GPU running in Americas", "OnDemand", nil},
		{"Balanced PD Capacity in Americas", "OnDemand", nil},
	}
	for _, tc := range tests {
		got, ok := classify(&billingpb.Sku{Description: tc.desc, Category: &billingpb.Category{UsageType: tc.usage}})
		switch {
		case tc.want == nil && ok:
			t.Errorf("%q (%s) classified as %+v, want skipped", tc.desc, tc.usage, got)
		case tc.want != nil && (!ok || got != *tc.want):
			t.Errorf("%q (%s) = %+v, %v; want %+v", tc.desc, tc.usage, got, ok, *tc.want)
		}
	}
}

func TestUnitsPerHour(t *testing.T) {
	tests := []struct {
		kind partKind
		unit string
		want int64
		ok   bool
	}{
		{core, "h", 1, true}, {gpu, "min", 60, true}, {core, "s", 3600, true},
		{ram, "GiBy.h", 1, true}, {ram, "MiBy.h", 1024, true},
		{ram, "h", 0, false}, {core, "GiBy.h", 0, false}, {ram, "GiBy.mo", 0, false},
	}
	for _, tc := range tests {
		if got, ok := unitsPerHour(tc.kind, tc.unit); got != tc.want || ok != tc.ok {
			t.Errorf("unitsPerHour(%s, %q) = %d, %v; want %d, %v", tc.kind, tc.unit, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRateCardPrefersTheNarrowerSKU(t *testing.T) {
	sku := func(id string, nanos int32, regions ...string) *billingpb.Sku {
		return &billingpb.Sku{
			SkuId: id, Description: "A2 Instance Core running in Americas", ServiceRegions: regions,
			Category: &billingpb.Category{UsageType: "OnDemand"},
			PricingInfo: []*billingpb.PricingInfo{{PricingExpression: &billingpb.PricingExpression{
				UsageUnit:   "h",
				TieredRates: []*billingpb.PricingExpression_TierRate{{UnitPrice: moneyNanos(nanos)}},
			}}},
		}
	}
	card, err := NewRateCard([]*billingpb.Sku{
		sku("B-BROAD", 2, "us-central1", "us-east1"), sku("A-IOWA", 3, "us-central1"), sku("C-IOWA", 4, "us-central1"),
	}, "us-central1", "USD")
	if err != nil {
		t.Fatal(err)
	}
	if got := card.rates[part{core, "a2", api.OnDemand}].skuID; got != "A-IOWA" {
		t.Errorf("chosen SKU = %s, want A-IOWA (one region, lowest ID)", got)
	}
}

func TestPriceRoundsRAMToTheNanoDollar(t *testing.T) {
	card := &RateCard{rates: map[part]rate{
		{core, "n1", api.OnDemand}: {nanosPerHour: 31611000},
		{ram, "n1", api.OnDemand}:  {nanosPerHour: 4237000},
	}}
	// n1-standard-1: 1 × 0.031611 + 3.75 GiB × 0.004237 = 0.031611 + 0.01588875 → 0.04749975.
	got, _, ok := card.Price(Machine{Family: "n1", VCPU: 1, MemoryMiB: 3840}, api.OnDemand)
	if !ok || got != 0.04749975 {
		t.Errorf("price = %v, %v; want 0.04749975", got, ok)
	}
	if _, _, ok := card.Price(Machine{Family: "n1", VCPU: 1, MemoryMiB: 3840}, api.Spot); ok {
		t.Errorf("priced spot without spot SKUs")
	}
}

func TestTypeNames(t *testing.T) {
	tests := []struct {
		name        api.InstanceTypeName
		machineType string
		accelerator string
		count       int
		wantErr     bool
	}{
		{"a2-highgpu-1g", "a2-highgpu-1g", "", 0, false},
		{"n1-standard-8+1xnvidia-tesla-t4", "n1-standard-8", "nvidia-tesla-t4", 1, false},
		{"n1-standard-16+2xnvidia-tesla-v100", "n1-standard-16", "nvidia-tesla-v100", 2, false},
		{"n1-standard-8+nvidia-tesla-t4", "", "", 0, true},
		{"n1-standard-8+0xnvidia-tesla-t4", "", "", 0, true},
		{"n1-standard-8+2x", "", "", 0, true},
		{"+1xnvidia-tesla-t4", "", "", 0, true},
	}
	for _, tc := range tests {
		mt, acc, n, err := ParseTypeName(tc.name)
		if (err != nil) != tc.wantErr || mt != tc.machineType || acc != tc.accelerator || n != tc.count {
			t.Errorf("ParseTypeName(%q) = %q, %q, %d, %v", tc.name, mt, acc, n, err)
		}
		if err == nil && TypeName(mt, acc, n) != tc.name {
			t.Errorf("TypeName(%q, %q, %d) = %q, want %q", mt, acc, n, TypeName(mt, acc, n), tc.name)
		}
	}
}

func TestMachinesFromCatalog(t *testing.T) {
	cat := &catalog.Catalog{Types: []catalog.InstanceType{
		{Name: "a2-highgpu-1g", VCPU: 12, MemoryMiB: 87040, GPU: catalog.GPU{Model: "A100-40GB", Count: 1}},
		{Name: "n1-standard-8+1xnvidia-tesla-t4", VCPU: 8, MemoryMiB: 30720, GPU: catalog.GPU{Model: "T4", Count: 1}},
		{Name: "e2-standard-4", VCPU: 4, MemoryMiB: 16384},
	}}
	got, err := MachinesFromCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	want := []Machine{
		{Name: "a2-highgpu-1g", Family: "a2", VCPU: 12, MemoryMiB: 87040, Accelerator: "nvidia-tesla-a100", AcceleratorCount: 1},
		{Name: "n1-standard-8+1xnvidia-tesla-t4", Family: "n1", VCPU: 8, MemoryMiB: 30720, Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1},
		{Name: "e2-standard-4", Family: "e2", VCPU: 4, MemoryMiB: 16384},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("machines (-want +got):\n%s", d)
	}
	cat.Types = append(cat.Types, catalog.InstanceType{Name: "x1", GPU: catalog.GPU{Model: "MI300X", Count: 8}})
	if _, err := MachinesFromCatalog(cat); err == nil {
		t.Errorf("an unknown GPU model did not fail")
	}
}

func moneyNanos(n int32) *money.Money { return &money.Money{CurrencyCode: "USD", Nanos: n} }
