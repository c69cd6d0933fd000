package gcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

func TestPreemptionSource(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	seedInstance(t, srv, zoneA, "spot-deleted", "c1", "RUNNING")
	seedInstance(t, srv, zoneB, "spot-stopped", "c1", "RUNNING")
	seedInstance(t, srv, zoneB, "standard-stopped", "c1", "RUNNING")
	std := srv.Instance(zoneB, "standard-stopped")
	std.Scheduling = nil // STANDARD: a stop is not a preemption
	srv.AddInstance(zoneB, std)

	now := time.Date(2026, 7, 20, 21, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	p := newTestProvider(t, srv, clk)
	src := p.Preemptions(time.Hour)
	ctx := context.Background()

	// Before the lookback window: ignored. Then a spot VM deleted on preemption (operation only),
	// and one stopped on preemption (operation and TERMINATED instance: reported once).
	srv.Preempt(zoneA, "old-one", now.Add(-2*time.Hour).Format(time.RFC3339), true)
	srv.Preempt(zoneA, "spot-deleted", "2026-07-20T13:50:00.000-07:00", true) // 20:50 UTC
	srv.Preempt(zoneB, "spot-stopped", "2026-07-20T20:55:00Z", false)
	terminated := srv.Instance(zoneB, "standard-stopped")
	terminated.Status = proto.String("TERMINATED")
	srv.AddInstance(zoneB, terminated)

	// A failed poll acknowledges nothing.
	srv.Fail(gcptest.Failure{Method: http.MethodGet, PathContains: "/zones/us-central1-b/operations", Status: http.StatusForbidden,
		Body: []byte(`{"error":{"code":403,"message":"denied","errors":[{"reason":"forbidden"}]}}`), Times: 1})
	if _, err := src.Poll(ctx); err == nil {
		t.Fatalf("Poll did not fail")
	}

	got, err := src.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []cloudprovider.Interruption{
		{InstanceID: "gce://my-project/us-central1-a/spot-deleted", Kind: cloudprovider.Preemption, State: "terminated", At: time.Date(2026, 7, 20, 20, 50, 0, 0, time.UTC), Deadline: time.Date(2026, 7, 20, 20, 50, 0, 0, time.UTC)},
		{InstanceID: "gce://my-project/us-central1-b/spot-stopped", Kind: cloudprovider.Preemption, State: "terminated", At: time.Date(2026, 7, 20, 20, 55, 0, 0, time.UTC), Deadline: time.Date(2026, 7, 20, 20, 55, 0, 0, time.UTC)},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("preemptions (-want +got):\n%s", d)
	}
	if again, err := src.Poll(ctx); err != nil || len(again) != 0 {
		t.Errorf("second Poll = %v, %v; want nothing new", again, err)
	}

	for _, r := range srv.RequestsTo(http.MethodGet, "/operations") {
		if f := r.Query.Get("filter"); f != `operationType = "compute.instances.preempted"` {
			t.Errorf("operations filter = %q", f)
		}
	}
	for _, r := range srv.RequestsTo(http.MethodGet, "/instances") {
		if f := r.Query.Get("filter"); f != `(labels.tiler-dev-cluster = "c1") AND (status = "TERMINATED")` {
			t.Errorf("instances filter = %q", f)
		}
	}
}
