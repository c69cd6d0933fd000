package simulator_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// teamPolicy has a CPU pool, an on-demand GPU pool and a spot GPU pool, and the given teams.
func teamPolicy(t *testing.T, teams ...policy.Team) *policy.CostPolicy {
	t.Helper()
	gpuOnly := []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpExists}}
	p := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{
		{Name: "general", Requirements: []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		{Name: "gpu-od", CapacityTypes: []api.CapacityType{api.OnDemand}, Requirements: gpuOnly},
		{Name: "gpu-spot", CapacityTypes: []api.CapacityType{api.Spot}, Requirements: gpuOnly},
	}, Teams: teams}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func intp(i int) *int { return &i }

// simulateChecked simulates and fails the test when the independent checker finds a violation.
func teamSimulate(t *testing.T, snap *snapshot.Snapshot, cat *catalog.Catalog, pol *policy.CostPolicy) *api.Plan {
	t.Helper()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Error(v)
	}
	return plan
}

// placement maps every pod of the plan to its node; reasons maps unschedulable pods to theirs.
func teamPlacement(plan *api.Plan) (nodes map[string]string, reasons map[string]api.UnschedulablePod) {
	nodes, reasons = map[string]string{}, map[string]api.UnschedulablePod{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			nodes[p] = n.Name
		}
	}
	for _, n := range plan.ExistingNodes {
		for _, p := range n.Pods {
			nodes[p] = n.Name
		}
	}
	for _, u := range plan.Unschedulable {
		reasons[u.Pod] = u
	}
	return nodes, reasons
}

func teamCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestTeamGPULimit: team research may hold 3 GPUs and runs one; of its three pending 1-GPU pods
// the two of higher priority are planned and the third is reported TeamLimitExceeded naming the
// team and the limit, not bought for. Another namespace's pod is bought for as usual.
func TestTeamGPULimit(t *testing.T) {
	cat := teamCatalog(t)
	pol := teamPolicy(t, policy.Team{Name: "research", Namespaces: []string{"lab"}, Limits: policy.TeamLimits{GPUs: intp(3)}})
	node := simtest.ManagedNode(cat, "g6-1", "gpu-od", "g6.xlarge", "us-east-1a", api.OnDemand, dOld)
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{
		simtest.Pod("running").Namespace("lab").CPU("1").GPU(1).On("g6-1").Obj(),
		simtest.Pod("low").Namespace("lab").CPU("1").GPU(1).Priority(1).Obj(),
		simtest.Pod("high").Namespace("lab").CPU("1").GPU(1).Priority(10).Obj(),
		simtest.Pod("mid").Namespace("lab").CPU("1").GPU(1).Priority(5).Obj(),
		simtest.Pod("chat").Namespace("chat").CPU("1").GPU(1).Obj(),
	}}
	plan := teamSimulate(t, snap, cat, pol)
	nodes, reasons := teamPlacement(plan)
	for _, p := range []string{"lab/high", "lab/mid", "chat/chat"} {
		if nodes[p] == "" {
			t.Errorf("%s not planned: %+v", p, reasons[p])
		}
	}
	r, ok := reasons["lab/low"]
	if !ok || nodes["lab/low"] != "" {
		t.Fatalf("lab/low: node %q, reason %+v; want it reported, not planned", nodes["lab/low"], r)
	}
	if r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "team research is at its limit limits.gpus 3: 3 GPUs in use or planned, the pod requests 1") {
		t.Errorf("lab/low: %+v", r)
	}
	// Placeholders (bound or pending) count against no limit: the same pods are planned and
	// reported. (simtest.Check does not know placeholders, so this plan is compared, not checked.)
	withPH := *snap
	withPH.Pods = append(slices.Clone(snap.Pods),
		simtest.Pod("held").Namespace("lab").GPU(1).Label(api.LabelPlaceholder, "x").On("g6-1").Obj(),
		simtest.Pod("ahead").Namespace("lab").GPU(1).Label(api.LabelPlaceholder, "x").Priority(100).Obj())
	planPH, err := simulator.Simulate(simulator.Input{Snapshot: &withPH, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	nodesPH, reasonsPH := teamPlacement(planPH)
	if len(nodesPH) != len(nodes) || len(reasonsPH) != 1 || reasonsPH["lab/low"] != r {
		t.Errorf("with placeholders: placed %v, reported %v; want %v and only lab/low", nodesPH, reasonsPH, nodes)
	}
	// Without the limit all three are planned: the limit is what stops the third.
	pol.Teams[0].Limits.GPUs = nil
	nodes, _ = teamPlacement(teamSimulate(t, snap, cat, pol))
	if nodes["lab/low"] == "" {
		t.Error("without the limit lab/low is not planned either")
	}
}

// TestTeamPools: the cheapest GPU offering is spot, which an unteamed pod gets; the inference
// team may only buy from gpu-od, so its pod's node is on-demand from that pool.
func TestTeamPools(t *testing.T) {
	cat := teamCatalog(t)
	pol := teamPolicy(t, policy.Team{Name: "inference", Namespaces: []string{"chat"}, Pools: []string{"gpu-od"}})
	anti := func(b *simtest.PodBuilder) *corev1.Pod {
		return b.AntiAffinity(corev1.LabelHostname, "x").Label("app", "x").Obj()
	}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{
		anti(simtest.Pod("serve").Namespace("chat").CPU("1").GPU(1)),
		anti(simtest.Pod("free").Namespace("lab").CPU("1").GPU(1)),
	}}
	plan := teamSimulate(t, snap, cat, pol)
	got := map[string]api.NewNode{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			got[p] = n
		}
	}
	if n := got["chat/serve"]; n.Pool != "gpu-od" || n.CapacityType != api.OnDemand {
		t.Errorf("chat/serve on pool %q %s, want gpu-od on-demand", n.Pool, n.CapacityType)
	}
	if n := got["lab/free"]; n.Pool != "gpu-spot" {
		t.Errorf("lab/free on pool %q, want the cheaper gpu-spot", n.Pool)
	}
	// A team whose pools hold no offering that fits is reported as never fitting, not bought for
	// elsewhere.
	pol.Teams[0].Pools = []string{"general"}
	_, reasons := teamPlacement(teamSimulate(t, snap, cat, pol))
	if r := reasons["chat/serve"]; r.Code != api.NeverFits {
		t.Errorf("chat/serve limited to the CPU pool: %+v, want NeverFits", r)
	}
}

