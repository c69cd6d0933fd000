package aws

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// fakeFleet is a stateful EC2 behind awstest: CreateFleet launches the first override with the
// request's tags; DescribeInstances filters by tag and state the way EC2 does.
type fakeFleet struct {
	mu        sync.Mutex
	instances []awstest.Instance
}

func (f *fakeFleet) install(srv *awstest.Server) {
	srv.Handle("CreateFleet", func(r awstest.Request) awstest.Response {
		f.mu.Lock()
		defer f.mu.Unlock()
		p := awstest.FleetPool{Type: r.Form.Get("LaunchTemplateConfigs.1.Overrides.1.InstanceType"),
			SubnetID:  r.Form.Get("LaunchTemplateConfigs.1.Overrides.1.SubnetId"),
			Zone:      r.Form.Get("LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"),
			Lifecycle: r.Form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")}
		id := fmt.Sprintf("i-%017d", len(f.instances)+1)
		f.instances = append(f.instances, awstest.Instance{ID: id, Type: p.Type, Zone: p.Zone, SubnetID: p.SubnetID,
			State: "pending", LaunchTime: testNow, Tags: r.TagSpecifications()["instance"]})
		return awstest.CreateFleet([]awstest.FleetLaunch{{Pool: p, InstanceIDs: []string{id}}}, nil)
	})
	srv.Handle("DescribeInstances", func(r awstest.Request) awstest.Response {
		f.mu.Lock()
		defer f.mu.Unlock()
		return awstest.DescribeInstances("", matching(f.instances, r.EC2Filters())...)
	})
}

func matching(all []awstest.Instance, filters map[string][]string) []awstest.Instance {
	var out []awstest.Instance
	for _, i := range all {
		ok := true
		for name, values := range filters {
			var have string
			switch {
			case name == "instance-state-name":
				have = i.State
			case len(name) > 4 && name[:4] == "tag:":
				have = i.Tags[name[4:]]
			}
			ok = ok && contains(values, have)
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// TestCreateIsIdempotentOnLaunchID: a retried Create (the controller crashed after the call, or
// the first answer was lost) finds the instance by its launch-ID tag and does not launch again;
// another launch ID does launch.
func TestCreateIsIdempotentOnLaunchID(t *testing.T) {
	srv := awstest.NewServer(t)
	(&fakeFleet{}).install(srv)
	p, _ := newTestProvider(t, srv)
	req := cloudprovider.LaunchRequest{LaunchID: "launch-7", NodeName: "node-7", Pool: "gpu",
		Offering: ref("g5.xlarge", "us-east-1a", api.Spot)}

	first, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("first Create: %v", err)
	}
	second, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if first.ID != second.ID || second.LaunchID != "launch-7" || second.NodeName != "node-7" || second.Pool != "gpu" {
		t.Errorf("second Create = %+v, want the first instance %s", second, first.ID)
	}
	if n := len(srv.Requests("CreateFleet")); n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1", n)
	}
	req.LaunchID = "launch-8"
	third, err := p.Create(context.Background(), req)
	if err != nil || third.ID == first.ID {
		t.Fatalf("Create for another launch ID = %+v, %v; want a new instance", third, err)
	}
}

// TestCreateAnswersWithTheEndedInstance: a Create retried under a launch ID whose instance has
// ended since (capacity lost before the boot) answers with that instance, terminated and with
// its reason, and launches nothing: EC2 would answer the repeated client token with it too, and
// the caller must not take it for a node that is booting. A live instance of the launch comes
// before an ended one.
func TestCreateAnswersWithTheEndedInstance(t *testing.T) {
	srv := awstest.NewServer(t)
	fleet := &fakeFleet{}
	fleet.install(srv)
	p, _ := newTestProvider(t, srv)
	req := cloudprovider.LaunchRequest{LaunchID: "launch-7", NodeName: "node-7", Pool: "gpu",
		Offering: ref("g5.xlarge", "us-east-1a", api.Spot)}
	first, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("first Create: %v", err)
	}
	fleet.mu.Lock()
	fleet.instances[0].State, fleet.instances[0].StateReason = "terminated", "Server.InsufficientInstanceCapacity"
	fleet.mu.Unlock()
	again, err := p.Create(context.Background(), req)
	if err != nil || again.ID != first.ID || again.State != cloudprovider.StateTerminated || !again.CapacityLost {
		t.Fatalf("Create after the capacity loss = %+v, %v; want %s terminated with capacity lost", again, err, first.ID)
	}
	if n := len(srv.Requests("CreateFleet")); n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1", n)
	}
	fleet.mu.Lock()
	live := fleet.instances[0]
	live.ID, live.State, live.StateReason = "i-00000000000000009", "running", "" // after the ended one in ID order
	fleet.instances = append(fleet.instances, live)
	fleet.mu.Unlock()
	if got, err := p.Create(context.Background(), req); err != nil || got.ID != live.ID || got.Ending() {
		t.Fatalf("Create with a live and an ended instance of the launch = %+v, %v; want the live %s", got, err, live.ID)
	}
}

