package aws

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// gpuRequest is the request the recorded CreateFleet.request.txt was made for: spot p5.48xlarge
// in us-east-1b, falling back to p4d.24xlarge and g6e.12xlarge in us-east-1c.
func gpuRequest() cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		LaunchID: "gpu-pool-abcde-1", NodeName: "gpu-pool-abcde", Cluster: testCluster, Pool: "gpu-pool",
		Offering: ref("p5.48xlarge", "us-east-1b", api.Spot),
		Fallbacks: []api.Offering{
			ref("p4d.24xlarge", "us-east-1c", api.Spot),
			ref("g6e.12xlarge", "us-east-1c", api.Spot),
		},
	}
}

func TestCreateFleetRequestBody(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances", noInstances())
	srv.Enqueue("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.partial-ice.xml"))
	p, _ := newTestProvider(t, srv)
	if _, err := p.Create(context.Background(), gpuRequest()); err != nil {
		t.Fatalf("Create: %v", err)
	}

	lookup := srv.Requests("DescribeInstances")[0].EC2Filters()
	wantLookup := map[string][]string{
		"tag:tiler.dev/launch-id": {"gpu-pool-abcde-1"}, "tag:tiler.dev/cluster": {testCluster},
	}
	if diff := cmp.Diff(wantLookup, lookup); diff != "" {
		t.Errorf("launch-ID lookup filters (-want +got):\n%s", diff)
	}

	form := srv.Requests("CreateFleet")[0].Form
	token := ClientToken("gpu-pool-abcde-1", api.Spot)
	want := map[string]string{
		"Type": "instant", "ClientToken": token,
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId": testTemplate,
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version":          "1",
		"LaunchTemplateConfigs.1.Overrides.1.InstanceType":                     "p5.48xlarge",
		"LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone":                 "us-east-1b",
		"LaunchTemplateConfigs.1.Overrides.1.SubnetId":                         subnetB,
		"LaunchTemplateConfigs.1.Overrides.2.InstanceType":                     "p4d.24xlarge",
		"LaunchTemplateConfigs.1.Overrides.2.AvailabilityZone":                 "us-east-1c",
		"LaunchTemplateConfigs.1.Overrides.2.SubnetId":                         subnetC,
		"LaunchTemplateConfigs.1.Overrides.3.InstanceType":                     "g6e.12xlarge",
		"LaunchTemplateConfigs.1.Overrides.3.AvailabilityZone":                 "us-east-1c",
		"LaunchTemplateConfigs.1.Overrides.3.SubnetId":                         subnetC,
		"SpotOptions.AllocationStrategy":                                       "price-capacity-optimized",
		"TargetCapacitySpecification.DefaultTargetCapacityType":                "spot",
		"TargetCapacitySpecification.TotalTargetCapacity":                      "1",
		"TagSpecification.1.ResourceType":                                      "instance",
		"TagSpecification.2.ResourceType":                                      "volume",
		"OnDemandOptions.AllocationStrategy":                                   "",
		"LaunchTemplateConfigs.1.Overrides.4.InstanceType":                     "",
	}
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(token) > 64 || !regexp.MustCompile(`^[A-Za-z0-9-]+$`).MatchString(token) {
		t.Errorf("client token %q is longer than 64 or has characters EC2 refuses", token)
	}
	tags := map[string]string{
		"Name": "gpu-pool-abcde", "tiler.dev/cluster": testCluster, "tiler.dev/launch-id": "gpu-pool-abcde-1",
		"tiler.dev/node-name": "gpu-pool-abcde", "tiler.dev/pool": "gpu-pool", "tiler.dev/launch-settings": p.settings,
	}
	wantSpecs := map[string]map[string]string{"instance": tags, "volume": tags}
	if diff := cmp.Diff(wantSpecs, srv.Requests("CreateFleet")[0].TagSpecifications()); diff != "" {
		t.Errorf("tag specifications (-want +got):\n%s", diff)
	}
}

