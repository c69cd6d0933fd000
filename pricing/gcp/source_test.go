package gcp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
	"github.com/tiler-dev/tiler/internal/gcpapi"
	"github.com/tiler-dev/tiler/pricing"
	"github.com/tiler-dev/tiler/pricing/gcp"
)

// fastRetry keeps throttling tests fast: 1 ms backoff, three attempts in all.
var fastRetry = gcpapi.RetryPolicy{Initial: time.Millisecond, Max: 2 * time.Millisecond, Multiplier: 2, MaxAttempts: 3}

// Shapes as machineTypes.list reports them (machineTypes.list.page1/page2.json).
var (
	a2HighGPU1G = gcp.Machine{Name: "a2-highgpu-1g", Family: "a2", VCPU: 12, MemoryMiB: 87040, Accelerator: "nvidia-tesla-a100", AcceleratorCount: 1}
	a2Ultra1G   = gcp.Machine{Name: "a2-ultragpu-1g", Family: "a2", VCPU: 12, MemoryMiB: 174080, Accelerator: "nvidia-a100-80gb", AcceleratorCount: 1}
	n1T4        = gcp.Machine{Name: "n1-standard-8+1xnvidia-tesla-t4", Family: "n1", VCPU: 8, MemoryMiB: 30720, Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1}
	n1Plain     = gcp.Machine{Name: "n1-standard-8", Family: "n1", VCPU: 8, MemoryMiB: 30720}
)

