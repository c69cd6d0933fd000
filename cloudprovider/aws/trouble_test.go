package aws

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// The EC2 endpoint in trouble (awstest.Trouble), through the real SDK client and its standard
// retryer: these tests run on the real clock, with the retryer's back-off capped at troubleBackoff
// (the production cap is 20 s) so that a window lasts a second.
const troubleBackoff = 200 * time.Millisecond

// troubleProvider is a Provider over srv whose EC2 client retries as in production (the standard
// retryer: 3 attempts, exponential back-off with jitter, the retry token bucket) with the
// back-off capped at maxBackoff; 0 keeps the SDK's default cap of 20 s. attempts, when given,
// replaces the 3 attempts.
func troubleProvider(t *testing.T, srv *awstest.Server, maxBackoff time.Duration, attempts ...int) *Provider {
	t.Helper()
	retryer := config.WithRetryer(func() awssdk.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			if maxBackoff > 0 {
				o.MaxBackoff = maxBackoff
			}
			if len(attempts) > 0 {
				o.MaxAttempts = attempts[0]
			}
		})
	})
	p, err := NewProvider(context.Background(), testConfig(srv.URL), clock.RealClock{}, append(srv.LoadOptions(), retryer)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkSpacing returns the gaps between consecutive requests and fails when one is longer than
// most: the SDK's back-off is full jitter (rand × min(1 s·2^i, cap) after a throttle), so a gap
// has no floor, only the cap; what keeps a throttled client from a hot loop is MaxAttempts per
// call and, above it, the controller's own back-off between launch attempts (LaunchRetry).
func checkSpacing(t *testing.T, reqs []awstest.Request, most time.Duration) []time.Duration {
	t.Helper()
	var gaps []time.Duration
	for i := 1; i < len(reqs); i++ {
		gap := reqs[i].At.Sub(reqs[i-1].At)
		gaps = append(gaps, gap.Round(time.Millisecond))
		if gap > most {
			t.Errorf("request %d (%s) came %s after the one before, want at most %s (the back-off's cap)", i+1, reqs[i].Action, gap, most)
		}
	}
	return gaps
}

// TestCreateInThrottledWindow: every request is throttled (HTTP 503 RequestLimitExceeded). A
// Create makes MaxAttempts launch-ID lookups, apart by at most the back-off's cap, no
// CreateFleet, and fails
// with an error that is no refusal (the controller keeps the record and retries later).
func TestCreateInThrottledWindow(t *testing.T) {
	srv := awstest.NewServer(t)
	fleets := srv.ServeFleets()
	if err := srv.SetTrouble(awstest.Trouble{Until: time.Now().Add(time.Hour), FailShare: 1, Error: awstest.Throttled()}); err != nil {
		t.Fatal(err)
	}
	p := troubleProvider(t, srv, troubleBackoff)
	_, err := p.Create(context.Background(), cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1b", api.Spot)})
	if err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") || cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsQuota(err) {
		t.Fatalf("Create: %v; want the throttling error, no refusal", err)
	}
	reqs := srv.Requests("")
	if len(reqs) != awstest.MaxAttempts || len(srv.Requests("CreateFleet")) != 0 {
		t.Fatalf("%d requests (%d CreateFleet), want %d lookups and no CreateFleet", len(reqs), len(srv.Requests("CreateFleet")), awstest.MaxAttempts)
	}
	t.Logf("%d requests in the window, spaced %v", len(reqs), checkSpacing(t, reqs, troubleBackoff+time.Second))
	if n := len(fleets.Instances()); n != 0 {
		t.Errorf("%d instances launched, want none", n)
	}
}

// TestCreateThrottledAfterLaunchNotLaunchedTwice: every CreateFleet launches the instance and is
// then answered 503 RequestLimitExceeded (the answer lost). The SDK retries it with the same
// ClientToken, which EC2 (the FleetStore) answers without launching again; the Create fails. Once
// the window is over, the controller's retry (same launch ID) finds the instance by its launch-ID
// tag and returns it without a CreateFleet: one instance.
func TestCreateThrottledAfterLaunchNotLaunchedTwice(t *testing.T) {
	srv := awstest.NewServer(t)
	fleets := srv.ServeFleets()
	if err := srv.SetTrouble(awstest.Trouble{Until: time.Now().Add(time.Hour), Actions: []string{"CreateFleet"},
		FailShare: 1, AfterShare: 1, Error: awstest.Throttled()}); err != nil {
		t.Fatal(err)
	}
	p := troubleProvider(t, srv, troubleBackoff)
	req := cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1b", api.Spot)}
	if _, err := p.Create(context.Background(), req); err == nil || cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("Create in the window: %v; want the throttling error", err)
	}
	creates := srv.Requests("CreateFleet")
	if len(creates) != awstest.MaxAttempts {
		t.Fatalf("%d CreateFleet, want %d (the SDK's attempts)", len(creates), awstest.MaxAttempts)
	}
	for _, c := range creates[1:] {
		if c.Form.Get("ClientToken") != creates[0].Form.Get("ClientToken") || c.Form.Get("ClientToken") == "" {
			t.Errorf("client tokens %q and %q differ", creates[0].Form.Get("ClientToken"), c.Form.Get("ClientToken"))
		}
	}
	t.Logf("CreateFleet attempts spaced %v", checkSpacing(t, creates, troubleBackoff+time.Second))
	launched := fleets.Instances()
	if len(launched) != 1 {
		t.Fatalf("%d instances after the window, want 1: %+v", len(launched), launched)
	}
	srv.ClearTrouble()
	inst, err := p.Create(context.Background(), req)
	if err != nil || inst.ID != launched[0].ID {
		t.Fatalf("the retry: %+v, %v; want the instance launched in the window, %s", inst, err, launched[0].ID)
	}
	if n := len(srv.Requests("CreateFleet")); n != awstest.MaxAttempts {
		t.Errorf("the retry made %d more CreateFleet, want none", n-awstest.MaxAttempts)
	}
	if n := len(fleets.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// TestCreateWaitBoundedByContext: the caller's context bounds a Create whether the endpoint
// answers late (a minute) or throttles and the SDK backs off with its production cap (20 s):
// either way the Create returns within a second or so of the deadline with the context's error.
func TestCreateWaitBoundedByContext(t *testing.T) {
	for _, c := range []struct {
		name    string
		trouble awstest.Trouble
	}{
		{"slow answers", awstest.Trouble{Latency: time.Minute}},
		{"throttled, production back-off", awstest.Trouble{FailShare: 1, Error: awstest.Throttled()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.ServeFleets()
			c.trouble.Until = time.Now().Add(time.Hour)
			if err := srv.SetTrouble(c.trouble); err != nil {
				t.Fatal(err)
			}
			// Twenty attempts, so that the SDK cannot run out of them before the deadline: its
			// back-off is full jitter, and with its default three, both back-offs drawn under
			// 300 ms together (about one run in fifty) ended the Create early with the throttle.
			p := troubleProvider(t, srv, 0, 20)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Create(ctx, cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1b", api.Spot)})
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(fmtErr(err), "deadline") {
				t.Errorf("Create: %v; want the context's deadline", err)
			}
			if took > 5*time.Second {
				t.Errorf("Create returned %s after it started, want about the 300 ms deadline", took)
			}
			t.Logf("returned after %s with %d requests", took.Round(time.Millisecond), len(srv.Requests("")))
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCreatePartialFleetIsARefusal: EC2 answers the fleet with fewer instances than asked (none
// of one) and an errorSet: the Create is an insufficient-capacity refusal naming the offering,
// the 200 is not retried, nothing is launched.
func TestCreatePartialFleetIsARefusal(t *testing.T) {
	srv := awstest.NewServer(t)
	fleets := srv.ServeFleets()
	if err := srv.SetTrouble(awstest.Trouble{Until: time.Now().Add(time.Hour), PartialFleetShare: 1}); err != nil {
		t.Fatal(err)
	}
	p := troubleProvider(t, srv, troubleBackoff)
	o := ref("g5.xlarge", "us-east-1b", api.Spot)
	_, err := p.Create(context.Background(), cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: o})
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 1 || ice.Offerings[0] != o {
		t.Fatalf("Create: %v; want insufficient capacity for %v", err, o)
	}
	if n := len(srv.Requests("CreateFleet")); n != 1 {
		t.Errorf("%d CreateFleet, want 1", n)
	}
	if n := len(fleets.Instances()); n != 0 {
		t.Errorf("%d instances, want none", n)
	}
}

// TestTroubleValidation: bad windows are refused, naming the field.
func TestTroubleValidation(t *testing.T) {
	srv := awstest.NewServer(t)
	until := time.Now().Add(time.Hour)
	for _, c := range []struct {
		t    awstest.Trouble
		want string
	}{
		{awstest.Trouble{}, "Until"},
		{awstest.Trouble{Until: until, FailShare: 2, Error: awstest.Internal()}, "FailShare"},
		{awstest.Trouble{Until: until, FailShare: 1}, "Error"},
		{awstest.Trouble{Until: until, AfterShare: -1}, "AfterShare"},
		{awstest.Trouble{Until: until, Latency: -time.Second}, "Latency"},
	} {
		if err := srv.SetTrouble(c.t); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.t, err, c.want)
		}
	}
}