// teamCost is the team's chargeback $/h once the plan is applied (simtest.Bind, Chargeback).
func teamCost(t *testing.T, snap *snapshot.Snapshot, plan *api.Plan, cat *catalog.Catalog, namespaces ...string) float64 {
	t.Helper()
	bound, err := simtest.Bind(snap, plan, cat, dNow)
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulator.Chargeback(bound, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, l := range r.Lines {
		for _, ns := range namespaces {
			if l.Namespace == ns {
				sum += l.CostPerHour
			}
		}
	}
	return sum
}

// TestTeamPriceLimit: six 1-GPU pods of a team capped at the price of about two and a half
// single-GPU nodes; the plan keeps the team's chargeback share (measured independently, by
// binding the plan and running Chargeback) under the cap, reports the rest TeamLimitExceeded
// naming maxPricePerHour, and would place more without the cap.
func TestTeamPriceLimit(t *testing.T) {
	cat := teamCatalog(t)
	one, ok := cat.Price(api.Offering{InstanceType: "g6.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand})
	if !ok {
		t.Fatal("no g6.xlarge price")
	}
	limit := 2.5 * one
	pol := teamPolicy(t, policy.Team{Name: "research", Namespaces: []string{"lab"}, Pools: []string{"gpu-od"},
		Limits: policy.TeamLimits{MaxPricePerHour: limit}})
	snap := &snapshot.Snapshot{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		snap.Pods = append(snap.Pods, simtest.Pod("p-"+name).Namespace("lab").CPU("2").Mem("8Gi").GPU(1).Obj())
	}
	plan := teamSimulate(t, snap, cat, pol)
	nodes, reasons := teamPlacement(plan)
	if len(nodes) == 0 || len(reasons) == 0 {
		t.Fatalf("%d pods planned, %d reported; want some of each", len(nodes), len(reasons))
	}
	for p, r := range reasons {
		if r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "team research is at its limit limits.maxPricePerHour") {
			t.Errorf("%s: %+v", p, r)
		}
	}
	if c := teamCost(t, snap, plan, cat, "lab"); c > limit+1e-9 {
		t.Errorf("team share $%.4f/h exceeds the cap $%.4f/h", c, limit)
	}
	pol.Teams[0].Limits.MaxPricePerHour = 0
	if all, _ := teamPlacement(teamSimulate(t, snap, cat, pol)); len(all) != 6 {
		t.Errorf("without the cap %d of 6 pods planned", len(all))
	}
}

// TestTeamNodeLimit: four pods of a team that may not share a node, the team capped at two nodes:
// two are planned and two are reported TeamLimitExceeded naming maxNodes. A running pod of the
// team on an existing node counts as one of the two.
func TestTeamNodeLimit(t *testing.T) {
	cat := teamCatalog(t)
	pol := teamPolicy(t, policy.Team{Name: "web", Namespaces: []string{"web"}, Limits: policy.TeamLimits{MaxNodes: 2}})
	mk := func(name string) *corev1.Pod {
		return simtest.Pod(name).Namespace("web").CPU("1").Label("app", "web").AntiAffinity(corev1.LabelHostname, "web").Obj()
	}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{mk("a"), mk("b"), mk("c"), mk("d")}}
	check := func(wantPlanned int) {
		t.Helper()
		nodes, reasons := teamPlacement(teamSimulate(t, snap, cat, pol))
		if len(nodes) != wantPlanned || len(reasons) != 4-wantPlanned {
			t.Fatalf("%d planned, %d reported; want %d and %d", len(nodes), len(reasons), wantPlanned, 4-wantPlanned)
		}
		for p, r := range reasons {
			if r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "team web is at its limit limits.maxNodes 2") {
				t.Errorf("%s: %+v", p, r)
			}
		}
	}
	check(2)
	node := simtest.ManagedNode(cat, "m-1", "general", "m7i.large", "us-east-1a", api.OnDemand, dOld)
	snap.Nodes = []*corev1.Node{node}
	snap.Pods = append(snap.Pods, simtest.Pod("running").Namespace("web").CPU("1").On("m-1").Obj())
	check(1)
}

