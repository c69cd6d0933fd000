package simulator_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

var (
	dNow = time.Date(2026, 3, 2, 20, 0, 0, 0, time.UTC) // a Monday, 20:00 UTC
	dOld = dNow.Add(-24 * time.Hour)
)

// disruptPolicy has a CPU pool and a GPU pool whose budgets allow everything at once, so that
// tests see every action the search finds.
const disruptPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceFamilies: [m7i]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
  disruption: {budgets: [{nodes: "100%"}]}
- name: gpu
  instanceFamilies: [g6, g5]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {budgets: [{nodes: "100%"}]}
`

// fleet builds a disruption scenario on the embedded aws-us-east-1 catalog.
type fleet struct {
	t    *testing.T
	cat  *catalog.Catalog
	pol  string
	snap *snapshot.Snapshot
	opts simulator.DisruptionOptions
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, cat: cat, pol: disruptPolicy, snap: &snapshot.Snapshot{},
		opts: simulator.DisruptionOptions{Now: dNow, IgnoreCandidateWait: true}}
}

// node adds a day-old node of the pool in us-east-1a; GPU pool nodes carry the GPU taint.
func (f *fleet) node(name, pool string, typ api.InstanceTypeName, ct api.CapacityType) *corev1.Node {
	n := simtest.ManagedNode(f.cat, name, pool, typ, "us-east-1a", ct, dOld)
	if pool == "gpu" {
		n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
	}
	f.snap.Nodes = append(f.snap.Nodes, n)
	return n
}

// pod adds a running pod on the node, owned by a ReplicaSet of its own name.
func (f *fleet) pod(name, node string) *simtest.PodBuilder {
	b := simtest.Pod(name).Label("app", name).Controlled("ReplicaSet", name).On(node)
	f.snap.Pods = append(f.snap.Pods, b.Obj())
	return b
}

// plan plans the disruption, checks that the same input gives the same plan, and checks every
// action with the independent checker by carrying the plan out (simtest.ApplyDisruption).
func (f *fleet) plan() *api.DisruptionPlan {
	f.t.Helper()
	pol, err := policy.Parse([]byte(f.pol))
	if err != nil {
		f.t.Fatal(err)
	}
	in := simulator.DisruptionInput{Snapshot: f.snap, Catalog: f.cat, Policy: pol, Options: f.opts}
	plan, err := simulator.PlanDisruption(in)
	if err != nil {
		f.t.Fatal(err)
	}
	again, err := simulator.PlanDisruption(in)
	if err != nil {
		f.t.Fatal(err)
	}
	var a, b bytes.Buffer
	_ = plan.WriteJSON(&a)
	_ = again.WriteJSON(&b)
	if a.String() != b.String() {
		f.t.Errorf("the same input gives two plans:\n%s\n%s", a.String(), b.String())
	}
	_, violations, err := simtest.ApplyDisruption(f.snap, plan, f.cat, dNow)
	if err != nil {
		f.t.Errorf("carrying the plan out: %v", err)
	}
	for _, v := range violations {
		f.t.Errorf("checker: %s", v)
	}
	if f.t.Failed() || testing.Verbose() {
		var tab bytes.Buffer
		_ = plan.WriteTable(&tab)
		f.t.Log("\n" + tab.String())
	}
	return plan
}

// actionOf returns the action that removes the node, or nil.
func actionOf(p *api.DisruptionPlan, node string) *api.DisruptionAction {
	for i, a := range p.Actions {
		for _, n := range a.Nodes {
			if n == node {
				return &p.Actions[i]
			}
		}
	}
	return nil
}

// keptAs returns why the plan keeps the node ("" when an action removes it).
func keptAs(p *api.DisruptionPlan, node string) api.KeepReason {
	for _, k := range p.Kept {
		if k.Name == node {
			return k.Reason
		}
	}
	return ""
}

// dueOf returns why the plan says a kept node must go ("" when it need not, or is not kept).
func dueOf(p *api.DisruptionPlan, node string) api.DisruptionReason {
	for _, k := range p.Kept {
		if k.Name == node {
			return k.Due
		}
	}
	return ""
}

// destination returns where the plan moves the pod ("" when it does not).
func destination(p *api.DisruptionPlan, pod string) string {
	for _, a := range p.Actions {
		for _, m := range a.Moves {
			if m.Pod == "default/"+pod {
				return m.To
			}
		}
	}
	return ""
}

// TestDisruptEmptyNodes: nodes that run only DaemonSet pods go in one Empty action per pool; a
// node with a pod that moves is not empty.
func TestDisruptEmptyNodes(t *testing.T) {
	f := newFleet(t)
	for _, n := range []string{"e1", "e2", "busy"} {
		f.node(n, "general", "m7i.xlarge", api.OnDemand)
		f.snap.Pods = append(f.snap.Pods, simtest.Pod("agent-"+n).CPU("100m").Controlled("DaemonSet", "agent").On(n).Obj())
	}
	f.pod("web", "busy").CPU("3").Mem("8Gi")
	p := f.plan()
	a := actionOf(p, "e1")
	if a == nil || a.Reason != api.ReasonEmpty || a.Kind != api.ActionDelete || strings.Join(a.Nodes, ",") != "e1,e2" || len(a.Moves) != 0 {
		t.Fatalf("empty nodes: %+v", a)
	}
	if keptAs(p, "busy") != api.KeepNoCheaperFit || a.SavingsPerHour != 2*0.2016 || p.CostPerHourAfter != 0.2016 {
		t.Errorf("busy kept as %q, savings %v, after %v", keptAs(p, "busy"), a.SavingsPerHour, p.CostPerHourAfter)
	}
	if strings.Join(p.Candidates, ",") != "e1,e2" {
		t.Errorf("candidates %v", p.Candidates)
	}
}

// TestDisruptDelete: a node whose pods fit on another goes, its pods moving there.
func TestDisruptDelete(t *testing.T) {
	f := newFleet(t)
	f.node("small", "general", "m7i.xlarge", api.OnDemand)
	f.node("full", "general", "m7i.xlarge", api.OnDemand)
	f.pod("a", "small").CPU("1").Mem("2Gi")
	f.pod("b", "full").CPU("2").Mem("4Gi")
	p := f.plan()
	if a := actionOf(p, "small"); a == nil || a.Kind != api.ActionDelete || destination(p, "a") != "full" || a.SavingsPerHour != 0.2016 {
		t.Errorf("small: %+v, pod a to %q", a, destination(p, "a"))
	}
	if keptAs(p, "full") != api.KeepNoCheaperFit {
		t.Errorf("full kept as %q", keptAs(p, "full"))
	}
}

// TestDisruptReplace: a big node whose pods need a smaller one is replaced by the cheapest type
// that holds them, with fallbacks as a purchase has.
func TestDisruptReplace(t *testing.T) {
	f := newFleet(t)
	f.node("big", "general", "m7i.4xlarge", api.OnDemand)
	f.pod("c", "big").CPU("3").Mem("10Gi")
	p := f.plan()
	a := actionOf(p, "big")
	if a == nil || a.Kind != api.ActionReplace || a.Replacement == nil || a.Replacement.InstanceType != "m7i.xlarge" {
		t.Fatalf("big: %+v", a)
	}
	if destination(p, "c") != a.Replacement.Name || a.SavingsPerHour != 0.6048 || len(a.Replacement.Fallbacks) == 0 ||
		strings.Join(a.Replacement.Pods, ",") != "default/c" || a.Replacement.Pool != "general" {
		t.Errorf("big's replacement: %+v", a)
	}
}

// TestDisruptMultiNode: each of four nodes is over half full, so none can take another's pod
// and single-node consolidation finds nothing, but three of them fit one node of twice the size:
// several nodes into one.
func TestDisruptMultiNode(t *testing.T) {
	f := newFleet(t)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		f.node(n, "general", "m7i.large", api.OnDemand)
		f.pod("p-"+n, n).CPU("1200m").Mem("1Gi")
	}
	p := f.plan()
	if len(p.Actions) != 1 {
		t.Fatalf("%d actions", len(p.Actions))
	}
	a := p.Actions[0]
	if strings.Join(a.Nodes, ",") != "n1,n2,n3" || a.Kind != api.ActionReplace || a.Replacement.InstanceType != "m7i.xlarge" || len(a.Moves) != 3 {
		t.Errorf("action %+v, want n1–n3 into one m7i.xlarge", a)
	}
	if keptAs(p, "n4") != api.KeepNoCheaperFit || p.CostPerHourAfter != 0.3024 {
		t.Errorf("n4 kept as %q, fleet after %v", keptAs(p, "n4"), p.CostPerHourAfter)
	}
}

func resourceQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestDisruptPendingPodsKeepTheirRoom: the room a pending pod is about to take on an existing
// node is not given to the pods of a removed node (provisioning would buy it back).
func TestDisruptPendingPodsKeepTheirRoom(t *testing.T) {
	for _, pending := range []bool{false, true} {
		f := newFleet(t)
		f.node("a", "general", "m7i.xlarge", api.OnDemand)
		f.node("b", "general", "m7i.xlarge", api.OnDemand)
		f.pod("pa", "a").CPU("2").Mem("2Gi")
		f.pod("pb", "b").CPU("1").Mem("2Gi").Annotate(api.AnnotationDoNotDisrupt, "true")
		if pending {
			f.snap.Pods = append(f.snap.Pods, simtest.Pod("q").CPU("2500m").Mem("1Gi").Controlled("ReplicaSet", "q").Obj())
		}
		p := f.plan()
		if gone := actionOf(p, "a") != nil; gone == pending {
			t.Errorf("pending pod %v: a removed %v", pending, gone)
		}
	}
}

// TestDisruptInFlightCapacity: a node in flight (here registered already) takes moved pods but is
// never a candidate itself.
func TestDisruptInFlightCapacity(t *testing.T) {
	f := newFleet(t)
	f.node("a", "general", "m7i.xlarge", api.OnDemand)
	f.pod("pa", "a").CPU("2").Mem("2Gi")
	n := f.node("launching", "general", "m7i.xlarge", api.OnDemand)
	n.CreationTimestamp = metav1.NewTime(dNow.Add(-30 * time.Second))
	f.opts.InFlight = []simulator.InFlightNode{{Name: "launching", Pool: "general",
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.2016}}}
	p := f.plan()
	if destination(p, "pa") != "launching" || keptAs(p, "launching") != api.KeepTooYoung {
		t.Errorf("pa to %q, launching kept as %q", destination(p, "pa"), keptAs(p, "launching"))
	}
}

// TestDisruptPDBAcrossActions: each action uses one disruption of every budget selecting a pod it
// evicts, so two actions evicting pods of a budget that allows one are never planned together
// (within an action the eviction API drains them in turn). The nodes are in two pools, so that
// no multi-node action takes both.
func TestDisruptPDBAcrossActions(t *testing.T) {
	f := newFleet(t)
	f.pol += "- name: batch\n  instanceFamilies: [m7i]\n  disruption: {budgets: [{nodes: \"100%\"}]}\n"
	f.node("a", "general", "m7i.xlarge", api.OnDemand)
	f.node("b", "batch", "m7i.xlarge", api.OnDemand)
	f.node("c", "general", "m7i.xlarge", api.OnDemand)
	f.pod("w1", "a").CPU("500m").Mem("1Gi").Label("app", "web")
	f.pod("w2", "b").CPU("500m").Mem("1Gi").Label("app", "web")
	f.pod("big", "c").CPU("3").Mem("1Gi").Annotate(api.AnnotationDoNotDisrupt, "true")
	b := &policyv1.PodDisruptionBudget{}
	b.Name, b.Namespace = "web", "default"
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	b.Status.DisruptionsAllowed = 1
	f.snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{b}
	p := f.plan()
	if len(p.Actions) != 1 || keptAs(p, "b") != api.KeepPDB {
		t.Errorf("actions %+v, kept %+v", p.Actions, p.Kept)
	}
}

// TestDisruptCandidateWait: without the candidate annotation nothing is removed, the plan names
// the candidates; once they have been candidates for consolidateAfter, the action comes.
func TestDisruptCandidateWait(t *testing.T) {
	build := func(since string) *fleet {
		f := newFleet(t)
		f.opts.IgnoreCandidateWait = false
		for _, n := range []string{"a", "b"} {
			node := f.node(n, "general", "m7i.xlarge", api.OnDemand)
			if since != "" {
				node.Annotations = map[string]string{api.AnnotationCandidateSince: since}
			}
		}
		f.pod("pa", "a").CPU("1").Mem("2Gi")
		f.pod("pb", "b").CPU("2").Mem("2Gi")
		return f
	}
	p := build("").plan()
	if len(p.Actions) != 0 || strings.Join(p.Candidates, ",") != "a" || keptAs(p, "a") != api.KeepNotCandidateLongEnough {
		t.Fatalf("first decision: actions %+v, candidates %v, a kept as %q", p.Actions, p.Candidates, keptAs(p, "a"))
	}
	p = build(dNow.Add(-5 * time.Minute).Format(time.RFC3339)).plan()
	if len(p.Actions) != 1 || strings.Join(p.Candidates, ",") != "a" {
		t.Errorf("after the wait: actions %+v, candidates %v", p.Actions, p.Candidates)
	}
}

// TestDisruptMaxActions: the caller may bound the actions of a decision; what is left waits with
// reason Budget.
func TestDisruptMaxActions(t *testing.T) {
	f := newFleet(t)
	f.opts.MaxActions = 1
	f.node("idle-cpu", "general", "m7i.xlarge", api.OnDemand)
	f.node("idle-gpu", "gpu", "g6.xlarge", api.Spot)
	f.node("od", "gpu", "g6.xlarge", api.OnDemand)
	f.pod("infer", "od").CPU("2").Mem("8Gi").GPU(1)
	p := f.plan()
	if len(p.Actions) != 1 || keptAs(p, "od") != api.KeepBudget {
		t.Errorf("actions %+v, od kept as %q", p.Actions, keptAs(p, "od"))
	}
}

// TestDisruptDeleteTightestFirst: x's pods fit on the other nodes one way only: big (1500m) on
// d, the tighter node (1600m free), mid (1100m) and mid2 (1000m) on b (2100m free). First fit
// in name order puts big on b, and mid2 then finds no place; the second try, tightest node
// first, finds the fit, and x goes.
func TestDisruptDeleteTightestFirst(t *testing.T) {
	f := newFleet(t)
	f.pol = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceTypes: [m7i.xlarge]
  disruption: {budgets: [{nodes: "100%"}]}
`
	var alloc int64
	for _, n := range []string{"b", "d", "x"} {
		alloc = f.node(n, "general", "m7i.xlarge", api.OnDemand).Status.Allocatable.Cpu().MilliValue()
	}
	milli := func(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }
	f.pod("fill-b", "b").CPU(milli(alloc - 2100)).Mem("512Mi")
	f.pod("fill-d", "d").CPU(milli(alloc - 1600)).Mem("512Mi")
	f.pod("big", "x").CPU("1500m").Mem("512Mi")
	f.pod("mid", "x").CPU("1100m").Mem("512Mi")
	f.pod("mid2", "x").CPU("1000m").Mem("512Mi")
	p := f.plan()
	if a := actionOf(p, "x"); a == nil || a.Kind != api.ActionDelete {
		t.Fatalf("x: %+v, kept as %q", a, keptAs(p, "x"))
	}
	for pod, want := range map[string]string{"big": "d", "mid": "b", "mid2": "b"} {
		if got := destination(p, pod); got != want {
			t.Errorf("%s moves to %q, want %q", pod, got, want)
		}
	}
}