func newSource(t *testing.T, srv *gcptest.Server, machines ...gcp.Machine) *gcp.Source {
	t.Helper()
	cfg := gcp.Config{Region: "us-central1", Zones: []string{"us-central1-a", "us-central1-b"}, Endpoint: srv.URL, Retry: fastRetry}
	src, err := gcp.NewSource(context.Background(), cfg, machines, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// priceMap keys prices by "type zone capacity".
func priceMap(prices []pricing.Price) map[string]float64 {
	out := map[string]float64{}
	for _, p := range prices {
		out[string(p.InstanceType)+" "+p.Zone+" "+string(p.CapacityType)] = p.PricePerHour
	}
	return out
}

func TestA2HighGPU1GPriceFromTheRecordedSKUs(t *testing.T) {
	srv := gcptest.NewServer(t, "my-project")
	src := newSource(t, srv, a2HighGPU1G, a2Ultra1G)
	prices, err := src.Prices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 12 × 0.031611 + 85 × 0.004237 + 1 × 2.933908 = 0.379332 + 0.360145 + 2.933908 = 3.673385.
	// No spot price: the recorded pages have a spot A100 SKU but no spot A2 core or RAM SKU.
	// No a2-ultragpu-1g price: there is no A100 80GB SKU.
	want := map[string]float64{
		"a2-highgpu-1g us-central1-a on-demand": 3.673385,
		"a2-highgpu-1g us-central1-b on-demand": 3.673385,
	}
	if d := cmp.Diff(want, priceMap(prices)); d != "" {
		t.Errorf("prices (-want +got):\n%s", d)
	}
	if got := prices[0].ObservedAt; !got.Equal(time.Date(2023, 3, 24, 10, 52, 50, 681e6, time.UTC)) {
		t.Errorf("ObservedAt = %v, want the SKUs' effectiveTime", got)
	}

	// The SDK asked as recorded (cloudbilling.skus.list.request.txt), then followed nextPageToken.
	reqs := srv.RequestsTo(http.MethodGet, "/skus")
	if len(reqs) != 2 {
		t.Fatalf("got %d SKU list requests, want 2 (two pages)", len(reqs))
	}
	recorded := strings.TrimSpace(string(gcptest.Fixture(t, "cloudbilling.skus.list.request.txt")))
	if got := "GET " + reqs[0].Path + "?" + reqs[0].Query.Encode(); got != recorded {
		t.Errorf("first request\n got %s\nwant %s", got, recorded)
	}
	if got := reqs[1].Query.Get("pageToken"); !strings.HasPrefix(got, "APKCS1HVa0Ypw") {
		t.Errorf("second request pageToken = %q, want page1's nextPageToken", got)
	}
}

func TestSpotAndAttachedGPUPrices(t *testing.T) {
	srv := gcptest.NewServer(t, "my-project")
	srv.SetSKUPages(gcptest.Fixture(t, "cloudbilling.skus.list.page1.json"),
		gcptest.Fixture(t, "cloudbilling.skus.list.extra.json"), gcptest.Fixture(t, "cloudbilling.skus.list.page2.json"))
	src := newSource(t, srv, a2HighGPU1G, n1T4, n1Plain)
	prices, err := src.Prices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := priceMap(prices)
	want := map[string]float64{
		"a2-highgpu-1g on-demand":                   3.673385, // the EMEA A2 core SKU and the commitment SKU are ignored
		"a2-highgpu-1g spot":                        1.32195,  // 12 × 0.0095 + 85 × 0.00127 + 1.1 = 0.114 + 0.10795 + 1.1
		"n1-standard-8+1xnvidia-tesla-t4 on-demand": 0.729998, // 8 × 0.031611 + 30 × 0.004237 + 0.35
		"n1-standard-8+1xnvidia-tesla-t4 spot":      0.24402,  // 8 × 0.0118775 + 30 × 0.0013 + 0.11
		"n1-standard-8 on-demand":                   0.379998, // 0.252888 + 0.12711 (Custom SKU ignored)
		"n1-standard-8 spot":                        0.13402,  // 0.09502 + 0.039
	}
	for key, price := range want {
		typ, capacity, _ := strings.Cut(key, " ")
		for _, zone := range []string{"us-central1-a", "us-central1-b"} {
			if g := got[typ+" "+zone+" "+capacity]; g != price {
				t.Errorf("%s %s %s = %v, want %v", typ, zone, capacity, g, price)
			}
		}
	}
	if len(got) != 2*len(want) {
		t.Errorf("got %d prices, want %d", len(got), 2*len(want))
	}
}

// TestPricingTheEmbeddedCatalog prices the embedded gcp-us-central1 catalog's shapes and checks
// the types whose SKUs the fixtures hold against the catalog's own (independently sourced) prices.
func TestPricingTheEmbeddedCatalog(t *testing.T) {
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		t.Fatal(err)
	}
	machines, err := gcp.MachinesFromCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	srv := gcptest.NewServer(t, "my-project")
	srv.SetSKUPages(gcptest.Fixture(t, "cloudbilling.skus.list.page1.json"), gcptest.Fixture(t, "cloudbilling.skus.list.extra.json"))
	prices, err := newSource(t, srv, machines...).Prices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	applied := pricing.Apply(cat, prices)
	for _, tc := range []struct {
		name     api.InstanceTypeName
		capacity api.CapacityType
	}{
		{"a2-highgpu-1g", api.OnDemand},
		{"n1-standard-8+1xnvidia-tesla-t4", api.OnDemand},
		{"n1-standard-8+1xnvidia-tesla-t4", api.Spot},
		{"n1-standard-4+1xnvidia-tesla-t4", api.OnDemand},
		{"n1-standard-16+2xnvidia-tesla-t4", api.OnDemand},
	} {
		before, after := offeringPrice(cat, tc.name, tc.capacity), offeringPrice(applied, tc.name, tc.capacity)
		if before == 0 || after != before {
			t.Errorf("%s %s: SKU price %v, embedded catalog %v", tc.name, tc.capacity, after, before)
		}
	}
}

func offeringPrice(cat *catalog.Catalog, name api.InstanceTypeName, capacity api.CapacityType) float64 {
	t, _ := cat.Type(name)
	for _, o := range t.Offerings {
		if o.Zone == "us-central1-a" && o.CapacityType == capacity {
			return o.PricePerHour
		}
	}
	return 0
}