// TestResourceQuota: a namespace's quota of 2 GPUs with one in use admits one more 1-GPU pod and
// reports the other QuotaExceeded; a CPU quota bounds a CPU pod likewise. Scoped quotas are
// ignored with a warning.
func TestResourceQuota(t *testing.T) {
	cat := teamCatalog(t)
	node := simtest.ManagedNode(cat, "g6-1", "gpu-od", "g6.xlarge", "us-east-1a", api.OnDemand, dOld)
	quota := func(ns, name string, hard ...string) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		q.Spec.Hard = corev1.ResourceList{}
		for i := 0; i < len(hard); i += 2 {
			q.Spec.Hard[corev1.ResourceName(hard[i])] = resource.MustParse(hard[i+1])
		}
		return q
	}
	scoped := quota("lab", "best-effort", "pods", "0")
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{node},
		ResourceQuotas: []*corev1.ResourceQuota{quota("lab", "gpus", "requests.nvidia.com/gpu", "2"), quota("web", "cpu", "cpu", "3"), scoped},
		Pods: []*corev1.Pod{
			simtest.Pod("running").Namespace("lab").CPU("1").GPU(1).On("g6-1").Obj(),
			simtest.Pod("first").Namespace("lab").CPU("1").GPU(1).Priority(2).Obj(),
			simtest.Pod("second").Namespace("lab").CPU("1").GPU(1).Priority(1).Obj(),
			simtest.Pod("a").Namespace("web").CPU("2").Obj(),
			simtest.Pod("b").Namespace("web").CPU("2").Obj(),
		}}
	plan := teamSimulate(t, snap, cat, teamPolicy(t))
	nodes, reasons := teamPlacement(plan)
	if nodes["lab/first"] == "" || nodes["web/a"] == "" {
		t.Errorf("lab/first on %q, web/a on %q; want both planned", nodes["lab/first"], nodes["web/a"])
	}
	if r := reasons["lab/second"]; r.Code != api.QuotaExceeded ||
		r.Reason != "namespace lab's ResourceQuota gpus: nvidia.com/gpu requested 1 with 2 in use exceeds hard 2" {
		t.Errorf("lab/second: %+v", r)
	}
	if r := reasons["web/b"]; r.Code != api.QuotaExceeded || !strings.Contains(r.Reason, "ResourceQuota cpu: cpu requested 2 with 2 in use exceeds hard 3") {
		t.Errorf("web/b: %+v", r)
	}
	if !strings.Contains(strings.Join(plan.Warnings, "\n"), "ResourceQuota lab/best-effort has scopes") {
		t.Errorf("warnings %q", plan.Warnings)
	}
}

// TestGatedPodsNotProvisioned: a pod with scheduling gates (Kueue's admission gate) is neither
// bought for nor reported; once the gate is removed it is bought for.
func TestGatedPodsNotProvisioned(t *testing.T) {
	cat := teamCatalog(t)
	gated := simtest.Pod("job-0").Namespace("lab").CPU("1").GPU(1).Obj()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{gated}}
	plan := teamSimulate(t, snap, cat, nil)
	if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 0 {
		t.Fatalf("gated pod: %d new nodes, unschedulable %+v; want nothing", len(plan.NewNodes), plan.Unschedulable)
	}
	gated.Spec.SchedulingGates = nil
	if plan = teamSimulate(t, snap, cat, nil); len(plan.NewNodes) != 1 {
		t.Errorf("ungated pod: %d new nodes, want 1", len(plan.NewNodes))
	}
}

