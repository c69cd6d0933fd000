package simulator_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

func cpuNode(name string) *corev1.Node {
	return simtest.Node(name, "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "4", "memory", "15Gi", "pods", "110"))
}

func preemptPlan(t *testing.T, snap *snapshot.Snapshot) *api.Plan {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// newNodeOf returns the new node the plan put the pod on ("" when none).
func newNodeOf(p *api.Plan, pod string) string {
	for _, n := range p.NewNodes {
		if slices.Contains(n.Pods, pod) {
			return n.Name
		}
	}
	return ""
}

// TestPreemptionInsteadOfPurchase: a full node runs a research pod (priority 100); a pending
// inference pod (priority 1000) that fits nowhere else preempts it, as kube-scheduler's
// DefaultPreemption does, so nothing is bought for the inference pod; the research pod, pending
// again, gets the one new node.
func TestPreemptionInsteadOfPurchase(t *testing.T) {
	research := simtest.Pod("train-0").Namespace("research").CPU("3").Mem("8Gi").Priority(100).On("n-0").Obj()
	infer := simtest.Pod("serve-0").Namespace("prod").CPU("3").Mem("8Gi").Priority(1000).Obj()
	plan := preemptPlan(t, &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-0")}, Pods: []*corev1.Pod{research, infer}})
	if len(plan.Preemptions) != 1 {
		t.Fatalf("preemptions %+v, want one", plan.Preemptions)
	}
	pr := plan.Preemptions[0]
	if pr.Pod != "prod/serve-0" || pr.Node != "n-0" || !slices.Equal(pr.Victims, []string{"research/train-0"}) || pr.Priority != 1000 ||
		pr.PDBViolations != 0 || !strings.Contains(pr.Reason, "kube-scheduler preempts 1 lower-priority pod(s) on n-0 (priority 1000 > 100)") {
		t.Errorf("preemption %+v", pr)
	}
	if len(plan.NewNodes) != 1 || !slices.Equal(plan.NewNodes[0].Pods, []string{"research/train-0"}) {
		t.Errorf("new nodes %+v: want one, for the victim research/train-0 only", plan.NewNodes)
	}
	if len(plan.ExistingNodes) != 1 || plan.ExistingNodes[0].Name != "n-0" || !slices.Equal(plan.ExistingNodes[0].Pods, []string{"prod/serve-0"}) {
		t.Errorf("existing nodes %+v: want prod/serve-0 on n-0", plan.ExistingNodes)
	}
	// A caller whose pods kube-scheduler already tried, preemption included (the controller),
	// gets the purchase: the scheduler found no victims for them.
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	tried, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-0")}, Pods: []*corev1.Pod{research, infer}},
		Catalog: cat, Options: simulator.Options{NoPreemption: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tried.Preemptions) != 0 || newNodeOf(tried, "prod/serve-0") == "" {
		t.Errorf("with NoPreemption: preemptions %+v, new nodes %+v: want prod/serve-0 bought for", tried.Preemptions, tried.NewNodes)
	}
	var tab, js bytes.Buffer
	if err := plan.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Preemptions: 1 pods preempt 1 lower-priority pods on existing nodes (no purchase for them)",
		"PREEMPTING POD", "prod/serve-0    1000      n-0   research/train-0"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	if err := plan.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"victims": [`) || !strings.Contains(js.String(), `"preemptions": [`) {
		t.Errorf("JSON lacks the preemption:\n%s", js.String())
	}
}

// TestPreemptionNotTaken: no preemption when the pending pod's preemptionPolicy is Never, when
// the running pod has the same priority, or when the pod is expected (forecast) demand; then the
// pending pod is bought for as before.
func TestPreemptionNotTaken(t *testing.T) {
	never := corev1.PreemptNever
	for name, tc := range map[string]struct {
		pending     *simtest.PodBuilder
		runningPrio int32
	}{
		"preemptionPolicy Never": {simtest.Pod("serve-0").Namespace("prod").CPU("3").Priority(1000), 100},
		"equal priority":         {simtest.Pod("serve-0").Namespace("prod").CPU("3").Priority(100), 100},
		"forecast demand":        {simtest.Pod("serve-0").Namespace("prod").CPU("3").Priority(1000).Label(api.LabelForecastDemand, "prod.serve"), 100},
	} {
		t.Run(name, func(t *testing.T) {
			p := tc.pending.Obj()
			if name == "preemptionPolicy Never" {
				p.Spec.PreemptionPolicy = &never
			}
			running := simtest.Pod("train-0").Namespace("research").CPU("3").Priority(tc.runningPrio).On("n-0").Obj()
			plan := preemptPlan(t, &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-0")}, Pods: []*corev1.Pod{running, p}})
			if len(plan.Preemptions) != 0 || newNodeOf(plan, "prod/serve-0") == "" || len(plan.NewNodes) != 1 {
				t.Errorf("plan %+v %+v: want no preemption and prod/serve-0 on the one new node", plan.Preemptions, plan.NewNodes)
			}
		})
	}
}

// TestPreemptionMinimalVictims: victims are reprieved most important first, so only the pods
// whose room the preemptor needs go; the node whose most important victim has the lowest priority
// is chosen even with more victims; a bound placeholder's room counts as free and it is never a
// victim.
func TestPreemptionMinimalVictims(t *testing.T) {
	running := []*corev1.Pod{
		// n-a: evicting a-20 and a-10 frees 3 (a-30 is reprieved): top victim priority 20.
		simtest.Pod("a-10").CPU("1").Priority(10).On("n-a").Obj(),
		simtest.Pod("a-20").CPU("1").Priority(20).On("n-a").Obj(),
		simtest.Pod("a-30").CPU("1").Priority(30).On("n-a").Obj(),
		// n-b: evicting b-40 alone would do (b-50 is reprieved), but 40 > 20.
		simtest.Pod("b-40").CPU("2").Priority(40).On("n-b").Obj(),
		simtest.Pod("b-50").CPU("1").Priority(50).On("n-b").Obj(),
	}
	big := simtest.Pod("big").CPU("3").Priority(1000).Obj()
	plan := preemptPlan(t, &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-a"), cpuNode("n-b")}, Pods: append(slices.Clone(running), big)})
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Node != "n-a" || !slices.Equal(plan.Preemptions[0].Victims, []string{"default/a-20", "default/a-10"}) {
		t.Fatalf("preemptions %+v: want big on n-a evicting a-20 and a-10", plan.Preemptions)
	}
	// The victims are pending again: one fits in n-b's free CPU, the other is bought for.
	onB := 0
	for _, n := range plan.ExistingNodes {
		if n.Name == "n-b" {
			onB = len(n.Pods)
		}
	}
	if onB != 1 || len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Pods) != 1 {
		t.Errorf("existing %+v new %+v: want one victim on n-b and one new node for the other", plan.ExistingNodes, plan.NewNodes)
	}

	// n-c holds a placeholder (2 CPU) and c-60 (1 CPU): without the placeholder 3 CPU are free,
	// so big goes there without preempting anything.
	placeholder := simtest.Pod("tiler-placeholder-x-0").Namespace("tiler-system").Label(api.LabelPlaceholder, "x").CPU("2").Priority(-10).On("n-c").Obj()
	pods := append(slices.Clone(running), placeholder, simtest.Pod("c-60").CPU("1").Priority(60).On("n-c").Obj(), big)
	plan = preemptPlan(t, &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-a"), cpuNode("n-b"), cpuNode("n-c")}, Pods: pods})
	if len(plan.Preemptions) != 0 || len(plan.NewNodes) != 0 {
		t.Errorf("preemptions %+v new %+v: big fits in the placeholder's room on n-c", plan.Preemptions, plan.NewNodes)
	}
	// With c-60 at 2 CPU big needs it gone, and only it: the placeholder is no victim.
	pods = []*corev1.Pod{placeholder, simtest.Pod("c-60").CPU("2").Priority(60).On("n-c").Obj(), big}
	plan = preemptPlan(t, &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode("n-c")}, Pods: pods})
	if len(plan.Preemptions) != 1 || !slices.Equal(plan.Preemptions[0].Victims, []string{"default/c-60"}) {
		t.Errorf("preemptions %+v: want big evicting c-60 only", plan.Preemptions)
	}
}

// TestPreemptionPDB: of two nodes whose victims are alike, the one where no PodDisruptionBudget
// is violated is chosen; with only the protected node the scheduler preempts anyway and the plan
// counts the violation.
func TestPreemptionPDB(t *testing.T) {
	mk := func(nodes ...string) *snapshot.Snapshot {
		snap := &snapshot.Snapshot{Pods: []*corev1.Pod{simtest.Pod("serve-0").Namespace("prod").CPU("3").Priority(1000).Obj()}}
		for _, n := range nodes {
			snap.Nodes = append(snap.Nodes, cpuNode(n))
			snap.Pods = append(snap.Pods, simtest.Pod("train-"+n).Namespace("research").Label("app", "train-"+n).CPU("3").Priority(100).On(n).Obj())
		}
		snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Name: "train-a", Namespace: "research"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train-a"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}}
		return snap
	}
	plan := preemptPlan(t, mk("a", "b"))
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Node != "b" || plan.Preemptions[0].PDBViolations != 0 {
		t.Errorf("preemptions %+v: want serve-0 on b, whose victim no budget protects", plan.Preemptions)
	}
	plan = preemptPlan(t, mk("a"))
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Node != "a" || plan.Preemptions[0].PDBViolations != 1 ||
		!strings.Contains(plan.Preemptions[0].Reason, "1 eviction(s) violate a PodDisruptionBudget") {
		t.Errorf("preemptions %+v: want serve-0 on a with one PDB violation", plan.Preemptions)
	}
}
