package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

func TestNewRejectsBadConfig(t *testing.T) {
	cat, _ := catalog.Embedded("aws-us-east-1")
	good := DefaultConfig(cat, "c", t.TempDir()+"/s.json")
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no catalog", func(c *Config) { c.Catalog = nil }, "Catalog is required"},
		{"no cluster", func(c *Config) { c.ClusterName = "" }, "ClusterName is required"},
		{"no state", func(c *Config) { c.StatePath = "" }, "StatePath is required"},
		{"negative boot", func(c *Config) { c.BootDelay = -1 }, "BootDelay must not be negative"},
		{"negative gpus", func(c *Config) { c.MaxGPUs = -1 }, "MaxGPUs must not be negative"},
		{"negative slow boot", func(c *Config) { c.Faults.SlowBoots = []SlowBoot{{BootDelay: -1}} }, "Faults.SlowBoots[0].BootDelay"},
		{"API failure without a code", func(c *Config) { c.Faults.APIFailures = []APIFailure{{Call: CallCreate}} }, "Faults.APIFailures[0]"},
		{"List failing after a launch", func(c *Config) {
			c.Faults.APIFailures = []APIFailure{{Call: CallList, Code: CodeInternal, AfterLaunch: true}}
		}, "Faults.APIFailures[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.change(&cfg)
			_, err := New(cfg, fake.NewClientset(), clocktesting.NewFakeClock(t0))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A state file of another format version is refused at New.
	cfg := good
	if err := os.WriteFile(cfg.StatePath, []byte(`{"version": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, fake.NewClientset(), clocktesting.NewFakeClock(t0)); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("New on a version-99 file: got %v", err)
	}
}

// TestCreateIsRecordedAndIdempotent checks that Create records the instance before returning,
// that a repeat of the launch ID (also from a restarted Provider) returns it without a second
// launch, and that List, Get and the event log agree.
func TestCreateIsRecordedAndIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	inst := e.create(gpuRequest("launch-1", "gpu-node-1"))
	want := &cloudprovider.Instance{
		ID: "sim-000001", LaunchID: "launch-1", NodeName: "gpu-node-1", Pool: "gpu", Offering: l4Spot1a,
		State: StatePending, PricePerHour: 0.4104, LaunchedAt: t0,
		Tags: map[string]string{api.TagLaunchID: "launch-1", api.TagCluster: testCluster,
			api.TagPool: "gpu", api.TagNodeName: "gpu-node-1"},
	}
	if diff := cmp.Diff(want, inst); diff != "" {
		t.Fatalf("Create (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(e.cfg.StatePath)
	if err != nil || !strings.Contains(string(b), `"launchID": "launch-1"`) {
		t.Fatalf("state file after Create: %v\n%s", err, b)
	}

	again := e.create(gpuRequest("launch-1", "gpu-node-1"))
	restarted := e.restart()
	fromRestart, err := restarted.Create(ctx, gpuRequest("launch-1", "gpu-node-1"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != inst.ID || fromRestart.ID != inst.ID {
		t.Fatalf("repeated launch IDs gave instances %s and %s, want %s", again.ID, fromRestart.ID, inst.ID)
	}
	if n := CountEvents(e.events(), EventLaunched); n != 1 {
		t.Fatalf("%d launches logged, want 1", n)
	}

	second := e.create(gpuRequest("launch-2", "gpu-node-2"))
	list, err := restarted.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "sim-000001" || list[1].ID != second.ID || second.ID != "sim-000002" {
		t.Fatalf("List = %+v, want sim-000001 and sim-000002", list)
	}
	if got, err := restarted.Get(ctx, "sim-000002"); err != nil || got.LaunchID != "launch-2" {
		t.Fatalf("Get sim-000002 = %+v, %v", got, err)
	}
	if _, err := restarted.Get(ctx, "sim-999999"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Get of an unknown ID: got %v, want NotFoundError", err)
	}

	// Another cluster on the same file sees none of it, but shares the instance counter.
	other := e.cfg
	other.ClusterName = "other"
	po, err := New(other, e.kube, e.clk)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := po.List(ctx); len(list) != 0 {
		t.Fatalf("other cluster lists %+v", list)
	}
	if _, err := po.Get(ctx, "sim-000001"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("other cluster Get: got %v, want NotFoundError", err)
	}
	req := gpuRequest("launch-1", "gpu-node-1")
	req.Cluster = "other"
	if inst, err := po.Create(ctx, req); err != nil || inst.ID != "sim-000003" {
		t.Fatalf("other cluster Create = %+v, %v; want sim-000003", inst, err)
	}
}

// TestCreateFallsBackOnInsufficientCapacity: the request's offerings are tried in order; when all
// are unavailable the typed error names each of them.
func TestCreateFallsBackOnInsufficientCapacity(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.Faults.InsufficientCapacity = []api.Offering{l4Spot1a} })
	req := gpuRequest("launch-1", "gpu-node-1")
	req.Fallbacks = []api.Offering{l4OD1b, a100OD1c}
	// The node launched as a fallback gets that fallback's labels (the planner's, for the type,
	// zone and capacity type launched), not those planned for the request's offering.
	req.Labels = map[string]string{"team": "ml", api.LabelCapacityType: "spot"}
	req.FallbackLabels = map[api.Offering]map[string]string{
		l4OD1b: {"team": "ml", api.LabelCapacityType: "on-demand"}, a100OD1c: {"team": "ml", "tiler.dev/gpu-model": "A100"}}
	if inst := e.create(req); inst.Offering != l4OD1b || inst.PricePerHour != 0.8048 {
		t.Fatalf("launched %+v at %v, want the first fallback %+v", inst.Offering, inst.PricePerHour, l4OD1b)
	}
	recs, err := e.p.ownRecords()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %v, %d", err, len(recs))
	}
	if diff := cmp.Diff(req.FallbackLabels[l4OD1b], recs[0].Labels); diff != "" {
		t.Errorf("labels of the node launched as %v (-want +got):\n%s", l4OD1b, diff)
	}

	// A pattern with only the type makes every zone and capacity type of it unavailable.
	e.p.InjectInsufficientCapacity(api.Offering{InstanceType: "g6.xlarge"}, a100OD1c)
	req = gpuRequest("launch-2", "gpu-node-2")
	req.Fallbacks = []api.Offering{l4OD1b, a100OD1c}
	_, err = e.p.Create(context.Background(), req)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("Create: got %v, want an InsufficientCapacityError", err)
	}
	if diff := cmp.Diff([]api.Offering{l4Spot1a, l4OD1b, a100OD1c}, ice.Offerings); diff != "" {
		t.Fatalf("unavailable offerings (-want +got):\n%s", diff)
	}
	if ice.Code != CodeInsufficientCapacity || !strings.Contains(err.Error(), "g6.xlarge/us-east-1a/spot") {
		t.Fatalf("error %q (code %s) does not name the offering", err, ice.Code)
	}

	e.p.ClearInsufficientCapacity()
	if inst := e.create(req); inst.Offering != l4Spot1a {
		t.Fatalf("after clearing the fault launched %+v", inst.Offering)
	}
	if n := CountEvents(e.events(), EventLaunched); n != 2 {
		t.Fatalf("%d launches logged, want 2", n)
	}
}

func TestCreateQuota(t *testing.T) {
	// p4d.24xlarge has 8 GPUs and g6.xlarge 1: a 9-GPU quota holds one of each.
	e := newEnv(t, nil, func(c *Config) { c.MaxGPUs = 9; c.MaxInstances = 3 })
	e.create(gpuRequest("a", "node-a"))
	big := gpuRequest("b", "node-b")
	big.Offering = a100OD1c
	e.create(big)
	_, err := e.p.Create(context.Background(), gpuRequest("c", "node-c"))
	if !cloudprovider.IsQuota(err) || !strings.Contains(err.Error(), CodeGPULimit) {
		t.Fatalf("10th GPU: got %v, want a %s QuotaError", err, CodeGPULimit)
	}
	cpu := gpuRequest("c", "node-c")
	cpu.Offering = cpuOD1a
	e.create(cpu) // no GPUs, so only the instance quota applies
	cpu.LaunchID, cpu.NodeName = "d", "node-d"
	if _, err := e.p.Create(context.Background(), cpu); !cloudprovider.IsQuota(err) || !strings.Contains(err.Error(), CodeInstanceLimit) {
		t.Fatalf("4th instance: got %v, want a %s QuotaError", err, CodeInstanceLimit)
	}

	e.p.InjectQuotaError(&cloudprovider.QuotaError{Code: "VcpuLimitExceeded", Message: "injected"})
	_, err = e.p.Create(context.Background(), gpuRequest("launch-1", "gpu-node-1"))
	var q *cloudprovider.QuotaError
	if !errors.As(err, &q) || q.Code != "VcpuLimitExceeded" {
		t.Fatalf("injected quota fault: got %v", err)
	}
	if n := CountEvents(e.events(), EventLaunched); n != 3 {
		t.Fatalf("%d launches logged, want 3", n)
	}
}

func TestCreateRejectsBadRequests(t *testing.T) {
	e := newEnv(t, nil)
	e.create(gpuRequest("taken", "taken-node"))
	for _, tc := range []struct {
		name   string
		change func(*cloudprovider.LaunchRequest)
		want   string
	}{
		{"no launch ID", func(r *cloudprovider.LaunchRequest) { r.LaunchID = "" }, "LaunchID is empty"},
		{"no node name", func(r *cloudprovider.LaunchRequest) { r.NodeName = "" }, "NodeName is empty"},
		{"bad node name", func(r *cloudprovider.LaunchRequest) { r.NodeName = "Bad_Name" }, `NodeName "Bad_Name"`},
		{"bad label", func(r *cloudprovider.LaunchRequest) { r.Labels["team"] = "not ok" }, `label team="not ok"`},
		{"other cluster", func(r *cloudprovider.LaunchRequest) { r.Cluster = "x" }, `Cluster "x"`},
		{"unknown type", func(r *cloudprovider.LaunchRequest) { r.Offering.InstanceType = "nope" }, `Offering: instance type "nope"`},
		{"unknown zone", func(r *cloudprovider.LaunchRequest) {
			r.Fallbacks = []api.Offering{{InstanceType: "g6.xlarge", Zone: "eu-west-1a", CapacityType: api.Spot}}
		}, `Fallbacks[0]: instance type g6.xlarge has no spot offering in zone "eu-west-1a"`},
		{"node name taken", func(r *cloudprovider.LaunchRequest) { r.NodeName = "taken-node" }, "taken by instance sim-000001"},
		{"bad sharing", func(r *cloudprovider.LaunchRequest) { r.GPU.Sharing = "magic" }, `Sharing "magic"`},
		{"no replicas", func(r *cloudprovider.LaunchRequest) { r.GPU.Sharing = "time-slicing" }, "Replicas is 0"},
		{"layout too long", func(r *cloudprovider.LaunchRequest) {
			r.GPU = api.GPUConfig{Sharing: "mig", MIGLayout: [][]string{{"1g.6gb"}, {"1g.6gb"}}}
		}, "MIGLayout has 2 GPUs, the type has 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := gpuRequest("new", "new-node")
			tc.change(&req)
			_, err := e.p.Create(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if n := CountEvents(e.events(), EventLaunched); n != 1 {
		t.Fatalf("%d launches logged, want 1", n)
	}
}

func TestReadEvents(t *testing.T) {
	path := t.TempDir() + "/events.jsonl"
	if events, err := ReadEvents(path); err != nil || len(events) != 0 {
		t.Fatalf("missing log: %v, %v", events, err)
	}
	line := `{"time":"2026-03-01T12:00:00Z","event":"launched","cluster":"c","instanceID":"sim-000001"}`
	if err := os.WriteFile(path, []byte(fmt.Sprintf("%s\n\n%s\nnot json\n", line, line)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEvents(path); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("ReadEvents of a bad line: got %v, want an error naming line 4", err)
	}
}

// TestCreateAPIFailures: injected API failures fail one call each, in order. A failure before the
// launch leaves nothing behind; one after it (a lost answer) leaves the instance, which a retry
// with the same launch ID returns without a second launch. List fails once, then lists again.
func TestCreateAPIFailures(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.p.InjectAPIFailures(
		APIFailure{Call: CallCreate, Code: CodeThrottled, Message: "rate exceeded"},
		APIFailure{Call: CallList, Code: CodeInternal, Message: "list failed"},
		APIFailure{Call: CallCreate, Code: CodeInternal, Message: "answer lost", AfterLaunch: true},
	)
	req := gpuRequest("a", "node-a")
	_, err := e.p.Create(ctx, req)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != CodeThrottled || cloudprovider.IsQuota(err) || cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("first Create: got %v, want a %s APIError that is no refusal", err, CodeThrottled)
	}
	if _, err := e.p.List(ctx); !errors.As(err, &apiErr) || apiErr.Code != CodeInternal {
		t.Fatalf("first List: got %v, want the injected %s", err, CodeInternal)
	}
	if insts, err := e.p.List(ctx); err != nil || len(insts) != 0 {
		t.Fatalf("after a throttled Create: %d instances, %v; want none", len(insts), err)
	}
	if _, err := e.p.Create(ctx, req); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "answer lost") {
		t.Fatalf("second Create: got %v, want the injected lost answer", err)
	}
	insts, err := e.p.List(ctx)
	if err != nil || len(insts) != 1 || insts[0].LaunchID != "a" {
		t.Fatalf("after a lost answer: %v, %v; want the instance of launch a", insts, err)
	}
	again := e.create(req)
	if again.ID != insts[0].ID {
		t.Errorf("the retry returned %s, want the instance launched before, %s", again.ID, insts[0].ID)
	}
	if n := CountEvents(e.events(), EventLaunched); n != 1 {
		t.Errorf("%d launches logged, want 1", n)
	}
}

// TestSetImage: instances boot from the image configured at their launch and keep it, across a
// restarted Provider too; ImageFor names the image of the launches from now on.
func TestSetImage(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.Image = "sim-image-1" })
	ctx := context.Background()
	before := e.create(gpuRequest("launch-1", "gpu-node-1"))
	e.p.SetImage("sim-image-2")
	after := e.create(gpuRequest("launch-2", "gpu-node-2"))
	if before.Image != "sim-image-1" || after.Image != "sim-image-2" || imageFor(t, e.p) != "sim-image-2" {
		t.Fatalf("images %q then %q, ImageFor %q; want sim-image-1, sim-image-2, sim-image-2", before.Image, after.Image, imageFor(t, e.p))
	}
	restarted, err := New(e.cfg, fake.NewClientset(), clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := restarted.Get(ctx, before.ID)
	if err != nil || got.Image != "sim-image-1" {
		t.Fatalf("Get after a restart = %+v, %v; want the image it booted, sim-image-1", got, err)
	}
	if img := imageFor(t, restarted); img != "sim-image-1" {
		t.Errorf("a restarted Provider's ImageFor = %q, want its Config.Image", img)
	}
}

// imageFor is the provider's ImageFor for a node without GPUs, failing the test on an error.
func imageFor(t *testing.T, p *Provider) string {
	t.Helper()
	img, err := p.ImageFor(context.Background(), api.GPUConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}