func TestCreatePartialSuccessReportsFailedOfferings(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances", noInstances())
	srv.Enqueue("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.partial-ice.xml"))
	p, _ := newTestProvider(t, srv)
	p.SetPrices(&catalog.Catalog{Types: []catalog.InstanceType{{Name: "g6e.12xlarge",
		Offerings: []catalog.ZonePrice{{Zone: "us-east-1c", CapacityType: api.Spot, PricePerHour: 4.2}}}}})

	inst, failed, err := p.CreateWithReport(context.Background(), gpuRequest())
	if err != nil {
		t.Fatalf("CreateWithReport: %v", err)
	}
	wantInst := &cloudprovider.Instance{
		ID: "i-0fedcba9876543210", LaunchID: "gpu-pool-abcde-1", NodeName: "gpu-pool-abcde", Pool: "gpu-pool",
		Offering: ref("g6e.12xlarge", "us-east-1c", api.Spot), State: cloudprovider.StatePending, PricePerHour: 4.2,
		LaunchedAt: testNow, Tags: p.tags(gpuRequest(), p.settings), Settings: p.settings + ":" + subnetC,
	}
	if diff := cmp.Diff(wantInst, inst); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}
	wantFailed := []FailedOffering{
		{Offering: ref("p4d.24xlarge", "us-east-1c", api.Spot), Code: "UnfulfillableCapacity", Kind: FailureCapacity,
			Message: "Unable to fulfill capacity due to your request configuration. Please adjust your request and try again."},
		{Offering: ref("p5.48xlarge", "us-east-1b", api.Spot), Code: "InsufficientInstanceCapacity", Kind: FailureCapacity,
			Message: "There is no Spot capacity available that matches your request."},
	}
	if diff := cmp.Diff(wantFailed, failed); diff != "" {
		t.Errorf("failed offerings (-want +got):\n%s", diff)
	}
	var cached []api.Offering
	for _, e := range p.Unavailable().List() {
		cached = append(cached, e.Offering)
	}
	if diff := cmp.Diff([]api.Offering{wantFailed[0].Offering, wantFailed[1].Offering}, cached); diff != "" {
		t.Errorf("unavailable cache (-want +got):\n%s", diff)
	}
}

// TestCreateOnDemandFleet: an on-demand node and its on-demand fallbacks (the plan's, cheapest
// first) are one lowest-price fleet with an override per (type, subnet, zone) in the request's
// order; the instance is the offering EC2 launched, here the second fallback.
func TestCreateOnDemandFleet(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances", noInstances())
	pool := awstest.FleetPool{Type: "g6.xlarge", SubnetID: subnetC, Zone: "us-east-1c", Lifecycle: "on-demand"}
	srv.Enqueue("CreateFleet", awstest.CreateFleet([]awstest.FleetLaunch{{Pool: pool, InstanceIDs: []string{"i-0od"}}}, nil))
	p, _ := newTestProvider(t, srv)
	req := cloudprovider.LaunchRequest{LaunchID: "l-od", Offering: ref("g5.xlarge", "us-east-1a", api.OnDemand),
		Fallbacks: []api.Offering{ref("g5.xlarge", "us-east-1b", api.OnDemand), ref("g6.xlarge", "us-east-1c", api.OnDemand)}}
	inst, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.ID != "i-0od" || inst.Offering != req.Fallbacks[1] {
		t.Errorf("instance = %+v, want %v", inst, req.Fallbacks[1])
	}
	if n := len(srv.Requests("CreateFleet")); n != 1 {
		t.Fatalf("%d CreateFleet calls, want one fleet for the on-demand offerings", n)
	}
	form := srv.Requests("CreateFleet")[0].Form
	for k, v := range map[string]string{
		"OnDemandOptions.AllocationStrategy":                    "lowest-price",
		"TargetCapacitySpecification.DefaultTargetCapacityType": "on-demand",
		"TargetCapacitySpecification.TotalTargetCapacity":       "1",
		"SpotOptions.AllocationStrategy":                        "",
		"ClientToken":                                           ClientToken("l-od", api.OnDemand),
		"LaunchTemplateConfigs.1.Overrides.1.InstanceType":      "g5.xlarge",
		"LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone":  "us-east-1a",
		"LaunchTemplateConfigs.1.Overrides.1.SubnetId":          subnetA,
		"LaunchTemplateConfigs.1.Overrides.2.InstanceType":      "g5.xlarge",
		"LaunchTemplateConfigs.1.Overrides.2.AvailabilityZone":  "us-east-1b",
		"LaunchTemplateConfigs.1.Overrides.2.SubnetId":          subnetB,
		"LaunchTemplateConfigs.1.Overrides.3.InstanceType":      "g6.xlarge",
		"LaunchTemplateConfigs.1.Overrides.3.AvailabilityZone":  "us-east-1c",
		"LaunchTemplateConfigs.1.Overrides.3.SubnetId":          subnetC,
		"LaunchTemplateConfigs.1.Overrides.4.InstanceType":      "",
	} {
		if got := form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestClientToken(t *testing.T) {
	long := string(make([]byte, 300))
	tokens := map[string]bool{}
	for _, id := range []string{"a", "b", "node/with spaces and ünïcode", long} {
		for _, ct := range []api.CapacityType{api.Spot, api.OnDemand} {
			tok := ClientToken(id, ct)
			if tok != ClientToken(id, ct) {
				t.Errorf("ClientToken(%q, %s) is not deterministic", id, ct)
			}
			if len(tok) > 64 || !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(tok) {
				t.Errorf("ClientToken(%q, %s) = %q: too long or bad characters", id, ct, tok)
			}
			if tokens[tok] {
				t.Errorf("ClientToken(%q, %s) = %q collides", id, ct, tok)
			}
			tokens[tok] = true
		}
	}
}

func TestCreateRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  cloudprovider.LaunchRequest
		want string
	}{
		{"no launch ID", cloudprovider.LaunchRequest{Offering: ref("g5.xlarge", "us-east-1a", api.Spot)}, "launchID is empty"},
		{"other cluster", cloudprovider.LaunchRequest{LaunchID: "x", Cluster: "prod", Offering: ref("g5.xlarge", "us-east-1a", api.Spot)},
			`cluster "prod" is not this provider's cluster`},
		{"bad capacity type", cloudprovider.LaunchRequest{LaunchID: "x", Offering: ref("g5.xlarge", "us-east-1a", "reserved")},
			"offering 0 (g5.xlarge/us-east-1a/reserved)"},
		{"no zone", cloudprovider.LaunchRequest{LaunchID: "x", Offering: ref("g5.xlarge", "us-east-1a", api.Spot),
			Fallbacks: []api.Offering{ref("g5.xlarge", "", api.Spot)}}, "offering 1 (g5.xlarge//spot)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			p, _ := newTestProvider(t, srv)
			_, err := p.Create(context.Background(), tt.req)
			if err == nil || !regexp.MustCompile(regexp.QuoteMeta(tt.want)).MatchString(err.Error()) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if n := len(srv.Requests("")); n != 0 {
				t.Errorf("%d calls reached EC2 for a bad request", n)
			}
		})
	}
}

