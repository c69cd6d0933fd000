package pricing

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
)

var observed = time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC)

// testCatalog has one GPU type with on-demand and spot in two zones, and one CPU type with only
// on-demand, with prices chosen so that every offering is distinguishable.
func testCatalog() *catalog.Catalog {
	return &catalog.Catalog{
		Name: "test", Provider: "gcp", Region: "r", Zones: []string{"r-a", "r-b"},
		Types: []catalog.InstanceType{
			{Name: "gpu", VCPU: 4, MemoryMiB: 1024, GPU: catalog.GPU{Model: "L4", Count: 1}, Offerings: []catalog.ZonePrice{
				{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 1.0},
				{Zone: "r-a", CapacityType: api.Spot, PricePerHour: 0.4, Unavailable: true},
				{Zone: "r-b", CapacityType: api.OnDemand, PricePerHour: 1.1},
				{Zone: "r-b", CapacityType: api.Spot, PricePerHour: 0.5},
			}},
			{Name: "cpu", VCPU: 2, MemoryMiB: 1024, Offerings: []catalog.ZonePrice{
				{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 0.1},
			}},
		},
	}
}

func TestEmbeddedSource(t *testing.T) {
	src, err := NewEmbeddedSource(testCatalog(), observed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Prices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := func(it api.InstanceTypeName, zone string, ct api.CapacityType, price float64) Price {
		return Price{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: it, Zone: zone, CapacityType: ct}, PricePerHour: price}, ObservedAt: observed}
	}
	want := []Price{ // sorted by type, zone, capacity type ("on-demand" < "spot")
		p("cpu", "r-a", api.OnDemand, 0.1),
		p("gpu", "r-a", api.OnDemand, 1.0),
		p("gpu", "r-a", api.Spot, 0.4), // Unavailable offerings still have a price
		p("gpu", "r-b", api.OnDemand, 1.1),
		p("gpu", "r-b", api.Spot, 0.5),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prices (-want +got):\n%s", d)
	}
	if src.Name() != "embedded" {
		t.Errorf("Name() = %q", src.Name())
	}
	got[0].PricePerHour = 99 // callers own the returned slice
	again, _ := src.Prices(context.Background())
	if again[0].PricePerHour != 0.1 {
		t.Errorf("Prices returned the source's own slice")
	}
}

func TestEmbeddedSourceOnTheRealCatalog(t *testing.T) {
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewEmbeddedSource(cat, observed)
	if err != nil {
		t.Fatal(err)
	}
	prices, _ := src.Prices(context.Background())
	// Applying a catalog's own prices to it is the identity.
	if d := cmp.Diff(cat, Apply(cat, prices)); d != "" {
		t.Errorf("Apply(cat, prices of cat) changed the catalog (-want +got):\n%s", d)
	}
	if _, err := NewEmbeddedSource(nil, observed); err == nil {
		t.Errorf("NewEmbeddedSource(nil) did not fail")
	}
}

func TestApply(t *testing.T) {
	price := func(it api.InstanceTypeName, zone string, ct api.CapacityType, v float64) Price {
		return Price{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: it, Zone: zone, CapacityType: ct}, PricePerHour: v}}
	}
	tests := []struct {
		name   string
		prices []Price
		// want is the gpu type's offerings after Apply; the cpu type is checked separately.
		want    []catalog.ZonePrice
		wantCPU float64
	}{{
		name: "no prices: on-demand keeps its price, spot offerings go",
		want: []catalog.ZonePrice{
			{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 1.0},
			{Zone: "r-b", CapacityType: api.OnDemand, PricePerHour: 1.1},
		},
		wantCPU: 0.1,
	}, {
		name: "all prices replace, Unavailable stays",
		prices: []Price{
			price("gpu", "r-a", api.OnDemand, 2.0), price("gpu", "r-a", api.Spot, 0.7),
			price("gpu", "r-b", api.OnDemand, 2.1), price("gpu", "r-b", api.Spot, 0.8),
			price("cpu", "r-a", api.OnDemand, 0.2),
		},
		want: []catalog.ZonePrice{
			{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 2.0},
			{Zone: "r-a", CapacityType: api.Spot, PricePerHour: 0.7, Unavailable: true},
			{Zone: "r-b", CapacityType: api.OnDemand, PricePerHour: 2.1},
			{Zone: "r-b", CapacityType: api.Spot, PricePerHour: 0.8},
		},
		wantCPU: 0.2,
	}, {
		name: "spot above on-demand is kept; missing spot in r-b removed",
		prices: []Price{
			price("gpu", "r-a", api.Spot, 1.5), // 1.5 > on-demand 1.0: kept as a fact
		},
		want: []catalog.ZonePrice{
			{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 1.0},
			{Zone: "r-a", CapacityType: api.Spot, PricePerHour: 1.5, Unavailable: true},
			{Zone: "r-b", CapacityType: api.OnDemand, PricePerHour: 1.1},
		},
		wantCPU: 0.1,
	}, {
		name: "unusable prices count as missing; unknown offerings are ignored",
		prices: []Price{
			price("gpu", "r-a", api.OnDemand, 0), price("gpu", "r-a", api.Spot, -1),
			price("gpu", "r-b", api.OnDemand, math.NaN()), price("gpu", "r-b", api.Spot, math.Inf(1)),
			price("gpu", "r-z", api.OnDemand, 3), price("other", "r-a", api.OnDemand, 3),
		},
		want: []catalog.ZonePrice{
			{Zone: "r-a", CapacityType: api.OnDemand, PricePerHour: 1.0},
			{Zone: "r-b", CapacityType: api.OnDemand, PricePerHour: 1.1},
		},
		wantCPU: 0.1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := testCatalog()
			got := Apply(base, tc.prices)
			gpu, _ := got.Type("gpu")
			if d := cmp.Diff(tc.want, gpu.Offerings); d != "" {
				t.Errorf("gpu offerings (-want +got):\n%s", d)
			}
			cpu, _ := got.Type("cpu")
			if cpu.Offerings[0].PricePerHour != tc.wantCPU {
				t.Errorf("cpu price = %v, want %v", cpu.Offerings[0].PricePerHour, tc.wantCPU)
			}
			if d := cmp.Diff(testCatalog(), base); d != "" {
				t.Errorf("Apply modified its input (-want +got):\n%s", d)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("applied catalog is invalid: %v", err)
			}
		})
	}
}
