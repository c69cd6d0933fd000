package gcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
	"github.com/tiler-dev/tiler/internal/gcpapi"
)

// Compute Engine in trouble (gcptest.Trouble), through the real SDK clients and Tiler's retry
// policy (gcpapi.RetryPolicy), on the real clock.

// troubleProvider is a provider on srv retrying as policy says.
func troubleProvider(t *testing.T, srv *gcptest.Server, policy gcpapi.RetryPolicy) *Provider {
	t.Helper()
	cfg := testConfig(srv)
	cfg.Retry = policy
	p, err := NewProvider(context.Background(), cfg, embeddedCatalog(t), clock.RealClock{}, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fastPolicy is the production policy's shape (six attempts, doubling back-off) with a 50 ms
// start and a 200 ms cap, so that a window lasts a second.
var fastPolicy = gcpapi.RetryPolicy{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2, MaxAttempts: 6}

// gaps returns the time between consecutive requests and fails when one exceeds most (gax's
// back-off is full jitter, rand × the current cap: a gap has no floor, only the cap; MaxAttempts
// is what bounds a call).
func gaps(t *testing.T, reqs []gcptest.Request, most time.Duration) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := 1; i < len(reqs); i++ {
		gap := reqs[i].At.Sub(reqs[i-1].At)
		out = append(out, gap.Round(time.Millisecond))
		if gap > most {
			t.Errorf("request %d came %s after the one before, want at most %s", i+1, gap, most)
		}
	}
	return out
}

// TestCreateInRateLimitedWindow: every request is answered 429 rateLimitExceeded. A Create makes
// MaxAttempts lookups of its launch, no insert, and fails with an error that is no refusal.
func TestCreateInRateLimitedWindow(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	p := troubleProvider(t, srv, fastPolicy)
	status, body := gcptest.RateLimited(t)
	if err := srv.SetTrouble(gcptest.Trouble{Until: time.Now().Add(time.Hour), FailShare: 1, Status: status, Body: body}); err != nil {
		t.Fatal(err)
	}
	from := len(srv.Requests())
	_, err := p.Create(context.Background(), t4Request())
	if err == nil || !strings.Contains(err.Error(), "429") || cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsQuota(err) {
		t.Fatalf("Create: %v; want the 429, no refusal", err)
	}
	reqs := srv.Requests()[from:]
	if len(reqs) != fastPolicy.MaxAttempts || len(srv.RequestsTo(http.MethodPost, "/instances")) != 0 {
		t.Fatalf("%d requests, want %d lookups and no insert", len(reqs), fastPolicy.MaxAttempts)
	}
	t.Logf("%d requests in the window, spaced %v", len(reqs), gaps(t, reqs, fastPolicy.Max+time.Second))
}

// TestCreateInsertFailedAfterStartNotLaunchedTwice: every insert starts the instance and is then
// answered 503 backendError (the answer lost). The SDK retries it with the same requestId, which
// Compute Engine answers with the first operation; the Create fails. Once the window is over, the
// controller's retry (same launch ID) finds the instance by its launch label: one instance, no
// second insert.
func TestCreateInsertFailedAfterStartNotLaunchedTwice(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	p := troubleProvider(t, srv, fastPolicy)
	status, body := gcptest.BackendError(t)
	if err := srv.SetTrouble(gcptest.Trouble{Until: time.Now().Add(time.Hour), Method: http.MethodPost, PathContains: "/instances",
		FailShare: 1, AfterShare: 1, Status: status, Body: body}); err != nil {
		t.Fatal(err)
	}
	req := t4Request()
	if _, err := p.Create(context.Background(), req); err == nil || cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("Create in the window: %v; want the 503", err)
	}
	inserts := srv.RequestsTo(http.MethodPost, "/instances")
	if len(inserts) != fastPolicy.MaxAttempts {
		t.Fatalf("%d inserts, want %d (the retry policy's attempts)", len(inserts), fastPolicy.MaxAttempts)
	}
	for _, in := range inserts[1:] {
		if id := in.Query.Get("requestId"); id != inserts[0].Query.Get("requestId") || id == "" {
			t.Errorf("requestIds %q and %q differ", inserts[0].Query.Get("requestId"), id)
		}
	}
	t.Logf("insert attempts spaced %v", gaps(t, inserts, fastPolicy.Max+time.Second))
	if srv.Instance(zoneA, req.NodeName) == nil {
		t.Fatal("the first insert did not create the instance")
	}
	srv.ClearTrouble()
	inst, err := p.Create(context.Background(), req)
	if err != nil || inst.ID != "gce://"+project+"/"+zoneA+"/"+req.NodeName {
		t.Fatalf("the retry: %+v, %v; want the instance inserted in the window", inst, err)
	}
	if n := len(srv.RequestsTo(http.MethodPost, "/instances")); n != fastPolicy.MaxAttempts {
		t.Errorf("the retry inserted again (%d inserts)", n)
	}
}

// TestCreateWaitBoundedByContext: the caller's context bounds a Create whether Compute Engine
// answers late (a minute) or throttles under the production retry policy (1 s doubling to 30 s,
// six attempts): the Create returns about at the deadline with the context's error.
func TestCreateWaitBoundedByContext(t *testing.T) {
	status, body := gcptest.RateLimited(t)
	for _, c := range []struct {
		name    string
		trouble gcptest.Trouble
	}{
		{"slow answers", gcptest.Trouble{Latency: time.Minute}},
		{"throttled, production back-off", gcptest.Trouble{FailShare: 1, Status: status, Body: body}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			p := troubleProvider(t, srv, gcpapi.DefaultRetryPolicy())
			c.trouble.Until = time.Now().Add(time.Hour)
			if err := srv.SetTrouble(c.trouble); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Create(ctx, t4Request())
			took := time.Since(start)
			if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
				t.Errorf("Create: %v; want the context's deadline", err)
			}
			if took > 5*time.Second {
				t.Errorf("Create returned %s after it started, want about the 300 ms deadline", took)
			}
			t.Logf("returned after %s", took.Round(time.Millisecond))
		})
	}
}

// TestTroubleValidation: bad windows are refused, naming the field.
func TestTroubleValidation(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	until := time.Now().Add(time.Hour)
	for _, c := range []struct {
		t    gcptest.Trouble
		want string
	}{
		{gcptest.Trouble{}, "Until"},
		{gcptest.Trouble{Until: until, FailShare: 2, Status: 429}, "FailShare"},
		{gcptest.Trouble{Until: until, FailShare: 1}, "Status"},
		{gcptest.Trouble{Until: until, AfterShare: 3}, "AfterShare"},
		{gcptest.Trouble{Until: until, Latency: -time.Second}, "Latency"},
	} {
		if err := srv.SetTrouble(c.t); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.t, err, c.want)
		}
	}
}
