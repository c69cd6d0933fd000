package aws

import (
	"context"
	"errors"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// TestCapacityReservations: the account's active reservations are read over the wire, across
// pages, with the state filter and the IDs asked for.
func TestCapacityReservations(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeCapacityReservations",
		awstest.DescribeCapacityReservations("page-2", awstest.CapacityReservation{ID: "cr-0aaa", Type: "m7i.xlarge", Zone: "us-east-1a",
			Total: 4, Available: 1, MatchCriteria: "targeted", State: "active"}),
		awstest.DescribeCapacityReservations("", awstest.CapacityReservation{ID: "cr-0bbb", Type: "g6.xlarge", Zone: "us-east-1b",
			Total: 2, Available: 2, MatchCriteria: "open", State: "active"}))
	p, _ := newTestProvider(t, srv)
	got, err := p.CapacityReservations(context.Background(), "cr-0aaa", "cr-0bbb")
	if err != nil {
		t.Fatal(err)
	}
	want := []CapacityReservation{
		{ID: "cr-0aaa", InstanceType: "m7i.xlarge", Zone: "us-east-1a", Total: 4, Available: 1, Targeted: true, State: "active"},
		{ID: "cr-0bbb", InstanceType: "g6.xlarge", Zone: "us-east-1b", Total: 2, Available: 2, State: "active"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reservations (-want +got):\n%s", diff)
	}
	reqs := srv.Requests("DescribeCapacityReservations")
	if len(reqs) != 2 || reqs[1].Form.Get("NextToken") != "page-2" {
		t.Fatalf("%d calls, second NextToken %q", len(reqs), reqs[len(reqs)-1].Form.Get("NextToken"))
	}
	if ids, f := reqs[0].FormList("CapacityReservationId"), reqs[0].EC2Filters(); !cmp.Equal(ids, []string{"cr-0aaa", "cr-0bbb"}) || !cmp.Equal(f["state"], []string{"active"}) {
		t.Errorf("request ids %v, filters %v", ids, f)
	}
}

// reservedRequest is an on-demand m7i.xlarge in us-east-1a planned on reservation cr-0res, with
// the reservation's label, falling back to spot c7i.xlarge.
func reservedRequest() cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		LaunchID: "web-res-1", NodeName: "web-res", Cluster: testCluster, Pool: "web",
		Offering:            ref("m7i.xlarge", "us-east-1a", api.OnDemand),
		Fallbacks:           []api.Offering{ref("c7i.xlarge", "us-east-1a", api.Spot)},
		CapacityReservation: "cr-0res",
		Labels: map[string]string{corev1.LabelTopologyZone: "us-east-1a", corev1.LabelInstanceTypeStable: "m7i.xlarge",
			api.LabelPool: "web", api.LabelCapacityType: "on-demand", api.LabelCapacityReservation: "cr-0res"},
	}
}

func reservation(available int, criteria string) awstest.CapacityReservation {
	return awstest.CapacityReservation{ID: "cr-0res", Type: "m7i.xlarge", Zone: "us-east-1a", Total: 2, Available: available,
		MatchCriteria: criteria, State: "active"}
}

var reservedLaunch = awstest.CreateFleet([]awstest.FleetLaunch{{Pool: awstest.FleetPool{Type: "m7i.xlarge", SubnetID: subnetA,
	Zone: "us-east-1a", Lifecycle: "on-demand"}, InstanceIDs: []string{"i-0reserved"}}}, nil)

// TestLaunchIntoTargetedReservation: with managed templates, the node goes into the reservation in
// one on-demand fleet whose own launch template targets the reservation
// (CapacityReservationSpecification) and whose on-demand options use reservations first; its
// client token is the reserved one.
func TestLaunchIntoTargetedReservation(t *testing.T) {
	srv, inst := launchReservedWithTemplates(t, reservation(1, "targeted"))
	if inst.CapacityReservation != "cr-0res" {
		t.Errorf("the reserved instance reports reservation %q, want cr-0res", inst.CapacityReservation)
	}
	if inst.ID != "i-0reserved" || inst.Offering != ref("m7i.xlarge", "us-east-1a", api.OnDemand) {
		t.Errorf("launched %+v", inst)
	}
	lt := srv.Requests("CreateLaunchTemplate")
	if len(lt) != 1 {
		t.Fatalf("%d CreateLaunchTemplate calls, want 1", len(lt))
	}
	if got := lt[0].Form.Get("LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"); got != "cr-0res" {
		t.Errorf("template targets reservation %q, want cr-0res", got)
	}
	ud, err := lt[0].UserData()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ud), api.LabelCapacityReservation+"=cr-0res") {
		t.Errorf("the kubelet of a reserved node lacks its reservation label:\n%s", ud)
	}
	fleets := srv.Requests("CreateFleet")
	if len(fleets) != 1 {
		t.Fatalf("%d CreateFleet calls, want 1", len(fleets))
	}
	form := fleets[0].Form
	for k, want := range map[string]string{
		"OnDemandOptions.CapacityReservationOptions.UsageStrategy": "use-capacity-reservations-first",
		"TargetCapacitySpecification.DefaultTargetCapacityType":    "on-demand",
		"ClientToken": ReservedClientToken("web-res-1"),
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": lt[0].Form.Get("LaunchTemplateName"),
		"LaunchTemplateConfigs.1.Overrides.1.InstanceType":                       "m7i.xlarge",
		"LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone":                   "us-east-1a",
		"LaunchTemplateConfigs.1.Overrides.2.InstanceType":                       "", // the fallbacks are not in the reservation's fleet
	} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// launchReservedWithTemplates launches reservedRequest with managed templates against a server