func TestList(t *testing.T) {
	at := time.Date(2026, 7, 20, 12, 30, 5, 0, time.UTC)
	tags := func(launch string) map[string]string {
		return map[string]string{api.TagCluster: testCluster, api.TagLaunchID: launch,
			api.TagNodeName: "node-" + launch, api.TagPool: "gpu"}
	}
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances",
		awstest.DescribeInstances("page-2",
			awstest.Instance{ID: "i-0c", Type: "g5.xlarge", Zone: "us-east-1b", State: "running", Lifecycle: "spot", ImageID: "ami-0c0ffee",
				LaunchTime: at, Tags: tags("c")},
			awstest.Instance{ID: "i-0a", Type: "p5.48xlarge", Zone: "us-east-1a", State: "shutting-down",
				StateReason: "Server.SpotInstanceTermination", LaunchTime: at, Tags: tags("a")}),
		awstest.XMLFixtureStatus(t, "Error.RequestLimitExceeded.xml", http.StatusServiceUnavailable), // page 2, first attempt
		awstest.DescribeInstances("",
			awstest.Instance{ID: "i-0b", Type: "g6.xlarge", Zone: "us-east-1c", State: "pending", LaunchTime: at, Tags: tags("b")}))
	p, _ := newTestProvider(t, srv)
	p.SetPrices(&catalog.Catalog{Types: []catalog.InstanceType{{Name: "g5.xlarge",
		Offerings: []catalog.ZonePrice{{Zone: "us-east-1b", CapacityType: api.Spot, PricePerHour: 0.3981}}}}})

	got, err := p.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	inst := func(id, launch, typ, zone string, ct api.CapacityType, state string, price float64) *cloudprovider.Instance {
		return &cloudprovider.Instance{ID: id, LaunchID: launch, NodeName: "node-" + launch, Pool: "gpu",
			Offering: ref(typ, zone, ct), State: state, PricePerHour: price, LaunchedAt: at, Tags: tags(launch)}
	}
	ending := inst("i-0a", "a", "p5.48xlarge", "us-east-1a", api.OnDemand, cloudprovider.StateTerminating, 0)
	ending.EndCode, ending.CapacityLost = "Server.SpotInstanceTermination", true
	booted := inst("i-0c", "c", "g5.xlarge", "us-east-1b", api.Spot, cloudprovider.StateRunning, 0.3981)
	booted.Image = "ami-0c0ffee"
	want := []*cloudprovider.Instance{
		ending,
		inst("i-0b", "b", "g6.xlarge", "us-east-1c", api.OnDemand, cloudprovider.StatePending, 0),
		booted,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	// With a launch template of the user's own, Tiler does not choose the image: no drift by it.
	if img, err := p.ImageFor(context.Background(), api.GPUConfig{}); err != nil || img != "" {
		t.Errorf("ImageFor with the user's launch template = %q, want none", img)
	}
	reqs := srv.Requests("DescribeInstances")
	wantFilters := map[string][]string{"tag:tiler.dev/cluster": {testCluster},
		"instance-state-name": {"pending", "running", "shutting-down", "stopping", "stopped"}}
	if diff := cmp.Diff(wantFilters, reqs[0].EC2Filters()); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
	if len(reqs) != 3 || reqs[2].Form.Get("NextToken") != "page-2" {
		t.Errorf("requests = %d, last NextToken %q; want 3 and page-2", len(reqs), reqs[len(reqs)-1].Form.Get("NextToken"))
	}
}

