package gcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// seedInstance adds a copy of the recorded instance, renamed, with the given cluster label and
// status, to zone.
func seedInstance(t *testing.T, srv *gcptest.Server, zone, name, cluster, status string) {
	t.Helper()
	inst := recordedInstance(t)
	inst.Name, inst.Status = proto.String(name), proto.String(status)
	inst.Zone = proto.String("https://www.googleapis.com/compute/v1/projects/my-project/zones/" + zone)
	inst.Labels = map[string]string{LabelCluster: cluster, LabelLaunchID: "l-" + name, LabelPool: "gpu-pool"}
	inst.Metadata = instanceMetadata(MetadataLaunchID, "L/"+name)
	srv.AddInstance(zone, inst)
}

func TestGet(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.AddInstance(zoneA, recordedInstance(t))
	p := newTestProvider(t, srv, nil)
	ctx := context.Background()

	got, err := p.Get(ctx, "gce://my-project/us-central1-a/gpu-node-abcde")
	if err != nil {
		t.Fatal(err)
	}
	// instances.get.json: RUNNING spot n1-standard-8 + 1 T4, no Tiler labels or metadata.
	want := offering("n1-standard-8+1xnvidia-tesla-t4", zoneA, "spot")
	if got.Offering != want || got.State != "running" || got.PricePerHour != 0.24402 || got.LaunchedAt.IsZero() {
		t.Errorf("Get = %+v", got)
	}

	_, err = p.Get(ctx, "gce://my-project/us-central1-a/gpu-node-zzzzz")
	if !cloudprovider.IsNotFound(err) {
		t.Errorf("Get of a missing instance = %v, want a NotFoundError", err)
	}
	if _, err := p.Get(ctx, "us-central1-a/gpu-node-abcde"); err == nil || !strings.Contains(err.Error(), "gce://<project>/<zone>/<name>") {
		t.Errorf("Get of a malformed ID = %v", err)
	}
}

func TestGetMapsTheRecordedNotFound(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.Fail(gcptest.Failure{Method: http.MethodGet, PathContains: "/instances/", Status: http.StatusNotFound, Body: gcptest.Fixture(t, "error.notFound.json")})
	_, err := newTestProvider(t, srv, nil).Get(context.Background(), "gce://my-project/us-central1-a/gpu-node-zzzzz")
	var nf *cloudprovider.NotFoundError
	if !errors.As(err, &nf) || nf.ID != "gce://my-project/us-central1-a/gpu-node-zzzzz" {
		t.Errorf("Get = %v, want NotFoundError naming the ID", err)
	}
}

func TestListPaginatesFiltersAndSorts(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	seedInstance(t, srv, zoneB, "node-b1", "c1", "RUNNING")
	seedInstance(t, srv, zoneA, "node-a2", "c1", "PROVISIONING")
	seedInstance(t, srv, zoneA, "node-a1", "c1", "STOPPING")
	seedInstance(t, srv, zoneA, "node-a3", "c1", "TERMINATED") // left out: terminated
	seedInstance(t, srv, zoneA, "node-x1", "c2", "RUNNING")    // left out: other cluster
	defer func(old uint32) { listPageSize = old }(listPageSize)
	listPageSize = 1

	got, err := newTestProvider(t, srv, nil).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, inst := range got {
		summary = append(summary, inst.ID+" "+inst.State+" "+inst.LaunchID)
	}
	want := []string{
		"gce://my-project/us-central1-a/node-a1 terminating L/node-a1",
		"gce://my-project/us-central1-a/node-a2 pending L/node-a2",
		"gce://my-project/us-central1-b/node-b1 running L/node-b1",
	}
	if d := cmp.Diff(want, summary); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	lists := srv.RequestsTo(http.MethodGet, "/instances")
	// Pages of one: zone A has 3 instances of c1 (a3 is dropped after listing) → 3 pages; zone B
	// 1 page; zone C 1 empty page.
	if len(lists) != 5 {
		t.Errorf("got %d list requests, want 5 (pagination followed)", len(lists))
	}
	for _, r := range lists {
		if f := r.Query.Get("filter"); f != `labels.tiler-dev-cluster = "c1"` {
			t.Errorf("list filter = %q", f)
		}
	}
}

func TestListErrors(t *testing.T) {
	tests := []struct {
		name    string
		failure gcptest.Failure
		wantErr string // "" means the retry succeeds
	}{
		{"503 twice is retried", gcptest.Failure{Status: http.StatusServiceUnavailable, Times: 2}, ""},
		{"429 three times exhausts the retries", gcptest.Failure{Status: http.StatusTooManyRequests, Times: 3}, "listing instances in us-central1-a"},
		{"malformed body", gcptest.Failure{Status: http.StatusOK, Body: []byte(`{"items":[{"name":7}]}`)}, "invalid value for string field name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			f := tc.failure
			f.Method, f.PathContains = http.MethodGet, "/instances"
			if f.Body == nil {
				f.Body = gcptest.Fixture(t, "error.backendError.json")
			}
			srv.Fail(f)
			_, err := newTestProvider(t, srv, nil).List(context.Background())
			if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("List error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	seedInstance(t, srv, zoneA, "node-a1", "c1", "RUNNING")
	p := newTestProvider(t, srv, nil)
	ctx := context.Background()
	if err := p.Delete(ctx, "gce://my-project/us-central1-a/node-a1"); err != nil {
		t.Fatal(err)
	}
	if srv.Instance(zoneA, "node-a1") != nil {
		t.Errorf("instance still exists")
	}
	if err := p.Delete(ctx, "gce://my-project/us-central1-a/node-a1"); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete = %v, want a NotFoundError", err)
	}
	if err := p.Delete(ctx, "node-a1"); err == nil || cloudprovider.IsNotFound(err) {
		t.Errorf("Delete of a malformed ID = %v, want a plain error", err)
	}
}

func TestInstanceTypeOfAnInstance(t *testing.T) {
	inst := &computepb.Instance{MachineType: proto.String("https://www.googleapis.com/compute/v1/projects/p/zones/z/machineTypes/a2-highgpu-1g")}
	if got := instanceType(inst); got != "a2-highgpu-1g" {
		t.Errorf("instanceType = %s", got)
	}
}
