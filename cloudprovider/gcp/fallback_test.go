package gcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/testwait"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// threeZones asks for the T4 shape on spot in zone A, then B, then C.
func threeZones() cloudprovider.LaunchRequest {
	req := t4Request()
	req.Fallbacks = []api.Offering{
		offering("n1-standard-8+1xnvidia-tesla-t4", zoneB, api.Spot),
		offering("n1-standard-8+1xnvidia-tesla-t4", zoneC, api.Spot),
	}
	return req
}

func TestCreateFallsBackOnCapacityAndQuota(t *testing.T) {
	tests := []struct {
		name string
		// failures per zone; a zone without one succeeds.
		failures     map[string]func(t *testing.T) gcptest.InsertFailure
		wantZone     string // zone of the instance, "" if Create must fail
		wantCapacity []string
		wantQuota    bool
		wantCode     string
		wantInserts  int
		// wantUnavailable are the zones CreateReportingUnavailable reports, launch or not.
		wantUnavailable []string
	}{{
		name:            "stockout in A, B works",
		failures:        map[string]func(*testing.T) gcptest.InsertFailure{zoneA: stockout},
		wantZone:        zoneB,
		wantInserts:     2,
		wantUnavailable: []string{zoneA},
	}, {
		name:            "quota in A (operation), B works",
		failures:        map[string]func(*testing.T) gcptest.InsertFailure{zoneA: quotaOperation},
		wantZone:        zoneB,
		wantInserts:     2,
		wantUnavailable: []string{zoneA},
	}, {
		name:            "every zone out of capacity",
		failures:        map[string]func(*testing.T) gcptest.InsertFailure{zoneA: stockout, zoneB: stockout, zoneC: poolExhaustedNow},
		wantCapacity:    []string{zoneA, zoneB, zoneC},
		wantCode:        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
		wantInserts:     3,
		wantUnavailable: []string{zoneA, zoneB, zoneC},
	}, {
		name:            "capacity and quota: both reported",
		failures:        map[string]func(*testing.T) gcptest.InsertFailure{zoneA: stockout, zoneB: quotaOperation, zoneC: quotaNow},
		wantCapacity:    []string{zoneA},
		wantQuota:       true,
		wantCode:        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
		wantInserts:     3,
		wantUnavailable: []string{zoneA, zoneB, zoneC},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			for zone, f := range tc.failures {
				failure := f(t)
				failure.Zone = zone
				srv.FailInserts(failure)
			}
			p := newTestProvider(t, srv, nil)
			inst, unavailable, err := p.CreateReportingUnavailable(context.Background(), threeZones())
			if n := len(srv.RequestsTo(http.MethodPost, "/instances")); n != tc.wantInserts {
				t.Errorf("got %d inserts, want %d", n, tc.wantInserts)
			}
			var want []api.Offering
			for _, z := range tc.wantUnavailable {
				want = append(want, offering("n1-standard-8+1xnvidia-tesla-t4", z, api.Spot))
			}
			if d := cmp.Diff(want, unavailable); d != "" {
				t.Errorf("reported offerings (-want +got):\n%s", d)
			}
			if tc.wantZone != "" {
				if err != nil || inst.Offering.Zone != tc.wantZone {
					t.Fatalf("Create = %+v, %v; want an instance in %s", inst, err, tc.wantZone)
				}
				return
			}
			checkLaunchFailure(t, err, tc.wantCapacity, tc.wantQuota, tc.wantCode)
		})
	}
}

func checkLaunchFailure(t *testing.T, err error, wantCapacity []string, wantQuota bool, wantCode string) {
	t.Helper()
	var capErr *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &capErr) {
		t.Fatalf("Create error = %v, want an InsufficientCapacityError", err)
	}
	var zones []string
	for _, o := range capErr.Offerings {
		zones = append(zones, o.Zone)
	}
	if d := cmp.Diff(wantCapacity, zones); d != "" {
		t.Errorf("offerings without capacity (-want +got):\n%s", d)
	}
	if capErr.Code != wantCode {
		t.Errorf("code = %q, want %q", capErr.Code, wantCode)
	}
	// The operation's localized message says where capacity is; keep it for the operator.
	if !strings.Contains(capErr.Message, "Consider trying your request in the us-central1-b, us-central1-f zone(s)") {
		t.Errorf("message lost the detail: %s", capErr.Message)
	}
	if cloudprovider.IsQuota(err) != wantQuota {
		t.Errorf("IsQuota = %v, want %v (%v)", cloudprovider.IsQuota(err), wantQuota, err)
	}
}

func stockout(t *testing.T) gcptest.InsertFailure {
	return gcptest.InsertFailure{Operation: gcptest.Fixture(t, "operation.insert.stockout.json")}
}