func TestCreateWithoutSubnetForAnyZone(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstances", noInstances())
	p, _ := newTestProvider(t, srv)
	_, err := p.Create(context.Background(), cloudprovider.LaunchRequest{LaunchID: "x", Offering: ref("g5.xlarge", "us-west-2a", api.Spot)})
	if err == nil || cloudprovider.IsInsufficientCapacity(err) ||
		!regexp.MustCompile(`launching x: no subnet is configured for zones \[us-west-2a\]`).MatchString(err.Error()) {
		t.Fatalf("error = %v", err)
	}
	if n := len(srv.Requests("CreateFleet")); n != 0 {
		t.Errorf("CreateFleet called %d times", n)
	}
}

// TestCreateFleetGPUTags: the request's GPU configuration reaches the instance (and its volumes)
// as tags for the launch template's bootstrap, among them the pool's renameShared.
func TestCreateFleetGPUTags(t *testing.T) {
	for _, tt := range []struct {
		name string
		gpu  api.GPUConfig
		want map[string]string
	}{
		{"time-slicing renamed", api.GPUConfig{Sharing: "time-slicing", Replicas: 4, RenameShared: true},
			map[string]string{api.TagGPUSharing: "time-slicing", api.TagGPUReplicas: "4", api.TagGPURenameShared: "true"}},
		{"time-slicing", api.GPUConfig{Sharing: "time-slicing", Replicas: 2},
			map[string]string{api.TagGPUSharing: "time-slicing", api.TagGPUReplicas: "2"}},
		{"mig", api.GPUConfig{Sharing: "mig", MIGStrategy: "mixed", MIGConfig: "tiler-1g.5gb-8gpu-mixed",
			MIGLayout: [][]string{{"1g.5gb"}}},
			map[string]string{api.TagGPUSharing: "mig", api.TagMIGStrategy: "mixed", api.TagMIGConfig: "tiler-1g.5gb-8gpu-mixed"}},
		{"consumable memory", api.GPUConfig{Sharing: "exclusive", ConsumableMemory: true},
			map[string]string{api.TagGPUSharing: "exclusive", api.TagGPUConsumableMemory: "true"}},
		{"dra driver", api.GPUConfig{Sharing: "exclusive", DRA: true},
			map[string]string{api.TagGPUSharing: "exclusive", api.TagGPUDRA: "true"}},
		{"none", api.GPUConfig{}, map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("DescribeInstances", noInstances())
			srv.Enqueue("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.success.xml"))
			p, _ := newTestProvider(t, srv)
			req := cloudprovider.LaunchRequest{LaunchID: "l-gpu", NodeName: "gpu-node", Pool: "shared",
				Offering: ref("g6.xlarge", "us-east-1b", api.Spot), GPU: tt.gpu}
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatalf("Create: %v", err)
			}
			specs := srv.Requests("CreateFleet")[0].TagSpecifications()
			for _, rt := range []string{"instance", "volume"} {
				got := map[string]string{}
				for k, v := range specs[rt] {
					if strings.HasPrefix(k, "tiler.dev/gpu-") || strings.HasPrefix(k, "tiler.dev/mig-") {
						got[k] = v
					}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s GPU tags (-want +got):\n%s", rt, diff)
				}
			}
		})
	}
}