// that has the reservation and answers the (first) fleet with reservedLaunch.
func launchReservedWithTemplates(t *testing.T, r awstest.CapacityReservation) (*awstest.Server, *cloudprovider.Instance) {
	t.Helper()
	srv := awstest.NewServer(t)
	srv.ServeLaunchTemplates()
	srv.ServeCapacityReservations(r)
	srv.Always("DescribeInstances", noInstances())
	srv.Enqueue("CreateFleet", reservedLaunch)
	p, err := NewProvider(context.Background(), bootstrapConfig(srv.URL), fakeClock(), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Create(context.Background(), reservedRequest())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return srv, inst
}

// TestReservationFullLaunchesOpen: a reservation without a free instance is not tried; the node
// launches on open capacity with the usual fleet, without the reservation's label, and the
// offering is not marked unavailable.
func TestReservationFullLaunchesOpen(t *testing.T) {
	srv, inst := launchReservedWithTemplates(t, reservation(0, "targeted"))
	if inst.CapacityReservation != "" {
		t.Errorf("an instance on open capacity reports reservation %q", inst.CapacityReservation)
	}
	fleets := srv.Requests("CreateFleet")
	if len(fleets) != 1 {
		t.Fatalf("%d CreateFleet calls, want 1", len(fleets))
	}
	form := fleets[0].Form
	if form.Get("OnDemandOptions.CapacityReservationOptions.UsageStrategy") != "" || form.Get("ClientToken") != ClientToken("web-res-1", api.OnDemand) {
		t.Errorf("open fleet: usage strategy %q, client token %q", form.Get("OnDemandOptions.CapacityReservationOptions.UsageStrategy"), form.Get("ClientToken"))
	}
	for _, c := range srv.Requests("CreateLaunchTemplate") {
		if c.Form.Get("LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId") != "" {
			t.Errorf("open launch created a template targeting the reservation")
		}
		if ud, _ := c.UserData(); strings.Contains(string(ud), api.LabelCapacityReservation) {
			t.Errorf("open node carries the reservation label:\n%s", ud)
		}
	}
}

// TestReservationICEFallsBackOpen: a reserved fleet that EC2 answers with no capacity leaves the
// open offering available, and the launch goes on to open capacity.
func TestReservationICEFallsBackOpen(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.ServeCapacityReservations(reservation(1, "open"))
	srv.Always("DescribeInstances", noInstances())
	pool := awstest.FleetPool{Type: "m7i.xlarge", SubnetID: subnetA, Zone: "us-east-1a", Lifecycle: "on-demand"}
	srv.Enqueue("CreateFleet", awstest.CreateFleet(nil, []awstest.FleetError{{Pool: pool, Code: "ReservationCapacityExceeded", Message: "full"}}),
		reservedLaunch)
	p, _ := newTestProvider(t, srv) // the configured launch template: an open reservation needs no other
	if _, err := p.Create(context.Background(), reservedRequest()); err != nil {
		t.Fatalf("Create: %v", err)
	}
	fleets := srv.Requests("CreateFleet")
	if len(fleets) != 2 || fleets[0].Form.Get("ClientToken") != ReservedClientToken("web-res-1") ||
		fleets[1].Form.Get("ClientToken") != ClientToken("web-res-1", api.OnDemand) {
		t.Fatalf("%d CreateFleet calls, want the reserved one then the open one", len(fleets))
	}
	if fleets[0].Form.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId") != testTemplate {
		t.Errorf("reserved fleet's template %v", fleets[0].Form)
	}
	if p.unavailable.IsUnavailable(ref("m7i.xlarge", "us-east-1a", api.OnDemand)) {
		t.Error("a full reservation made the open offering unavailable")
	}
}

