package gcp

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

func TestCreateSendsTheRecordedInsert(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.SetPollsUntilDone(2)
	p := newTestProvider(t, srv, nil)
	got, err := p.Create(context.Background(), t4Request())
	if err != nil {
		t.Fatal(err)
	}

	bodies := insertBodies(t, srv)
	if len(bodies) != 1 {
		t.Fatalf("got %d inserts, want 1", len(bodies))
	}
	body := bodies[0]
	// Everything but labels and metadata is the recorded request (instances.insert.request.spot.json):
	// machineType URL, guestAccelerators, scheduling SPOT/TERMINATE/DELETE, boot disk, network;
	// the boot disk's image is the one the recorded family (cos-stable) names now, read from it.
	var recorded map[string]any
	if err := json.Unmarshal(gcptest.Fixture(t, "instances.insert.request.spot.json"), &recorded); err != nil {
		t.Fatal(err)
	}
	params := recorded["disks"].([]any)[0].(map[string]any)["initializeParams"].(map[string]any)
	if params["sourceImage"] != "projects/cos-cloud/global/images/family/cos-stable" {
		t.Fatalf("the recorded request boots %v, not the cos-stable family", params["sourceImage"])
	}
	params["sourceImage"] = "projects/cos-cloud/global/images/" + gcptest.DefaultCOSImage
	labels, metadata := body["labels"], body["metadata"]
	delete(body, "labels")
	delete(body, "metadata")
	delete(recorded, "labels")
	delete(recorded, "metadata")
	if d := cmp.Diff(recorded, body); d != "" {
		t.Errorf("insert body differs from the recorded one (-recorded +sent):\n%s", d)
	}
	wantLabels := map[string]any{"tiler-dev-cluster": "c1", "tiler-dev-launch-id": "launch-0001", "tiler-dev-pool": "gpu-pool"}
	if d := cmp.Diff(wantLabels, labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if !strings.Contains(mustJSON(t, metadata), `"key":"tiler-launch-id","value":"launch-0001"`) {
		t.Errorf("metadata %s lacks the launch ID", mustJSON(t, metadata))
	}
	insert := srv.RequestsTo("POST", "/instances")[0]
	if insert.Path != "/compute/v1/projects/my-project/zones/us-central1-a/instances" {
		t.Errorf("insert path = %s", insert.Path)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if id := insert.Query.Get("requestId"); !uuid.MatchString(id) {
		t.Errorf("requestId = %q, want a UUID", id)
	}
	// The operation was polled until DONE: two RUNNING answers, then DONE.
	if n := len(srv.RequestsTo("GET", "/operations/operation-6105395321733014151")); n != 3 {
		t.Errorf("operation polled %d times, want 3", n)
	}

	want := &cloudprovider.Instance{
		ID: "gce://my-project/us-central1-a/gpu-node-abcde", LaunchID: "launch-0001", NodeName: "gpu-node-abcde", Pool: "gpu-pool",
		Offering: t4Request().Offering, State: "running",
		PricePerHour: 0.24402, // the embedded catalog's spot price of n1-standard-8+1xnvidia-tesla-t4
		LaunchedAt:   got.LaunchedAt,
		Tags: map[string]string{
			"tiler-dev-cluster": "c1", "tiler-dev-launch-id": "launch-0001", "tiler-dev-pool": "gpu-pool",
			api.TagCluster: "c1", api.TagLaunchID: "launch-0001", api.TagPool: "gpu-pool",
			api.TagNodeName: "gpu-node-abcde",
		},
		// The image the configured family named at launch, kept in the instance's metadata
		// (tiler-image) and read back.
		Image: "projects/cos-cloud/global/images/" + gcptest.DefaultCOSImage,
		// The digest of the launch settings, kept in its metadata (tiler-launch-settings).
		Settings: settingsDigest(p.cfg),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("instance (-want +got):\n%s", d)
	}
	if img, err := p.ImageFor(context.Background(), api.GPUConfig{}); err != nil || img != got.Image {
		t.Errorf("ImageFor = %q, want the launched instance's %q", img, got.Image)
	}
	if got.LaunchedAt.IsZero() {
		t.Errorf("LaunchedAt is zero")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInsertScheduling(t *testing.T) {
	tests := []struct {
		name     string
		offering api.Offering
		want     string // scheduling as JSON
		wantAcc  bool
	}{
		{"A2 on demand: GPUs cannot migrate", offering("a2-highgpu-1g", zoneA, api.OnDemand),
			`{"automaticRestart":true,"onHostMaintenance":"TERMINATE","provisioningModel":"STANDARD"}`, false},
		{"G2 spot", offering("g2-standard-4", zoneA, api.Spot),
			`{"automaticRestart":false,"instanceTerminationAction":"DELETE","onHostMaintenance":"TERMINATE","provisioningModel":"SPOT"}`, false},
		{"N1 without GPUs migrates", offering("n1-standard-8", zoneA, api.OnDemand),
			`{"automaticRestart":true,"onHostMaintenance":"MIGRATE","provisioningModel":"STANDARD"}`, false},
		{"N1 + T4 on demand", offering("n1-standard-8+1xnvidia-tesla-t4", zoneA, api.OnDemand),
			`{"automaticRestart":true,"onHostMaintenance":"TERMINATE","provisioningModel":"STANDARD"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			p := newTestProvider(t, srv, nil)
			req := t4Request()
			req.Offering = tc.offering
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := insertBodies(t, srv)[0]
			if got := mustJSON(t, body["scheduling"]); got != tc.want {
				t.Errorf("scheduling = %s, want %s", got, tc.want)
			}
			if _, ok := body["guestAccelerators"]; ok != tc.wantAcc {
				t.Errorf("guestAccelerators present = %v, want %v", ok, tc.wantAcc)
			}
			machineType, _, _ := strings.Cut(string(tc.offering.InstanceType), "+")
			if got := body["machineType"]; got != "zones/us-central1-a/machineTypes/"+machineType {
				t.Errorf("machineType = %v", got)
			}
		})
	}
}

func TestCreateRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*cloudprovider.LaunchRequest)
		wantErr string
	}{
		{"no launch ID", func(r *cloudprovider.LaunchRequest) { r.LaunchID = "" }, "launchID is empty"},
		{"node name not RFC 1035", func(r *cloudprovider.LaunchRequest) { r.NodeName = "GPU_node" }, `nodeName "GPU_node"`},
		{"node name too long", func(r *cloudprovider.LaunchRequest) { r.NodeName = strings.Repeat("a", 64) }, "nodeName"},
		{"other cluster", func(r *cloudprovider.LaunchRequest) { r.Cluster = "c2" }, `cluster "c2"`},
		{"bad type name", func(r *cloudprovider.LaunchRequest) { r.Offering.InstanceType = "n1-standard-8+t4" }, "is not <count>x<accelerator-type>"},
		{"no zone", func(r *cloudprovider.LaunchRequest) {
			r.Fallbacks = []api.Offering{{InstanceType: "a2-highgpu-1g"}}
		}, "needs an instance type, a zone"},
		{"machine type the zone lacks", func(r *cloudprovider.LaunchRequest) { r.Offering.InstanceType = "n2-standard-8" }, "Machine type does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			p := newTestProvider(t, srv, nil)
			req := t4Request()
			req.Fallbacks = []api.Offering{offering("a2-highgpu-1g", zoneB, api.OnDemand)}
			tc.mutate(&req)
			_, err := p.Create(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Create error = %v, want one containing %q", err, tc.wantErr)
			}
			if cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsQuota(err) {
				t.Errorf("bad input reported as a typed cloud failure: %v", err)
			}
			if n := len(srv.RequestsTo("POST", "/instances")); n > 1 {
				t.Errorf("bad input tried %d offerings; it must stop at the first", n)
			}
		})
	}
}

// TestCreateCarriesGPUConfig: the request's GPU configuration, renameShared included, reaches the
// bootstrap as the tiler-gpu-config metadata item.
func TestCreateCarriesGPUConfig(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	p := newTestProvider(t, srv, nil)
	req := t4Request()
	req.GPU = api.GPUConfig{Sharing: "time-slicing", Replicas: 4, RenameShared: true}
	if _, err := p.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got api.GPUConfig
	if err := json.Unmarshal([]byte(metadataItem(t, insertBodies(t, srv)[0], MetadataGPUConfig)), &got); err != nil {
		t.Fatalf("decoding %s: %v", MetadataGPUConfig, err)
	}
	if d := cmp.Diff(req.GPU, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", MetadataGPUConfig, d)
	}
}

// TestCreateLabelsTheOfferingTried: the bootstrap's node labels name the type of the offering
// each insert tries, in label-safe form, not the request's: the planned labels of the
// n1-standard-8 T4 shape (zone A, out of stock) are replaced by g2-standard-4's when the fallback
// is tried.
func TestCreateLabelsTheOfferingTried(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	failure := stockout(t)
	failure.Zone = zoneA
	srv.FailInserts(failure)
	p := newTestProvider(t, srv, nil)
	req := t4Request()
	req.Fallbacks = []api.Offering{offering("g2-standard-4", zoneB, api.Spot)}
	req.Labels = map[string]string{"team": "ml", "node.kubernetes.io/instance-type": "n1-standard-8",
		api.LabelCatalogInstanceType: "n1-standard-8_1xnvidia-tesla-t4", api.LabelGKEAccelerator: "nvidia-tesla-t4"}
	if _, err := p.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	bodies := insertBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d inserts, want 2", len(bodies))
	}
	want := []string{
		"cloud.google.com/gke-accelerator=nvidia-tesla-t4,node.kubernetes.io/instance-type=n1-standard-8,team=ml,tiler.dev/instance-type=n1-standard-8_1xnvidia-tesla-t4",
		"node.kubernetes.io/instance-type=g2-standard-4,team=ml",
	}
	for i, body := range bodies {
		if got := metadataItem(t, body, MetadataNodeLabels); got != want[i] {
			t.Errorf("insert %d: %s = %q, want %q", i, MetadataNodeLabels, got, want[i])
		}
	}
}

// metadataItem returns the value of an insert body's metadata item, failing the test without it.
func metadataItem(t *testing.T, body map[string]any, key string) string {
	t.Helper()
	md, _ := body["metadata"].(map[string]any)
	items, _ := md["items"].([]any)
	for _, it := range items {
		if item, _ := it.(map[string]any); item["key"] == key {
			v, _ := item["value"].(string)
			return v
		}
	}
	t.Fatalf("metadata %s has no %s", mustJSON(t, md), key)
	return ""
}

// TestLaunchSettingsDigest: the digest of the launch settings moves with the network, the
// subnetwork, the boot disk, the service account and its scopes, the bootstrap metadata and the
// spot termination action, not with the image, the order of the scopes, or the order the metadata
// was given in; LaunchSettings answers it for any zone.
func TestLaunchSettingsDigest(t *testing.T) {
	base := DefaultConfig()
	base.ServiceAccount, base.Scopes = "nodes@my-project.iam.gserviceaccount.com", []string{"a", "b"}
	base.Metadata = map[string]string{"startup-script": "#!/bin/sh\nbootstrap", "k": "v"}
	withChange := func(change func(*Config)) string {
		c := base
		c.Scopes = slices.Clone(base.Scopes)
		c.Metadata = maps.Clone(base.Metadata)
		change(&c)
		return settingsDigest(c)
	}
	d := settingsDigest(base)
	same := map[string]func(*Config){
		"another image":   func(c *Config) { c.Image = "projects/my-project/global/images/node-v2" },
		"scopes reversed": func(c *Config) { c.Scopes = []string{"b", "a"} },
	}
	for name, change := range same {
		if got := withChange(change); got != d {
			t.Errorf("%s: digest %s, want unchanged %s", name, got, d)
		}
	}
	differ := map[string]func(*Config){
		"network":          func(c *Config) { c.Network = "global/networks/gpu" },
		"subnetwork":       func(c *Config) { c.Subnetwork = "regions/us-central1/subnetworks/gpu" },
		"disk size":        func(c *Config) { c.DiskSizeGB = 200 },
		"disk type":        func(c *Config) { c.DiskType = "pd-ssd" },
		"service account":  func(c *Config) { c.ServiceAccount = "nodes-v2@my-project.iam.gserviceaccount.com" },
		"a scope":          func(c *Config) { c.Scopes = append(c.Scopes, "c") },
		"the bootstrap":    func(c *Config) { c.Metadata["startup-script"] = "#!/bin/sh\nbootstrap v2" },
		"a metadata key":   func(c *Config) { c.Metadata["k2"] = "v" },
		"spot termination": func(c *Config) { c.SpotTerminationAction = "STOP" },
	}
	for name, change := range differ {
		if got := withChange(change); got == d {
			t.Errorf("%s changed: digest %s unchanged", name, got)
		}
	}
	p := &Provider{settings: d}
	if got, err := p.LaunchSettings(context.Background(), "us-central1-b"); err != nil || got != d {
		t.Errorf("LaunchSettings = %q, want %q", got, d)
	}
}
