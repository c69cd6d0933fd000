package aws

import (
	"context"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// TestCreateReportingUnavailable checks that CreateReportingUnavailable hands the controller the
// overrides EC2 found unavailable in a launch that succeeded, on the wire: the recorded
// partial-success answer (HTTP 200, two errorSet items, one launched pool), and an on-demand
// fallback that launched after the spot fleet was unavailable, with an unavailable pool of its own.
func TestCreateReportingUnavailable(t *testing.T) {
	spotA, spotB := pool("g5.xlarge", "us-east-1a", "spot"), pool("g5.xlarge", "us-east-1b", "spot")
	odA, odB := pool("g5.xlarge", "us-east-1a", "on-demand"), pool("g5.xlarge", "us-east-1b", "on-demand")
	tests := []struct {
		name   string
		req    cloudprovider.LaunchRequest
		fleets []awstest.Response
		wantID string
		want   []api.Offering
	}{
		{name: "recorded partial success",
			req:    gpuRequest(),
			fleets: []awstest.Response{awstest.XMLFixture(t, "CreateFleet.instant.partial-ice.xml")},
			wantID: "i-0fedcba9876543210",
			// p5.48xlarge/us-east-1b InsufficientInstanceCapacity, p4d.24xlarge/us-east-1c
			// UnfulfillableCapacity; g6e.12xlarge launched.
			want: []api.Offering{ref("p4d.24xlarge", "us-east-1c", api.Spot), ref("p5.48xlarge", "us-east-1b", api.Spot)}},
		{name: "spot unavailable, on-demand launched in 1b after 1a was unavailable",
			req: cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1a", api.Spot),
				Fallbacks: []api.Offering{ref("g5.xlarge", "us-east-1b", api.Spot),
					ref("g5.xlarge", "us-east-1a", api.OnDemand), ref("g5.xlarge", "us-east-1b", api.OnDemand)}},
			fleets: []awstest.Response{
				// The spot fleet: 1a out of capacity, 1b under a spot limit (reported, as quota).
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, "InsufficientInstanceCapacity"), fleetErr(spotB, "MaxSpotInstanceCountExceeded")}),
				// The on-demand fleet: 1a unavailable twice (EC2 may repeat a pool), 1b launched.
				awstest.CreateFleet(launchOf(odB, "i-0odb"), []awstest.FleetError{fleetErr(odA, "InsufficientInstanceCapacity"), fleetErr(odA, "InsufficientInstanceCapacity")}),
			},
			wantID: "i-0odb",
			want: []api.Offering{ref("g5.xlarge", "us-east-1a", api.OnDemand), ref("g5.xlarge", "us-east-1a", api.Spot),
				ref("g5.xlarge", "us-east-1b", api.Spot)}},
		{name: "a failure that is not capacity is in the error, not the report",
			req: cloudprovider.LaunchRequest{LaunchID: "l-1", Offering: ref("g5.xlarge", "us-east-1a", api.Spot),
				Fallbacks: []api.Offering{ref("g5.xlarge", "us-east-1a", api.OnDemand)}},
			fleets: []awstest.Response{
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(spotA, "InsufficientInstanceCapacity")}),
				awstest.CreateFleet(nil, []awstest.FleetError{fleetErr(odA, "InvalidLaunchTemplateId.NotFound")}),
			},
			want: []api.Offering{ref("g5.xlarge", "us-east-1a", api.Spot)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Always("DescribeInstances", noInstances())
			srv.Enqueue("CreateFleet", tt.fleets...)
			p, _ := newTestProvider(t, srv)
			var reporter cloudprovider.UnavailableReporter = p
			inst, unavailable, err := reporter.CreateReportingUnavailable(context.Background(), tt.req)
			switch {
			case tt.wantID != "" && (err != nil || inst == nil || inst.ID != tt.wantID):
				t.Fatalf("CreateReportingUnavailable = %+v, %v; want instance %s", inst, err, tt.wantID)
			case tt.wantID == "" && !isLaunchError(err):
				t.Fatalf("CreateReportingUnavailable = %+v, %v; want a LaunchError", inst, err)
			}
			if diff := cmp.Diff(tt.want, unavailable); diff != "" {
				t.Errorf("reported offerings (-want +got):\n%s", diff)
			}
			if n := len(srv.Requests("CreateFleet")); n != len(tt.fleets) {
				t.Errorf("CreateFleet calls = %d, want %d", n, len(tt.fleets))
			}
			// The provider's own cache holds the same offerings, so Create skips them too.
			if diff := cmp.Diff(tt.want, cachedRefs(p)); diff != "" {
				t.Errorf("unavailable cache (-want +got):\n%s", diff)
			}
		})
	}
}