func quotaOperation(t *testing.T) gcptest.InsertFailure {
	return gcptest.InsertFailure{Operation: gcptest.Fixture(t, "operation.insert.quota.json")}
}

func quotaNow(t *testing.T) gcptest.InsertFailure {
	return gcptest.InsertFailure{Status: http.StatusForbidden, Body: gcptest.Fixture(t, "error.quotaExceeded.json")}
}

// poolExhaustedNow is a stockout answered at once, as a 503 with reason resourcePoolExhausted:
// it must not be retried as a transient 503.
func poolExhaustedNow(*testing.T) gcptest.InsertFailure {
	return gcptest.InsertFailure{Status: http.StatusServiceUnavailable, Body: []byte(`{"error":{"code":503,
		"message":"The zone 'projects/my-project/zones/us-central1-c' does not have enough resources available to fulfill the request.",
		"errors":[{"reason":"resourcePoolExhausted","domain":"global","message":"stockout"}]}}`)}
}

func TestCreateRetriesThrottledInsertsWithOneRequestID(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.Fail(gcptest.Failure{Method: http.MethodPost, PathContains: "/instances", Status: http.StatusTooManyRequests,
		Body: gcptest.Fixture(t, "error.rateLimitExceeded.json"), Times: 1})
	srv.Fail(gcptest.Failure{Method: http.MethodGet, PathContains: "/operations/", Status: http.StatusServiceUnavailable,
		Body: gcptest.Fixture(t, "error.backendError.json"), Times: 2})
	p := newTestProvider(t, srv, nil)
	if _, err := p.Create(context.Background(), t4Request()); err != nil {
		t.Fatal(err)
	}
	inserts := srv.RequestsTo(http.MethodPost, "/instances")
	if len(inserts) != 2 || inserts[0].Query.Get("requestId") != inserts[1].Query.Get("requestId") {
		t.Errorf("want 2 inserts with one requestId, got %d: %v", len(inserts), inserts)
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Run("same launch again: no second insert", func(t *testing.T) {
		srv := gcptest.NewServer(t, project)
		p := newTestProvider(t, srv, nil)
		first, err := p.Create(context.Background(), threeZones())
		if err != nil {
			t.Fatal(err)
		}
		again, err := p.Create(context.Background(), threeZones())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(first, again); d != "" {
			t.Errorf("second Create returned another instance (-first +second):\n%s", d)
		}
		if n := len(srv.RequestsTo(http.MethodPost, "/instances")); n != 1 {
			t.Errorf("got %d inserts, want 1", n)
		}
	})
	t.Run("409 with our launch ID: adopted", func(t *testing.T) {
		srv := gcptest.NewServer(t, project)
		existing := recordedInstance(t) // gpu-node-abcde, no Tiler labels: the list does not find it
		existing.Metadata = instanceMetadata(MetadataLaunchID, "launch-0001")
		srv.AddInstance(zoneA, existing)
		got, err := newTestProvider(t, srv, nil).Create(context.Background(), t4Request())
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "gce://my-project/us-central1-a/gpu-node-abcde" || got.State != "running" {
			t.Errorf("adopted %+v", got)
		}
	})
	t.Run("409 with another launch ID: an error", func(t *testing.T) {
		srv := gcptest.NewServer(t, project)
		existing := recordedInstance(t)
		existing.Metadata = instanceMetadata(MetadataLaunchID, "launch-0002")
		srv.AddInstance(zoneA, existing)
		_, err := newTestProvider(t, srv, nil).Create(context.Background(), threeZones())
		if err == nil || !strings.Contains(err.Error(), `taken by launch "launch-0002"`) {
			t.Fatalf("Create error = %v, want the name to be reported as taken", err)
		}
		if n := len(srv.RequestsTo(http.MethodPost, "/instances")); n != 1 {
			t.Errorf("got %d inserts, want 1: a taken name is not a capacity problem", n)
		}
	})
}

func TestOperationWaitUsesTheClock(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.SetPollsUntilDone(1)
	clk := clocktesting.NewFakeClock(time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC))
	p := newTestProvider(t, srv, clk)
	done := make(chan error, 1)
	go func() {
		_, err := p.Create(context.Background(), t4Request())
		done <- err
	}()
	polls := func() int { return len(srv.RequestsTo(http.MethodGet, "/operations/operation-6105395321733014151")) }
	for step := 0; step < 2; step++ {
		waitUntil(t, clk.HasWaiters)
		if got := polls(); got != step {
			t.Fatalf("before step %d: %d polls; polls must wait for the clock", step, got)
		}
		clk.Step(time.Millisecond) // PollInterval
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.Until(t, time.Millisecond, "the condition", 5*time.Second, cond)
}
