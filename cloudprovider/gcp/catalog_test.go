package gcp

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
	"github.com/tiler-dev/tiler/pricing"
)

// offerings summarises a catalog as "type zone capacity price" lines.
func offerings(cat *catalog.Catalog) []string {
	var out []string
	for _, t := range cat.Types {
		for _, o := range t.Offerings {
			out = append(out, strings.Join([]string{string(t.Name), o.Zone, string(o.CapacityType)}, " "))
		}
	}
	return out
}

func TestNewCatalogFromAPI(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.SetSKUPages(gcptest.Fixture(t, "cloudbilling.skus.list.page1.json"),
		gcptest.Fixture(t, "cloudbilling.skus.list.extra.json"), gcptest.Fixture(t, "cloudbilling.skus.list.page2.json"))
	srv.SetMachineTypePages(zoneC, gcptest.Fixture(t, "machineTypes.list.page2.json")) // G2 and N1 only
	cfg := testConfig(srv)
	cfg.MachineFamilies = nil // all families
	cat, err := NewCatalogFromAPI(context.Background(), cfg, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	// Priced by the SKU fixtures: A2 (on demand; spot from the extra page), N1 and N1 + T4. Not
	// priced, so dropped: a2-ultragpu-1g (no A100 80GB SKU), A3, G2 (no SKUs), N1 + V100.
	// a2-highgpu-1g is not offered in zone C (its machine type list has no A2).
	var want []string
	for _, typ := range []string{"a2-highgpu-1g", "n1-standard-8", "n1-standard-8+1xnvidia-tesla-t4"} {
		for _, zone := range []string{zoneA, zoneB, zoneC} {
			if typ == "a2-highgpu-1g" && zone == zoneC {
				continue
			}
			want = append(want, typ+" "+zone+" on-demand", typ+" "+zone+" spot")
		}
	}
	if d := cmp.Diff(want, offerings(cat)); d != "" {
		t.Errorf("offerings (-want +got):\n%s", d)
	}
	a2, _ := cat.Type("a2-highgpu-1g")
	if a2.Offerings[0].PricePerHour != 3.673385 {
		t.Errorf("a2-highgpu-1g on demand = %v, want 3.673385", a2.Offerings[0].PricePerHour)
	}
	if cat.Name != "gcp-us-central1" || cat.Provider != "gcp" || cat.Region != "us-central1" {
		t.Errorf("catalog header = %s %s %s", cat.Name, cat.Provider, cat.Region)
	}

	// machineTypes.list as recorded (machineTypes.list.request.txt), then the next page by token.
	reqs := srv.RequestsTo(http.MethodGet, "/zones/us-central1-a/machineTypes")
	recorded := strings.TrimSpace(string(gcptest.Fixture(t, "machineTypes.list.request.txt")))
	if len(reqs) != 2 || "GET "+reqs[0].Path+"?"+reqs[0].Query.Encode() != recorded {
		t.Fatalf("machine type requests of zone A = %+v, want 2 starting with %s", reqs, recorded)
	}
	if tok := reqs[1].Query.Get("pageToken"); !strings.HasPrefix(tok, "Cj0KIm5leHRwYWdl") {
		t.Errorf("page 2 token = %q, want page 1's nextPageToken", tok)
	}
}

// TestShapesMatchTheEmbeddedCatalog builds the catalog from the API's shapes and the embedded
// catalog's prices: every type both know must have the same vCPUs, memory and GPU description.
func TestShapesMatchTheEmbeddedCatalog(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	cfg := testConfig(srv)
	shapes, err := ListShapes(context.Background(), cfg, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	embedded := embeddedCatalog(t)
	src, _ := pricing.NewEmbeddedSource(embedded, embeddedObserved)
	prices, _ := src.Prices(context.Background())
	cat, err := shapes.Catalog("gcp-us-central1", prices)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, got := range cat.Types {
		names = append(names, string(got.Name))
		want, _ := embedded.Type(got.Name)
		if d := cmp.Diff(*want, got); d != "" {
			t.Errorf("%s differs from the embedded catalog (-embedded +api):\n%s", got.Name, d)
		}
	}
	// The fixtures' types that the embedded catalog prices; a3-megagpu-8g and the plain
	// n1-standard-8 have no embedded price, and the families filter keeps only a2, a3, g2, n1.
	wantNames := []string{"a2-highgpu-1g", "a2-ultragpu-1g", "a3-highgpu-8g", "g2-standard-24", "g2-standard-4",
		"n1-standard-8+1xnvidia-tesla-t4", "n1-standard-8+1xnvidia-tesla-v100"}
	sort.Strings(wantNames)
	if d := cmp.Diff(wantNames, names); d != "" {
		t.Errorf("types (-want +got):\n%s", d)
	}
	machines := shapes.Machines()
	if len(machines) != 9 { // 7 machine types + 2 N1 attachments
		t.Errorf("got %d machines to price, want 9: %+v", len(machines), machines)
	}
}

func TestListShapesErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, srv *gcptest.Server)
		wantErr string
	}{
		{"machine type without vCPUs", func(t *testing.T, srv *gcptest.Server) {
			srv.SetMachineTypePages(zoneA, []byte(`{"items":[{"name":"a2-broken","memoryMb":1024}]}`))
		}, `machine type "a2-broken" in us-central1-a: name, guestCpus and memoryMb must be set`},
		{"malformed page", func(t *testing.T, srv *gcptest.Server) {
			srv.SetMachineTypePages(zoneA, []byte(`{"items":[{"guestCpus":"many"}]}`))
		}, "listing machine types of us-central1-a"},
		{"accelerator types forbidden", func(t *testing.T, srv *gcptest.Server) {
			srv.Fail(gcptest.Failure{PathContains: "/acceleratorTypes", Status: http.StatusForbidden,
				Body: []byte(`{"error":{"code":403,"message":"Required 'compute.acceleratorTypes.list' permission","errors":[{"reason":"forbidden"}]}}`)})
		}, "listing accelerator types of us-central1-a"},
		{"throttled twice, then fine", func(t *testing.T, srv *gcptest.Server) {
			srv.Fail(gcptest.Failure{PathContains: "/machineTypes", Status: http.StatusTooManyRequests,
				Body: gcptest.Fixture(t, "error.rateLimitExceeded.json"), Times: 2})
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			tc.setup(t, srv)
			_, err := ListShapes(context.Background(), testConfig(srv), option.WithoutAuthentication())
			if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ListShapes error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestAttachCount(t *testing.T) {
	tests := []struct{ vcpu, maxCards, want int }{
		{1, 4, 1}, {4, 4, 1}, {8, 4, 1}, {16, 4, 2}, {24, 4, 4}, {32, 8, 4}, {64, 8, 8}, {96, 4, 4}, {96, 8, 8},
		{16, 0, 2}, // no maximum reported
	}
	for _, tc := range tests {
		if got := attachCount(tc.vcpu, tc.maxCards); got != tc.want {
			t.Errorf("attachCount(%d, %d) = %d, want %d", tc.vcpu, tc.maxCards, got, tc.want)
		}
	}
}