func TestGet(t *testing.T) {
	mine := map[string]string{api.TagCluster: testCluster}
	theirs := map[string]string{api.TagCluster: "other"}
	tests := []struct {
		name      string
		resp      awstest.Response
		wantState string // "" means a NotFoundError
		// wantCode and wantCapacity are the instance's EndCode and CapacityLost.
		wantCode     string
		wantCapacity bool
	}{
		{"running", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "running", Tags: mine}), cloudprovider.StateRunning, "", false},
		{"terminated is returned", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "terminated", Tags: mine}), cloudprovider.StateTerminated, "", false},
		{"stopped counts as terminating", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "stopped", Tags: mine}), cloudprovider.StateTerminating, "", false},
		{"spot terminated for capacity", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "terminated",
			StateReason: "Server.SpotInstanceTermination", Tags: mine}), cloudprovider.StateTerminated, "Server.SpotInstanceTermination", true},
		{"capacity lost during the launch", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "shutting-down",
			StateReason: "Server.InsufficientInstanceCapacity", Tags: mine}), cloudprovider.StateTerminating, "Server.InsufficientInstanceCapacity", true},
		{"spot stopped for capacity", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "stopped",
			StateReason: "Server.SpotInstanceShutdown", Tags: mine}), cloudprovider.StateTerminating, "Server.SpotInstanceShutdown", true},
		{"terminated by a person", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "terminated",
			StateReason: "Client.UserInitiatedShutdown", Tags: mine}), cloudprovider.StateTerminated, "Client.UserInitiatedShutdown", false},
		{"a running instance's last reason is no end", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "running",
			StateReason: "Server.SpotInstanceShutdown", Tags: mine}), cloudprovider.StateRunning, "", false},
		{"another cluster's instance", awstest.DescribeInstances("", awstest.Instance{ID: "i-1", Type: "g5.xlarge", State: "running", Tags: theirs}), "", "", false},
		{"unknown ID", awstest.XMLFixtureStatus(t, "Error.InvalidInstanceIDNotFound.xml", http.StatusBadRequest), "", "", false},
		{"recorded instance without Tiler's tags", awstest.XMLFixture(t, "DescribeInstances.xml"), "", "", false},
		{"empty answer", awstest.DescribeInstances(""), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("DescribeInstances", tt.resp)
			p, _ := newTestProvider(t, srv)
			got, err := p.Get(context.Background(), "i-1")
			if tt.wantState == "" {
				if !cloudprovider.IsNotFound(err) {
					t.Fatalf("Get = %+v, %v; want a NotFoundError", got, err)
				}
				return
			}
			if err != nil || got.State != tt.wantState {
				t.Fatalf("Get = %+v, %v; want state %s", got, err, tt.wantState)
			}
			if got.EndCode != tt.wantCode || got.CapacityLost != tt.wantCapacity {
				t.Errorf("EndCode, CapacityLost = %q, %t; want %q, %t", got.EndCode, got.CapacityLost, tt.wantCode, tt.wantCapacity)
			}
			if ids := srv.Requests("DescribeInstances")[0].FormList("InstanceId"); len(ids) != 1 || ids[0] != "i-1" {
				t.Errorf("InstanceId.N = %v", ids)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	terminated := `<TerminateInstancesResponse><instancesSet><item><instanceId>i-0123456789abcdef0</instanceId>` +
		`<currentState><code>48</code><name>terminated</name></currentState><previousState><code>48</code><name>terminated</name></previousState>` +
		`</item></instancesSet></TerminateInstancesResponse>`
	tests := []struct {
		name         string
		resps        []awstest.Response
		wantNotFound bool
		wantCalls    int
	}{
		{"running instance", []awstest.Response{awstest.XMLFixture(t, "TerminateInstances.xml")}, false, 1},
		{"throttled then terminated", []awstest.Response{
			awstest.XMLFixtureStatus(t, "Error.RequestLimitExceeded.xml", http.StatusServiceUnavailable),
			awstest.XMLFixture(t, "TerminateInstances.xml")}, false, 2},
		{"unknown ID", []awstest.Response{awstest.XMLFixtureStatus(t, "Error.InvalidInstanceIDNotFound.xml", http.StatusBadRequest)}, true, 1},
		{"already terminated", []awstest.Response{awstest.XML([]byte(terminated))}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("TerminateInstances", tt.resps...)
			p, _ := newTestProvider(t, srv)
			err := p.Delete(context.Background(), "i-0123456789abcdef0")
			if tt.wantNotFound != cloudprovider.IsNotFound(err) || (!tt.wantNotFound && err != nil) {
				t.Fatalf("Delete = %v, want not-found %v", err, tt.wantNotFound)
			}
			reqs := srv.Requests("TerminateInstances")
			if len(reqs) != tt.wantCalls || reqs[0].Form.Get("InstanceId.1") != "i-0123456789abcdef0" {
				t.Errorf("%d TerminateInstances calls (want %d), InstanceId.1 %q", len(reqs), tt.wantCalls, reqs[0].Form.Get("InstanceId.1"))
			}
		})
	}
}

func TestDeleteOtherErrorIsNotNotFound(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("TerminateInstances", awstest.EC2Error(http.StatusForbidden, "UnauthorizedOperation", "no"))
	p, _ := newTestProvider(t, srv)
	err := p.Delete(context.Background(), "i-1")
	if err == nil || cloudprovider.IsNotFound(err) {
		t.Fatalf("Delete = %v, want a plain error", err)
	}
}

func TestNormaliseState(t *testing.T) {
	for in, want := range map[string]string{
		"pending": cloudprovider.StatePending, "running": cloudprovider.StateRunning, "shutting-down": cloudprovider.StateTerminating,
		"stopping": cloudprovider.StateTerminating, "stopped": cloudprovider.StateTerminating, "terminated": cloudprovider.StateTerminated, "": cloudprovider.StatePending,
	} {
		if got := NormaliseState(in); got != want {
			t.Errorf("NormaliseState(%q) = %q, want %q", in, got, want)
		}
	}
}
