package aws

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

func pool(t, zone, lifecycle string) awstest.FleetPool {
	subnets := map[string]string{"us-east-1a": subnetA, "us-east-1b": subnetB, "us-east-1c": subnetC}
	return awstest.FleetPool{Type: t, SubnetID: subnets[zone], Zone: zone, Lifecycle: lifecycle}
}

func fleetErr(p awstest.FleetPool, code string) awstest.FleetError {
	return awstest.FleetError{Pool: p, Code: code, Message: code + " in " + p.Zone}
}

func launchOf(p awstest.FleetPool, id string) []awstest.FleetLaunch {
	return []awstest.FleetLaunch{{Pool: p, InstanceIDs: []string{id}}}
}

// TestCreateFailures covers the errorSet codes and whole-call errors and the typed error each
// becomes. The request is spot g5.xlarge in us-east-1a and 1b, then on-demand g5.xlarge in 1a.
func TestCreateFailures(t *testing.T) {
	spotA, spotB, odA := pool("g5.xlarge", "us-east-1a", "spot"), pool("g5.xlarge", "us-east-1b", "spot"), pool("g5.xlarge", "us-east-1a", "on-demand")
	refSpotA, refSpotB, refODA := ref("g5.xlarge", "us-east-1a", api.Spot), ref("g5.xlarge", "us-east-1b", api.Spot), ref("g5.xlarge", "us-east-1a", api.OnDemand)
	// The cache lists by type, zone, then capacity type; an error names offerings in request order.
	cacheOrder := []api.Offering{refODA, refSpotA, refSpotB}
	requestOrder := []api.Offering{refSpotA, refSpotB, refODA}
	iceAll := func(code string) []awstest.Response {
		return []awstest.Response{
			awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, code), fleetErr(spotB, code)}),
			awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(odA, code)}),
		}
	}
	tests := []struct {
		name        string
		fleets      []awstest.Response // answers to successive CreateFleet calls
		always      *awstest.Response  // answer to every CreateFleet call
		wantID      string             // launched instance, or "" for an error
		wantErr     func(error) bool
		wantCode    string
		wantFleets  int
		wantCached  []api.Offering
		wantOffered []api.Offering // offerings named by an InsufficientCapacityError
	}{
		{name: "spot unavailable, on-demand fallback launches",
			fleets: []awstest.Response{
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, "InsufficientInstanceCapacity"), fleetErr(spotB, "InsufficientInstanceCapacity")}),
				awstest.CreateFleet(launchOf(odA, "i-0od"), nil)},
			wantID: "i-0od", wantFleets: 2, wantCached: []api.Offering{refSpotA, refSpotB}},
		{name: "InsufficientInstanceCapacity everywhere", fleets: iceAll("InsufficientInstanceCapacity"),
			wantErr: cloudprovider.IsInsufficientCapacity, wantCode: "InsufficientInstanceCapacity", wantFleets: 2,
			wantCached: cacheOrder, wantOffered: requestOrder},
		{name: "InsufficientCapacity", fleets: iceAll("InsufficientCapacity"),
			wantErr: cloudprovider.IsInsufficientCapacity, wantCode: "InsufficientCapacity", wantFleets: 2,
			wantCached: cacheOrder, wantOffered: requestOrder},
		{name: "UnfulfillableCapacity and MaxSpotInstanceCountExceeded",
			fleets: []awstest.Response{
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, "MaxSpotInstanceCountExceeded"), fleetErr(spotB, "SpotMaxPriceTooLow")}),
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(odA, "UnfulfillableCapacity")})},
			wantErr: cloudprovider.IsInsufficientCapacity, wantCode: "MaxSpotInstanceCountExceeded,SpotMaxPriceTooLow,UnfulfillableCapacity", wantFleets: 2,
			wantCached: cacheOrder, wantOffered: requestOrder},
		{name: "Unsupported", fleets: iceAll("Unsupported"),
			wantErr: cloudprovider.IsInsufficientCapacity, wantCode: "Unsupported", wantFleets: 2,
			wantCached: cacheOrder, wantOffered: requestOrder},
		{name: "VcpuLimitExceeded on spot, ICE on on-demand: quota wins",
			fleets: []awstest.Response{
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, "VcpuLimitExceeded"), fleetErr(spotB, "VcpuLimitExceeded")}),
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(odA, "InsufficientInstanceCapacity")})},
			wantErr: cloudprovider.IsQuota, wantCode: "VcpuLimitExceeded", wantFleets: 2,
			wantCached: cacheOrder},
		{name: "InstanceLimitExceeded", fleets: iceAll("InstanceLimitExceeded"),
			wantErr: cloudprovider.IsQuota, wantCode: "InstanceLimitExceeded", wantFleets: 2,
			wantCached: cacheOrder},
		{name: "bad launch template stops at once and is not cached",
			fleets: []awstest.Response{awstest.CreateFleet(nil, []awstest.FleetError{
				{Code: "InvalidLaunchTemplateId.NotFound", Message: "The specified launch template does not exist"}})},
			wantErr: isLaunchError, wantCode: "InvalidLaunchTemplateId.NotFound", wantFleets: 1},
		{name: "whole-call InsufficientInstanceCapacity (HTTP 500, retried by the SDK)",
			always:  ptr(awstest.XMLFixtureStatus(t, "Error.InsufficientInstanceCapacity.xml", http.StatusInternalServerError)),
			wantErr: cloudprovider.IsInsufficientCapacity, wantCode: "InsufficientInstanceCapacity", wantFleets: 2 * awstest.MaxAttempts,
			wantCached: cacheOrder, wantOffered: requestOrder},
		{name: "whole-call UnauthorizedOperation is an untyped error",
			always:  ptr(awstest.EC2Error(http.StatusForbidden, "UnauthorizedOperation", "You are not authorized")),
			wantErr: isUntyped, wantCode: "UnauthorizedOperation", wantFleets: 1},
		{name: "neither instance nor error",
			fleets:  []awstest.Response{awstest.CreateFleet(nil, nil)},
			wantErr: isUntyped, wantCode: "neither an instance nor an error", wantFleets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Always("DescribeInstances", noInstances())
			srv.Enqueue("CreateFleet", tt.fleets...)
			if tt.always != nil {
				srv.Always("CreateFleet", *tt.always)
			}
			p, _ := newTestProvider(t, srv)
			req := cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: refSpotA,
				Fallbacks: []api.Offering{refSpotB, refODA}}
			inst, err := p.Create(context.Background(), req)
			checkOutcome(t, inst, err, tt.wantID, tt.wantErr, tt.wantCode)
			if n := len(srv.Requests("CreateFleet")); n != tt.wantFleets {
				t.Errorf("CreateFleet calls = %d, want %d", n, tt.wantFleets)
			}
			if diff := cmp.Diff(tt.wantCached, cachedRefs(p)); diff != "" {
				t.Errorf("unavailable cache (-want +got):\n%s", diff)
			}
			var ice *cloudprovider.InsufficientCapacityError
			if errors.As(err, &ice) {
				if diff := cmp.Diff(tt.wantOffered, ice.Offerings); diff != "" {
					t.Errorf("InsufficientCapacityError.Offerings (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func checkOutcome(t *testing.T, inst *cloudprovider.Instance, err error, wantID string, wantErr func(error) bool, wantCode string) {
	t.Helper()
	if wantID != "" {
		if err != nil || inst == nil || inst.ID != wantID {
			t.Fatalf("Create = %+v, %v; want instance %s", inst, err, wantID)
		}
		return
	}
	if err == nil {
		t.Fatalf("Create launched %+v, want an error", inst)
	}
	if !wantErr(err) {
		t.Errorf("error %v (%T) has the wrong type", err, errors.Unwrap(err))
	}
	if !strings.Contains(err.Error(), wantCode) || !strings.HasPrefix(err.Error(), "launching l-1: ") {
		t.Errorf("error %q should start with the launch ID and contain %q", err, wantCode)
	}
}

func isLaunchError(err error) bool {
	var le *LaunchError
	return errors.As(err, &le)
}

func isUntyped(err error) bool {
	return !cloudprovider.IsInsufficientCapacity(err) && !cloudprovider.IsQuota(err) && !isLaunchError(err)
}

func ptr[T any](v T) *T { return &v }

func cachedRefs(p *Provider) []api.Offering {
	var out []api.Offering
	for _, e := range p.Unavailable().List() {
		out = append(out, e.Offering)
	}
	return out
}

func TestCreateAllICEFixture(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances", noInstances())
	srv.Enqueue("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.all-ice.xml"))
	p, _ := newTestProvider(t, srv)
	_, err := p.Create(context.Background(), cloudprovider.LaunchRequest{LaunchID: "l-p5", Offering: ref("p5.48xlarge", "us-east-1a", api.OnDemand)})
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("error = %v, want an InsufficientCapacityError", err)
	}
	want := &cloudprovider.InsufficientCapacityError{
		Offerings: []api.Offering{ref("p5.48xlarge", "us-east-1a", api.OnDemand)},
		Code:      "InsufficientInstanceCapacity",
		Message:   "We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-1a). Our system will be working on provisioning additional capacity. You can currently get p5.48xlarge capacity by not specifying an Availability Zone in your request or choosing us-east-1b, us-east-1c.",
	}
	if diff := cmp.Diff(want, ice); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestCreateSkipsUnavailableOfferingsUntilTTL(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Always("DescribeInstances", noInstances())
	p, clk := newTestProvider(t, srv)
	a, b := ref("g5.xlarge", "us-east-1a", api.Spot), ref("g5.xlarge", "us-east-1b", api.Spot)
	p.Unavailable().MarkUnavailable(a, "InsufficientInstanceCapacity")
	p.Unavailable().MarkUnavailable(b, "InsufficientInstanceCapacity")
	req := cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: a, Fallbacks: []api.Offering{b}}

	// Both cached: no CreateFleet call, an InsufficientCapacityError naming both.
	_, err := p.Create(context.Background(), req)
	if !cloudprovider.IsInsufficientCapacity(err) || len(srv.Requests("CreateFleet")) != 0 {
		t.Fatalf("error = %v with %d CreateFleet calls; want ICE without a call", err, len(srv.Requests("CreateFleet")))
	}
	// After the TTL, 1b comes back (1a is marked again a minute later, so it is still cached).
	clk.Step(DefaultUnavailableTTL - 1)
	p.Unavailable().MarkUnavailable(a, "InsufficientInstanceCapacity")
	clk.Step(1)
	srv.Enqueue("CreateFleet", awstest.CreateFleet(launchOf(pool("g5.xlarge", "us-east-1b", "spot"), "i-0b"), nil))
	inst, err := p.Create(context.Background(), req)
	if err != nil || inst.ID != "i-0b" {
		t.Fatalf("Create = %+v, %v", inst, err)
	}
	form := srv.Requests("CreateFleet")[0].Form
	if got := form.Get("LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"); got != "us-east-1b" || form.Get("LaunchTemplateConfigs.1.Overrides.2.InstanceType") != "" {
		t.Errorf("overrides: first zone %q; want only us-east-1b", got)
	}
}

func TestCreateRetriesThrottling(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances",
		awstest.XMLFixtureStatus(t, "Error.RequestLimitExceeded.xml", http.StatusServiceUnavailable), noInstances())
	srv.Enqueue("CreateFleet",
		awstest.EC2Error(http.StatusTooManyRequests, "TooManyRequests", "slow down"),
		awstest.XMLFixture(t, "CreateFleet.instant.success.xml"))
	p, _ := newTestProvider(t, srv)
	inst, err := p.Create(context.Background(), cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1b", api.Spot)})
	if err != nil || inst.ID != "i-0123456789abcdef0" {
		t.Fatalf("Create = %+v, %v", inst, err)
	}
	fleets := srv.Requests("CreateFleet")
	if len(fleets) != 2 || len(srv.Requests("DescribeInstances")) != 2 {
		t.Fatalf("calls: %d CreateFleet, %d DescribeInstances; want 2 each", len(fleets), len(srv.Requests("DescribeInstances")))
	}
	if a, b := fleets[0].Form.Get("ClientToken"), fleets[1].Form.Get("ClientToken"); a != b || a == "" {
		t.Errorf("the SDK retry sent client tokens %q and %q; they must be equal", a, b)
	}
}