// TestTeamSelector: a team selects namespaces by label from the snapshot's Namespace objects; a
// namespace two teams claim is an error naming both.
func TestTeamSelector(t *testing.T) {
	cat := teamCatalog(t)
	pol := teamPolicy(t,
		policy.Team{Name: "research", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tiler.dev/team": "research"}},
			Limits: policy.TeamLimits{GPUs: intp(0)}},
		policy.Team{Name: "inference", Namespaces: []string{"chat"}})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: map[string]string{"tiler.dev/team": "research"}}}
	snap := &snapshot.Snapshot{Namespaces: []*corev1.Namespace{ns}, Pods: []*corev1.Pod{simtest.Pod("p").Namespace("lab").GPU(1).Obj()}}
	_, reasons := teamPlacement(teamSimulate(t, snap, cat, pol))
	if r := reasons["lab/p"]; r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "team research is at its limit limits.gpus 0") {
		t.Errorf("lab/p: %+v", r)
	}
	ns.Name = "chat"
	snap.Pods[0].Namespace = "chat"
	_, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err == nil || !strings.Contains(err.Error(), `namespace "chat" belongs to several teams`) {
		t.Errorf("namespace in two teams: %v", err)
	}
}

// TestTeamLimitsHoldRandom: on random snapshots whose pods are dealt to two limited teams and a
// free namespace, the independent checker passes, a team's planned and running GPUs stay within
// limits.gpus, and a team over its $/h or node limit after the plan (measured by binding the plan
// and running Chargeback) has none of its pods on a new node: nothing was bought for it.
func TestTeamLimitsHoldRandom(t *testing.T) {
	cat := teamCatalog(t)
	pol := policy.Default()
	pol.Teams = []policy.Team{
		{Name: "t1", Namespaces: []string{"t1"}, Limits: policy.TeamLimits{GPUs: intp(2), MaxPricePerHour: 0.4}},
		{Name: "t2", Namespaces: []string{"t2"}, Pools: []string{"default"}, Limits: policy.TeamLimits{MaxNodes: 2}},
	}
	seeds := 25
	if testing.Short() {
		seeds = 8
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			snap := simtest.RandomSnapshot(uint64(seed), 10+seed%30)
			for i, p := range snap.Pods {
				if p.Spec.NodeName == "" {
					p.Namespace = []string{"t1", "t2", "free"}[i%3]
				}
			}
			plan := teamSimulate(t, snap, cat, pol)
			nodes, reasons := teamPlacement(plan)
			newNode := map[string]bool{}
			for _, n := range plan.NewNodes {
				newNode[n.Name] = true
				for _, p := range n.Pods {
					if strings.HasPrefix(p, "t2/") && n.Pool != "default" {
						t.Errorf("%s bought in pool %s, team t2 may use default only", p, n.Pool)
					}
				}
			}
			gpus := int64(0)
			onNew := map[string]int{}
			for _, p := range snap.Pods {
				k := p.Namespace + "/" + p.Name
				if nodes[k] != "" || p.Spec.NodeName != "" {
					if p.Namespace == "t1" {
						for _, c := range p.Spec.Containers {
							gpus += c.Resources.Requests.Name(api.ResourceGPU, resource.DecimalSI).Value()
						}
					}
					if newNode[nodes[k]] {
						onNew[p.Namespace]++
					}
				}
				if r, ok := reasons[k]; ok && r.Code == api.TeamLimitExceeded && p.Namespace == "free" {
					t.Errorf("%s has no team but is reported %+v", k, r)
				}
			}
			if gpus > 2 {
				t.Errorf("team t1 holds %d GPUs, limit 2", gpus)
			}
			bound, err := simtest.Bind(snap, plan, cat, dNow)
			if err != nil {
				t.Fatal(err)
			}
			if c := teamCost(t, snap, plan, cat, "t1"); c > 0.4+1e-9 && onNew["t1"] > 0 {
				t.Errorf("team t1 at $%.4f/h over its $0.4/h with %d pods on new nodes", c, onNew["t1"])
			}
			held := map[string]bool{}
			for _, p := range bound.Pods {
				if p.Namespace == "t2" && p.Spec.NodeName != "" {
					held[p.Spec.NodeName] = true
				}
			}
			if len(held) > 2 && onNew["t2"] > 0 {
				t.Errorf("team t2 on %d nodes, limit 2, with %d pods on new nodes", len(held), onNew["t2"])
			}
		})
	}
}