// TestTargetedReservationNeedsManagedTemplates: with only a configured launch template, which
// cannot name the reservation, a targeted reservation is a configuration error, not a silent
// launch on open capacity at the list price.
func TestTargetedReservationNeedsManagedTemplates(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.ServeCapacityReservations(reservation(1, "targeted"))
	srv.Always("DescribeInstances", noInstances())
	p, _ := newTestProvider(t, srv)
	_, err := p.Create(context.Background(), reservedRequest())
	var le *LaunchError
	if !errors.As(err, &le) || le.Code != "TargetedReservationNeedsManagedTemplates" || !strings.Contains(err.Error(), "cr-0res") {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.Requests("CreateFleet")); n != 0 {
		t.Errorf("%d CreateFleet calls", n)
	}
}

// TestLaunchIntoCapacityBlock: a reservation EC2 reports as a capacity block is launched into
// with a managed template that sets the capacity-block market type and targets it, in a fleet whose
// target capacity type is capacity-block and which carries no capacity-reservation options (EC2
// refuses them with it); with a launch template of the user's own, it is a launch error.
func TestLaunchIntoCapacityBlock(t *testing.T) {
	block := reservation(1, "targeted")
	block.ReservationType = "capacity-block"
	srv, inst := launchReservedWithTemplates(t, block)
	if inst.ID != "i-0reserved" {
		t.Errorf("launched %+v", inst)
	}
	lt := srv.Requests("CreateLaunchTemplate")
	if len(lt) != 1 {
		t.Fatalf("%d CreateLaunchTemplate calls, want 1", len(lt))
	}
	for k, want := range map[string]string{
		"LaunchTemplateData.InstanceMarketOptions.MarketType":                                                 "capacity-block",
		"LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId": "cr-0res",
	} {
		if got := lt[0].Form.Get(k); got != want {
			t.Errorf("template %s = %q, want %q", k, got, want)
		}
	}
	form := srv.Requests("CreateFleet")[0].Form
	for k, want := range map[string]string{
		"TargetCapacitySpecification.DefaultTargetCapacityType":                  "capacity-block",
		"OnDemandOptions.CapacityReservationOptions.UsageStrategy":               "",
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": lt[0].Form.Get("LaunchTemplateName"),
	} {
		if got := form.Get(k); got != want {
			t.Errorf("fleet %s = %q, want %q", k, got, want)
		}
	}
	// The block's template is not the ODCR's: another name for another content.
	odcr := reservedTemplate(managedTemplate{name: "tiler-web-0123456789abcdef", hash: "0123456789abcdef", data: &ec2types.RequestLaunchTemplateData{}}, "cr-0res", false)
	if odcr.name == lt[0].Form.Get("LaunchTemplateName") {
		t.Errorf("the block's template has the ODCR template's name %s", odcr.name)
	}

	own := awstest.NewServer(t)
	own.ServeCapacityReservations(block)
	own.Always("DescribeInstances", noInstances())
	po, _ := newTestProvider(t, own)
	_, err := po.Create(context.Background(), reservedRequest())
	var le *LaunchError
	if !errors.As(err, &le) || le.Code != "CapacityBlockNeedsManagedTemplates" || !strings.Contains(err.Error(), "cr-0res") {
		t.Fatalf("with a launch template of your own: error %v", err)
	}
}

// TestReservationWindows: EC2's start and end dates of the capacity blocks asked for, whatever
// their state (this one is scheduled); an ODCR, with an end date (its instances outlive it) or
// without, a block not asked for, and an ID EC2 does not know are left out.
func TestReservationWindows(t *testing.T) {
	srv := awstest.NewServer(t)
	block := awstest.CapacityReservation{ID: "cr-0block", Type: "p5.48xlarge", Zone: "us-east-1a", Total: 2, Available: 2,
		MatchCriteria: "targeted", State: "scheduled", ReservationType: "capacity-block",
		Start: "2026-12-07T11:30:00Z", End: "2026-12-14T11:30:00Z"}
	dated := reservation(1, "open")
	dated.ID, dated.Start, dated.End = "cr-0dated", "2026-11-01T00:00:00Z", "2027-01-01T00:00:00Z"
	forGood := reservation(1, "open")
	forGood.ID = "cr-0forever"
	other := block
	other.ID = "cr-0other"
	srv.ServeCapacityReservations(block, dated, forGood, other)
	p, _ := newTestProvider(t, srv)
	got, err := p.ReservationWindows(context.Background(), []string{"cr-0block", "cr-0dated", "cr-0forever", "cr-0unknown"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := map[string]cloudprovider.ReservationWindow{
		"cr-0block": {Start: at(block.Start), End: at(block.End)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("windows (-want +got):\n%s", d)
	}
	if f := srv.Requests("DescribeCapacityReservations")[0].EC2Filters(); len(f) != 0 {
		t.Errorf("filters %v: want every state (a block not started is scheduled)", f)
	}
}
