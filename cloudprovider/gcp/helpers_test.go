package gcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
	"github.com/tiler-dev/tiler/internal/gcpapi"
)

const (
	project = "my-project"
	zoneA   = "us-central1-a"
	zoneB   = "us-central1-b"
	zoneC   = "us-central1-c"
)

// testConfig matches the recorded insert request (instances.insert.request.spot.json): same
// image, boot disk and network, so that bodies can be compared with it.
func testConfig(srv *gcptest.Server) Config {
	cfg := DefaultConfig()
	cfg.Project, cfg.Region, cfg.Zones, cfg.ClusterName = project, "us-central1", []string{zoneA, zoneB, zoneC}, "c1"
	cfg.Endpoint, cfg.BillingEndpoint = srv.URL, srv.URL
	cfg.Subnetwork = "regions/us-central1/subnetworks/default"
	cfg.PollInterval = time.Millisecond
	// Throttling tests stay fast: 1 ms backoff, three attempts in all.
	cfg.Retry = gcpapi.RetryPolicy{Initial: time.Millisecond, Max: 2 * time.Millisecond, Multiplier: 2, MaxAttempts: 3}
	return cfg
}

func embeddedCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// newTestProvider returns a provider on the fake, priced by the embedded catalog, polling on the
// real clock every millisecond (TestOperationWaitUsesTheClock covers the injected clock).
func newTestProvider(t *testing.T, srv *gcptest.Server, clk clock.Clock) *Provider {
	t.Helper()
	if clk == nil {
		clk = clock.RealClock{}
	}
	p, err := NewProvider(context.Background(), testConfig(srv), embeddedCatalog(t), clk, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// t4Request asks for n1-standard-8 + 1 T4 on spot in zone A, the recorded insert.
func t4Request() cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		LaunchID: "launch-0001", NodeName: "gpu-node-abcde", Cluster: "c1", Pool: "gpu-pool",
		Offering: api.Offering{InstanceType: "n1-standard-8+1xnvidia-tesla-t4", Zone: zoneA, CapacityType: api.Spot},
	}
}

func offering(typ api.InstanceTypeName, zone string, ct api.CapacityType) api.Offering {
	return api.Offering{InstanceType: typ, Zone: zone, CapacityType: ct}
}

// insertBodies returns the decoded bodies of the insert requests the fake received.
func insertBodies(t *testing.T, srv *gcptest.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range srv.RequestsTo("POST", "/instances") {
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("insert body: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// recordedInstance decodes instances.get.json, the recorded spot instance gpu-node-abcde.
func recordedInstance(t *testing.T) *computepb.Instance {
	t.Helper()
	var inst computepb.Instance
	if err := protojson.Unmarshal(gcptest.Fixture(t, "instances.get.json"), &inst); err != nil {
		t.Fatal(err)
	}
	return &inst
}

func instanceMetadata(kv ...string) *computepb.Metadata {
	md := &computepb.Metadata{}
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		md.Items = append(md.Items, &computepb.Items{Key: &k, Value: &v})
	}
	return md
}

// embeddedObserved is when the embedded catalog's prices were collected (testdata/catalog).
var embeddedObserved = time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC)