// TestTeamGPUModelLimit: team research may take two L4s (limits.gpusByModel) and runs one on an
// existing L4 node; of its three pending one-GPU pods that need an L4, the highest priority is
// planned and the two others are reported TeamLimitExceeded naming the model's limit. A limit on
// another model leaves them all planned; so do pods of another team.
func TestTeamGPUModelLimit(t *testing.T) {
	cat := teamCatalog(t)
	node := simtest.ManagedNode(cat, "g6-1", "gpu-od", "g6.xlarge", "us-east-1a", api.OnDemand, dOld)
	if node.Labels[api.LabelGPUModel] != "L4" {
		t.Fatalf("the g6.xlarge node's labels %v lack %s=L4", node.Labels, api.LabelGPUModel)
	}
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{
		simtest.Pod("running").Namespace("lab").CPU("1").GPU(1).On("g6-1").Obj(),
		simtest.Pod("low").Namespace("lab").CPU("1").GPU(1).Priority(1).NodeSelector(api.LabelGPUModel, "L4").Obj(),
		simtest.Pod("high").Namespace("lab").CPU("1").GPU(1).Priority(10).NodeSelector(api.LabelGPUModel, "L4").Obj(),
		simtest.Pod("mid").Namespace("lab").CPU("1").GPU(1).Priority(5).NodeSelector(api.LabelGPUModel, "L4").Obj(),
		simtest.Pod("chat").Namespace("chat").CPU("1").GPU(1).NodeSelector(api.LabelGPUModel, "L4").Obj(),
	}}
	pol := teamPolicy(t, policy.Team{Name: "research", Namespaces: []string{"lab"}, Limits: policy.TeamLimits{GPUsByModel: map[string]int{"L4": 2}}})
	plan := teamSimulate(t, snap, cat, pol)
	nodes, reasons := teamPlacement(plan)
	for _, p := range []string{"lab/high", "chat/chat"} {
		if nodes[p] == "" {
			t.Errorf("%s not planned: %+v", p, reasons[p])
		}
	}
	for _, p := range []string{"lab/mid", "lab/low"} {
		r := reasons[p]
		if nodes[p] != "" || r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "team research is at its limit limits.gpusByModel[L4] 2:") {
			t.Errorf("%s: node %q, reason %+v; want TeamLimitExceeded naming limits.gpusByModel[L4] 2", p, nodes[p], r)
		}
	}
	pol.Teams[0].Limits.GPUsByModel = map[string]int{"H100": 0}
	nodes, reasons = teamPlacement(teamSimulate(t, snap, cat, pol))
	for _, p := range []string{"lab/high", "lab/mid", "lab/low"} {
		if nodes[p] == "" {
			t.Errorf("with a limit on H100 only, %s is not planned: %+v", p, reasons[p])
		}
	}
}

// TestTeamGPUModelLimitSteers: a pod that names no GPU model is steered off a model its team is at
// the limit of, onto the next cheapest, rather than reported: two flexible one-GPU pods of a team
// that may take one T4 (the cheapest GPU) are both planned, one on a T4 and one on another model.
func TestTeamGPUModelLimitSteers(t *testing.T) {
	cat := teamCatalog(t)
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{
		simtest.Pod("a").Namespace("lab").CPU("1").GPU(1).Priority(10).Obj(),
		simtest.Pod("b").Namespace("lab").CPU("1").GPU(1).Priority(5).Obj(),
	}}
	pol := teamPolicy(t, policy.Team{Name: "research", Namespaces: []string{"lab"}})
	free := teamSimulate(t, snap, cat, pol)
	models := func(plan *api.Plan) map[string]string {
		out := map[string]string{}
		for _, n := range plan.NewNodes {
			for _, p := range n.Pods {
				out[p] = n.Labels[api.LabelGPUModel]
			}
		}
		return out
	}
	if m := models(free); m["lab/a"] != "T4" || m["lab/b"] != "T4" {
		t.Fatalf("without a limit: models %v, want both on T4 (the cheapest GPU)", m)
	}
	pol.Teams[0].Limits.GPUsByModel = map[string]int{"T4": 1}
	plan := teamSimulate(t, snap, cat, pol)
	m := models(plan)
	if len(plan.Unschedulable) != 0 || m["lab/a"] != "T4" || m["lab/b"] == "" || m["lab/b"] == "T4" {
		t.Errorf("with limits.gpusByModel {T4: 1}: models %v, unschedulable %+v; want lab/a on a T4 and lab/b on another model", m, plan.Unschedulable)
	}
}
