package simulator_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

const migPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: mig
  instanceFamilies: [p4d]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: mig, migStrategy: mixed}
`

// migScenario is a p4d.24xlarge (8 × A100-40GB) in all-1g.5gb whose running pods use usedSlices
// of its 56 1g.5gb slices, and pending pods asking for one 3g.20gb slice each.
func migScenario(t *testing.T, usedSlices, pending3g int) (*snapshot.Snapshot, *catalog.Catalog, *policy.CostPolicy) {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(migPolicy))
	if err != nil {
		t.Fatal(err)
	}
	n := simtest.ManagedNode(cat, "a100", "mig", "p4d.24xlarge", "us-east-1a", api.OnDemand, dOld)
	n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
	n.Labels[api.LabelMIGConfig] = "all-1g.5gb"
	n.Labels[api.LabelMIGStrategy] = "mixed"
	n.Labels[api.LabelMIGConfigState] = api.MIGConfigSuccess
	n.Status.Allocatable = n.Status.Allocatable.DeepCopy()
	delete(n.Status.Allocatable, api.ResourceGPU)
	n.Status.Allocatable["nvidia.com/mig-1g.5gb"] = resource.MustParse("56")
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{n}}
	for i := 0; usedSlices > 0; i++ {
		k := min(usedSlices, 7)
		usedSlices -= k
		snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprint("small-", i)).CPU("1").Mem("4Gi").Req("nvidia.com/mig-1g.5gb", fmt.Sprint(k)).
			Tolerate("nvidia.com/gpu").Controlled("ReplicaSet", "small").On("a100").Obj())
	}
	for i := 0; i < pending3g; i++ {
		snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprint("mid-", i)).CPU("2").Mem("8Gi").Req("nvidia.com/mig-3g.20gb", "1").
			Tolerate("nvidia.com/gpu").Controlled("ReplicaSet", "mid").Obj())
	}
	return snap, cat, pol
}

// simulateChecked simulates, checks the plan with the independent checker and binds it.
func simulateChecked(t *testing.T, snap *snapshot.Snapshot, cat *catalog.Catalog, pol *policy.CostPolicy, opts simulator.Options) (*api.Plan, *snapshot.Snapshot) {
	t.Helper()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Errorf("checker: %s", v)
	}
	bound, err := simtest.Bind(snap, plan, cat, dNow)
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	return plan, bound
}

// TestRelayoutBeatsBuying: seven of the eight GPUs are in use, the eighth is idle in all-1g.5gb;
// two pending pods need 3g.20gb. Re-partitioning the idle GPU as all-3g.20gb (two 3g.20gb) costs
// nothing and beats buying a p4d.24xlarge (spot, $7.246/h): no new node, the node's new config names the layouts, the
// pods go there, and a second decision on the bound result has nothing left to do.
func TestRelayoutBeatsBuying(t *testing.T) {
	snap, cat, pol := migScenario(t, 49, 2)
	plan, bound := simulateChecked(t, snap, cat, pol, simulator.Options{Seed: "relayout", MIGRelayout: true})
	if len(plan.NewNodes) != 0 || plan.CostPerHour != 0 || len(plan.Unschedulable) != 0 {
		t.Fatalf("new nodes %+v, cost %v, unschedulable %+v", plan.NewNodes, plan.CostPerHour, plan.Unschedulable)
	}
	if len(plan.Relayouts) != 1 {
		t.Fatalf("relayouts %+v", plan.Relayouts)
	}
	r := plan.Relayouts[0]
	if r.Node != "a100" || r.Pool != "mig" || fmt.Sprint(r.GPUs) != "[7]" || strings.Join(r.Layout[7], ",") != "3g.20gb,3g.20gb" ||
		strings.Join(r.Layout[0], ",") != "1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb" {
		t.Errorf("relayout %+v", r)
	}
	// Without MIGRelayout (a caller that does not apply re-layouts) the plan buys.
	if p, _ := simulateChecked(t, snap, cat, pol, simulator.Options{Seed: "relayout"}); len(p.Relayouts) != 0 || len(p.NewNodes) != 1 {
		t.Errorf("without MIGRelayout: relayouts %+v, new nodes %+v", p.Relayouts, p.NewNodes)
	}
	if r.MIGConfig != "tiler-7xall-1g.5gb_all-3g.20gb" || !strings.Contains(r.MigPartedConfig, r.MIGConfig+":") {
		t.Errorf("config %q:\n%s", r.MIGConfig, r.MigPartedConfig)
	}
	a1, a3 := r.Allocatable["nvidia.com/mig-1g.5gb"], r.Allocatable["nvidia.com/mig-3g.20gb"]
	if a1.Value() != 49 || a3.Value() != 2 || strings.Join(r.Pods, ",") != "default/mid-0,default/mid-1" {
		t.Errorf("allocatable %v, pods %v", r.Allocatable, r.Pods)
	}
	if i := slices.IndexFunc(plan.ExistingNodes, func(e api.ExistingNode) bool { return e.Name == "a100" }); i < 0 || len(plan.ExistingNodes[i].Pods) != 2 {
		t.Errorf("existing nodes %+v", plan.ExistingNodes)
	}
	again, _ := simulateChecked(t, bound, cat, pol, simulator.Options{Seed: "relayout-2", MIGRelayout: true})
	if len(again.NewNodes) != 0 || len(again.Relayouts) != 0 {
		t.Errorf("after binding: %+v", again)
	}
	// While the change is under way (the MIG manager has withdrawn the slices), a decision counts
	// the node with its new layout and neither buys nor re-lays-out again.
	during := *snap
	n := snap.Nodes[0].DeepCopy()
	n.Labels[api.LabelMIGConfig], n.Labels[api.LabelMIGConfigState] = r.MIGConfig, api.MIGConfigPending
	delete(n.Status.Allocatable, "nvidia.com/mig-1g.5gb")
	during.Nodes = []*corev1.Node{n}
	p, err := simulator.Simulate(simulator.Input{Snapshot: &during, Catalog: cat, Policy: pol,
		Options: simulator.Options{Seed: "during", MIGRelayout: true, Relayouting: plan.Relayouts}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.NewNodes) != 0 || len(p.Relayouts) != 0 || len(p.Unschedulable) != 0 || len(p.ExistingNodes) != 1 {
		t.Errorf("during the change: %+v", p)
	}
	// The plan holds once the new slices are published.
	published := during
	n = n.DeepCopy()
	n.Status.Allocatable = r.Allocatable
	published.Nodes = []*corev1.Node{n}
	for _, v := range simtest.Check(&published, p) {
		t.Errorf("checker, once published: %s", v)
	}
}

// TestRelayoutBusyGPUBuys: one more slice in use and no GPU is idle: the pods need a new node.
func TestRelayoutBusyGPUBuys(t *testing.T) {
	snap, cat, pol := migScenario(t, 50, 2)
	plan, _ := simulateChecked(t, snap, cat, pol, simulator.Options{Seed: "busy", MIGRelayout: true})
	if len(plan.Relayouts) != 0 || len(plan.NewNodes) != 1 || plan.NewNodes[0].GPU == nil || plan.NewNodes[0].GPU.Sharing != api.MIG {
		t.Errorf("relayouts %+v, new nodes %+v", plan.Relayouts, plan.NewNodes)
	}
}

// TestRelayoutNotNeeded: pending pods that free slices serve, or that cannot run on the node
// (no toleration of its GPU taint), cause no re-layout.
func TestRelayoutNotNeeded(t *testing.T) {
	snap, cat, pol := migScenario(t, 40, 0)
	snap.Pods = append(snap.Pods, simtest.Pod("tiny").CPU("1").Mem("1Gi").Req("nvidia.com/mig-1g.5gb", "3").
		Tolerate("nvidia.com/gpu").Controlled("ReplicaSet", "tiny").Obj())
	plan, _ := simulateChecked(t, snap, cat, pol, simulator.Options{Seed: "free", MIGRelayout: true})
	if len(plan.Relayouts) != 0 || len(plan.NewNodes) != 0 {
		t.Errorf("free slices: relayouts %+v, new nodes %+v", plan.Relayouts, plan.NewNodes)
	}
	snap, cat, pol = migScenario(t, 0, 0)
	snap.Pods = append(snap.Pods, simtest.Pod("intolerant").CPU("1").Mem("1Gi").Req("nvidia.com/mig-3g.20gb", "1").
		Controlled("ReplicaSet", "intolerant").Obj())
	plan, _ = simulateChecked(t, snap, cat, pol, simulator.Options{Seed: "taint", MIGRelayout: true})
	if len(plan.Relayouts) != 0 {
		t.Errorf("intolerant pod: relayouts %+v", plan.Relayouts)
	}
}
