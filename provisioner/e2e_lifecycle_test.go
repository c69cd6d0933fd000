package provisioner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// expirePolicy expires the pool's nodes 20 s after creation; consolidation is off, so that only
// expiry moves work.
const expirePolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: short
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    expireAfter: 20s
`

// testNodeExpiry: a node past its pool's expireAfter is replaced through the disruption
// mechanism that consolidation uses (simulator.PlanDisruption's Expired reason carried out by the
// same executor): the replacement is launched and Ready before the old node is cordoned, the
// PodDisruptionBudget (maxUnavailable 1) holds during the whole run, every pod ends Ready on the
// replacement, and the cloud's instances match the Nodes (the lifecycle watch).
func testNodeExpiry(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "expiry", "expiry"
	e.namespace(ns)
	e.applyPolicy("policy", expirePolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("500m").Mem("1Gi").Obj()
	e.deployment(ns, app, 2, tmpl)
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	e.waitAppReady(ns, app, 2, 60*time.Second)
	nodes := e.managedNodes()
	if len(nodes) != 1 {
		t.Fatalf("nodes %v for 2 small pods, want one m7i.large", names(nodes))
	}
	old := nodes[0].Name
	launches := e.launches()
	watch := e.watchAvailability(ns, app, 2)
	lw := e.watchLifecycle(ns)
	nw := e.watchNodes()
	start := time.Now()
	testwait.Until(t, testwait.Slow, "the expired node to be replaced", 90*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 1 && nodes[0].Name != old && len(e.records()) == 1
	})
	events := nw.finish()
	repl := e.managedNodes()[0].Name
	pods := e.waitAppReady(ns, app, 2, 30*time.Second)
	missing, seen := watch.finish()
	t.Logf("node %s expired and was replaced by %s %.1fs after the pods were Ready (%d availability events)", old, repl, time.Since(start).Seconds(), seen)
	if missing > 1 {
		t.Errorf("%d pods unavailable at once; the PDB allows 1", missing)
	}
	readyBeforeCordon(t, events, old, repl)
	for _, p := range pods {
		if p.Spec.NodeName != repl {
			t.Errorf("pod %s is on %s, want the replacement %s", p.Name, p.Spec.NodeName, repl)
		}
	}
	if got := e.launches() - launches; got < 1 {
		t.Errorf("%d launches since the pods were Ready, want the replacement", got)
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// blockPolicy buys m7i.large on-demand in one zone, first on the capacity block cr-0block of two
// nodes, which ends at end and drains for an hour before; the pool's budget allows no disruption
// at all, and consolidation is off.
func blockPolicy(end time.Time) string {
	return `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: block
  instanceTypes: [m7i.large]
  zones: [us-east-1a]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    budgets: [{nodes: "0"}]
  reservations:
  - {id: cr-0block, instanceType: m7i.large, zone: us-east-1a, count: 2, pricePerHour: 0,
     endsAt: "` + end.UTC().Format(time.RFC3339) + `", drainBefore: 1h}
`
}

// testReservationForcedBeforeTheEnd: a pod annotated tiler.dev/do-not-disrupt runs on a node of a
// capacity block whose pool has a terminationGracePeriod of an hour; the block ends 30 min 40 s
// after the test starts and drains from 30 min 30 s before its end. The node is replaced as
// ReservationEnding, and its drain's force-after is not an hour after the drain began but
// policy.ReservationTerminationLead before the block's end (to the second), when EC2 starts ending
// the block's instances: the pod is deleted by then (not evicted) and comes back off the block;
// no pod lost, no instance leaked.
func testReservationForcedBeforeTheEnd(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "blockforce", "pinned"
	e.namespace(ns)
	end := time.Now().Add(policy.ReservationTerminationLead + 40*time.Second).Truncate(time.Second)
	pol := strings.Replace(blockPolicy(end), "drainBefore: 1h", "drainBefore: 30m30s", 1)
	pol = strings.Replace(pol, "    consolidation: never\n", "    consolidation: never\n    terminationGracePeriod: 1h\n", 1)
	e.applyPolicy("policy", pol)
	two := int64(2)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Annotate(api.AnnotationDoNotDisrupt, "true").Obj()
	tmpl.Spec.TerminationGracePeriodSeconds = &two
	e.deployment(ns, app, 1, tmpl)
	first := e.waitAppReady(ns, app, 1, time.Minute)[0]
	old := map[string]bool{first.Spec.NodeName: true}
	if n := e.managedNodes(); len(n) != 1 || n[0].Labels[api.LabelCapacityReservation] != "cr-0block" {
		t.Fatalf("nodes %v: want one, on the block cr-0block", names(n))
	}
	lw := e.watchLifecycle(ns)
	lw.expectForced(labels.SelectorFromSet(labels.Set{"app": app}))
	var forceAfter string
	testwait.Until(t, testwait.Slow, "the block's node draining with its force-after", 90*time.Second, func() bool {
		for _, n := range e.managedNodes() {
			if old[n.Name] && n.Annotations[api.AnnotationDisruptionStep] == api.DisruptionStepDraining {
				forceAfter = n.Annotations[api.AnnotationDisruptionForceAfter]
				return forceAfter != ""
			}
		}
		return false
	})
	if want := end.Add(-policy.ReservationTerminationLead).UTC().Format(time.RFC3339); forceAfter != want {
		t.Errorf("force-after %s, want the block's end less %s: %s", forceAfter, policy.ReservationTerminationLead, want)
	}
	e.waitReplaced("the block's node replaced past its do-not-disrupt pod", old, 1)
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) > 0 || len(lost) > 0 {
		t.Errorf("evicted %v, lost with the node %v: want the pod deleted past its annotation", evicted, lost)
	}
	if forced := lw.forcedPods(); len(forced) != 1 || forced[0].Name != first.Name {
		t.Errorf("deleted past their hold: %d pods, want %s", len(forced), first.Name)
	}
	if p := e.waitAppReady(ns, app, 1, 30*time.Second)[0]; old[p.Spec.NodeName] {
		t.Errorf("pod back on the old node %s", p.Spec.NodeName)
	}
	for _, n := range e.managedNodes() {
		if id := n.Labels[api.LabelCapacityReservation]; id != "" {
			t.Errorf("replacement %s is on reservation %s, want open capacity", n.Name, id)
		}
	}
	e.cleanupNamespace(ns)
}

// testReservationEnding: two pods, one per node, run on the two nodes of a capacity block under a
// PodDisruptionBudget (maxUnavailable 1). When the block's drain begins (an hour before its end,
// here 30 s after the start of the test), both nodes are replaced as ReservationEnding, though the
// pool's budget allows no disruption: each replacement is off the block and Ready before its old
// node is cordoned, the Disrupting Events name the block, and the lifecycle watch sees the two
// pods evicted, none lost, the budget held and no instance leaked.
func testReservationEnding(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "block", "trainer"
	e.namespace(ns)
	drain := time.Now().Add(30 * time.Second)
	e.applyPolicy("policy", blockPolicy(drain.Add(time.Hour)))
	e.deployment(ns, app, 2, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").
		AntiAffinity(corev1.LabelHostname, app).Obj())
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	old := map[string]bool{}
	for _, p := range e.waitAppReady(ns, app, 2, time.Minute) {
		old[p.Spec.NodeName] = true
	}
	nodes := e.managedNodes()
	if len(old) != 2 || len(nodes) != 2 {
		t.Fatalf("pods on %v, nodes %v: want one pod on each of two nodes", old, names(nodes))
	}
	for _, n := range nodes {
		if n.Labels[api.LabelCapacityReservation] != "cr-0block" {
			t.Fatalf("node %s labelled %q, want it on the block cr-0block", n.Name, n.Labels[api.LabelCapacityReservation])
		}
	}
	if time.Now().After(drain) {
		t.Fatalf("the pods were Ready %s after the block's drain began; the test needs them before", time.Since(drain))
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	nw := e.watchNodes()
	e.waitReplaced("both nodes of the ending block replaced", old, 2)
	events := nw.finish()
	t.Logf("the block's drain began; both nodes replaced %.1fs later", time.Since(drain).Seconds())
	for _, n := range e.managedNodes() {
		if id := n.Labels[api.LabelCapacityReservation]; id != "" {
			t.Errorf("replacement %s is on reservation %s, want open capacity", n.Name, id)
		}
	}
	e.checkRolled(events, old, "capacity reservation cr-0block ends at", launches, "the drain began")
	testwait.Until(t, testwait.Slow, "tiler_disruption_actions_total{kind=Replace,reason=ReservationEnding} = 2", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionActions.WithLabelValues(string(api.ActionReplace), string(api.ReasonReservationEnding))) == 2
	})
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// repairPolicy buys g4dn.12xlarge (4 × T4) on-demand in one zone: the pool has one offering, so a
// repair that penalised it (marked it unavailable) could buy no replacement at all. Missing GPUs
// are repaired after 5 s; the repair budget is the default 10 % (of two nodes: one at a time), and
// repair.maxUnhealthy the default 20 % (of two nodes: one may show a health signal) or, with
// wide, 100 %.
func repairPolicy(wide bool) string {
	if wide {
		return repairPolicyDefaults + "      maxUnhealthy: \"100%\"\n"
	}
	return repairPolicyDefaults
}

const repairPolicyDefaults = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: repair
  instanceTypes: [g4dn.12xlarge]
  zones: [us-east-1a]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    repair:
      gracePeriod: 5s
`

// testRepairOnGPULoss: two g4dn.12xlarge nodes run a 4-GPU pod each under a PodDisruptionBudget
// (maxUnavailable 1); the simulated device plugin then reports every GPU of both unhealthy
// (allocatable nvidia.com/gpu 0 of 4). The controller marks both tiler.dev/unhealthy-since. Two
// of two nodes sick is more than the default repair.maxUnhealthy (20 %) allows: past the grace
// period both are held (TooManyUnhealthy, a DisruptionBlocked Event) and nothing is bought over
// three planning passes. Once the policy allows it (maxUnhealthy 100 %), the controller
// replaces them through the disruption executor
// (reason Unhealthy): replacement Ready first, the pod moved, the instance deleted — one node at a
// time (the repair budget), each with exactly one launch of the same offering (not penalised).
// The lifecycle watch checks the budget, that no pod is lost and no instance leaks.
func testRepairOnGPULoss(t *testing.T, cp *controlplane.ControlPlane) {
	const grace = 5 * time.Second
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ctx := context.Background()
	ns, app := "repair", "trainer"
	e.namespace(ns)
	e.applyPolicy("policy", repairPolicy(false))
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("4").Mem("16Gi").GPU(4).Obj()
	e.deployment(ns, app, 2, tmpl)
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	pods := e.waitAppReady(ns, app, 2, 2*time.Minute)
	sick := map[string]string{} // node → instance
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var offering api.Offering
	for _, p := range pods {
		for _, i := range insts {
			if i.NodeName == p.Spec.NodeName {
				sick[i.NodeName], offering = i.ID, i.Offering
			}
		}
	}
	if len(sick) != 2 {
		t.Fatalf("pods on %v, want two nodes", sick)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	for _, id := range sick {
		if err := e.cloud.InjectGPUFault(id, sim.GPUFaultLost); err != nil {
			t.Fatal(err)
		}
	}
	since := map[string]time.Time{}
	testwait.Until(t, testwait.Slow, "both nodes marked "+api.AnnotationUnhealthySince, 60*time.Second, func() bool {
		for _, n := range e.managedNodes() {
			if _, ok := sick[n.Name]; ok {
				if v, ok := n.Annotations[api.AnnotationUnhealthySince]; ok {
					since[n.Name], _ = time.Parse(time.RFC3339, v)
				}
			}
		}
		return len(since) == 2
	})
	// A fault on every node of the pool: held, not repaired.
	held := func() float64 {
		return gaugeValue(t, e.metrics.DisruptionHeld.WithLabelValues(string(api.ReasonUnhealthy), string(api.KeepTooManyUnhealthy)))
	}
	testwait.Until(t, testwait.Slow, "both nodes held (tiler_disruption_held_nodes{Unhealthy,TooManyUnhealthy} = 2)", time.Minute,
		func() bool { return held() == 2 })
	passes.waitMorePlans(t, "while the fault is wide", 3)
	if got := e.launches() - launches; got != 0 || held() != 2 {
		t.Errorf("while the fault is wide: %d launches, %v held; want 0, 2", got, held())
	}
	for n := range sick {
		e.waitEventOn(n, "DisruptionBlocked", "2 of pool repair's 2 nodes show a health signal, more than its repair.maxUnhealthy (20%: 1)", 30*time.Second)
	}
	e.applyPolicy("policy", repairPolicy(true))
	testwait.Until(t, testwait.Slow, "both unhealthy nodes replaced", 3*time.Minute, func() bool {
		nodes := e.managedNodes()
		for _, n := range nodes {
			if _, ok := sick[n.Name]; ok {
				return false
			}
		}
		return len(nodes) == 2
	})
	after := e.waitAppReady(ns, app, 2, 30*time.Second)
	for _, p := range after {
		if _, ok := sick[p.Spec.NodeName]; ok {
			t.Errorf("pod %s still on the unhealthy node %s", p.Name, p.Spec.NodeName)
		}
	}
	for _, n := range e.managedNodes() {
		if _, ok := n.Annotations[api.AnnotationUnhealthySince]; ok {
			t.Errorf("replacement %s is marked %s", n.Name, api.AnnotationUnhealthySince)
		}
	}
	insts, _ = e.cloud.List(ctx)
	for _, i := range insts {
		if i.Offering != offering {
			t.Errorf("replacement %s is %+v, want the unhealthy nodes' offering %+v (a host fault does not penalise it)", i.NodeName, i.Offering, offering)
		}
	}
	if got := e.launches() - launches; got != 2 {
		e.explainPurchases()
		t.Errorf("%d launches for two repairs, want two", got)
	}
	// The grace period held, and the repair budget: never two repairs under way at once.
	started := map[string]time.Time{}
	for _, p := range passes.all() {
		open := 0
		for _, a := range p.Actions {
			if a.Reason == api.ReasonUnhealthy && a.Step != provisioner.ActionDone && a.Step != provisioner.ActionAbandoned {
				open++
			}
		}
		if p.Plan != nil {
			for _, a := range p.Plan.Actions {
				if a.Reason == api.ReasonUnhealthy && slices.Contains(p.Started, a.ID) {
					open++
					for _, n := range a.Nodes {
						started[n] = p.Now
					}
				}
			}
		}
		if open > 1 {
			t.Errorf("pass at %s: %d repairs under way, the repair budget (10%% of 2 nodes) allows 1", p.Now.Format(time.RFC3339Nano), open)
		}
	}
	for n, at := range started {
		if wait := at.Sub(since[n]); wait < grace {
			t.Errorf("node %s repaired %s after it was marked unhealthy, before the %s grace period", n, wait, grace)
		}
	}
	if len(started) != 2 {
		t.Errorf("repairs started for %v, want both unhealthy nodes", started)
	}
	// The pass that deleted the last instance counts its action once the deletion is done.
	testwait.Until(t, testwait.Slow, "tiler_disruption_actions_total{kind=Replace,reason=Unhealthy} = 2", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionActions.WithLabelValues(string(api.ActionReplace), string(api.ReasonUnhealthy))) == 2
	})
	for n := range sick {
		e.waitEventOn(n, "Disrupting", string(api.ReasonUnhealthy), 10*time.Second)
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// driftPolicy is a pool of m7i.large whose nodes carry the label tier=<tier>; one 1500m pod fits
// a node.
func driftPolicy(tier string) string {
	return `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: drift
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  labels:
    tier: ` + tier + `
  disruption:
    consolidation: never
    budgets:
    - nodes: "1"
`
}

// waitReplaced waits up to three minutes until none of the old nodes is left and the cluster has
// n managed nodes.
func (e *env) waitReplaced(what string, old map[string]bool, n int) {
	e.t.Helper()
	testwait.Until(e.t, testwait.Slow, what, 3*time.Minute, func() bool {
		nodes := e.managedNodes()
		for _, n := range nodes {
			if old[n.Name] {
				return false
			}
		}
		return len(nodes) == n
	})
}

// testDriftAfterPolicyChange: three m7i.large nodes of a pool labelled tier=a run two pods of a
// Deployment under a PodDisruptionBudget (maxUnavailable 1) and one pod annotated
// tiler.dev/do-not-disrupt. The pool's label becomes tier=b in the policy ConfigMap: the two
// nodes of the Deployment drift and are replaced one at a time (the pool's budget: 1) through the
// disruption executor — each replacement Ready, carrying tier=b, before its old node is cordoned —
// with Disrupting Events and the tiler_disruption_actions_total metric saying Drifted; the node of
// the do-not-disrupt pod is kept (a DisruptionBlocked Event says why) and carries the
// disruption-candidate taint, which steers pods elsewhere while it waits. The lifecycle watch checks
// the budget, do-not-disrupt, no pod lost, no instance leaked; two launches in all.
func testDriftAfterPolicyChange(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app, pinned := "drift", "web", "pinned"
	e.namespace(ns)
	e.applyPolicy("policy", driftPolicy("a"))
	e.deployment(ns, app, 2, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj())
	e.deployment(ns, pinned, 1, simtest.Pod("t").Namespace(ns).Label("app", pinned).CPU("1500m").Mem("1Gi").
		Annotate(api.AnnotationDoNotDisrupt, "true").Obj())
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	webPods := e.waitAppReady(ns, app, 2, 2*time.Minute)
	pinnedNode := e.waitAppReady(ns, pinned, 1, time.Minute)[0].Spec.NodeName
	old := map[string]bool{}
	for _, p := range webPods {
		old[p.Spec.NodeName] = true
	}
	if len(old) != 2 || old[pinnedNode] || len(e.managedNodes()) != 3 {
		t.Fatalf("web pods on %v, pinned pod on %s: want three nodes, one pod each", old, pinnedNode)
	}
	testwait.Until(t, testwait.Slow, "every node carrying "+api.AnnotationPoolHash, 30*time.Second, func() bool {
		for _, n := range e.managedNodes() {
			if n.Annotations[api.AnnotationPoolHash] == "" {
				return false
			}
		}
		return true
	})
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	nw := e.watchNodes()
	start := time.Now()
	e.applyPolicy("policy", driftPolicy("b"))
	e.waitReplaced("both drifted web nodes replaced", old, 3)
	events := nw.finish()
	t.Logf("policy change → both drifted nodes replaced: %.1fs", time.Since(start).Seconds())
	var repl []string
	for _, n := range e.managedNodes() {
		switch {
		case n.Name == pinnedNode:
			if n.Labels["tier"] != "a" {
				t.Errorf("the do-not-disrupt pod's node %s has tier=%q, want it kept as it was (a)", n.Name, n.Labels["tier"])
			}
		case n.Labels["tier"] != "b":
			t.Errorf("replacement %s has tier=%q, want b", n.Name, n.Labels["tier"])
		default:
			repl = append(repl, n.Name)
		}
	}
	// Each old node is cordoned only once some replacement is Ready.
	for o := range old {
		readyBeforeCordon(t, events, o, repl...)
	}
	for _, p := range e.waitAppReady(ns, app, 2, 30*time.Second) {
		if !slices.Contains(repl, p.Spec.NodeName) {
			t.Errorf("web pod %s on %s, want a replacement %v", p.Name, p.Spec.NodeName, repl)
		}
	}
	if got := e.appPods(ns, pinned); len(got) != 1 || got[0].Spec.NodeName != pinnedNode {
		t.Errorf("the do-not-disrupt pod moved: %v", got)
	}
	if got := e.launches() - launches; got != 2 {
		e.explainPurchases()
		t.Errorf("%d launches after the policy change, want the two replacements", got)
	}
	// The pass that deleted the last instance counts its action once the deletion is done.
	testwait.Until(t, testwait.Slow, "tiler_disruption_actions_total{kind=Replace,reason=Drifted} = 2", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionActions.WithLabelValues(string(api.ActionReplace), string(api.ReasonDrifted))) == 2
	})
	for o := range old {
		e.waitEventOn(o, "Disrupting", string(api.ReasonDrifted), 10*time.Second)
	}
	e.waitEventOn(pinnedNode, "DisruptionBlocked", string(api.KeepPodDoNotDisrupt), 30*time.Second)
	// The pinned node is due (drifted) and held by its pod, and the metric says so.
	testwait.Until(t, testwait.Slow, "tiler_disruption_held_nodes{reason=Drifted,held_by=PodDoNotDisrupt} = 1", 30*time.Second, func() bool {
		return gaugeValue(t, e.metrics.DisruptionHeld.WithLabelValues(string(api.ReasonDrifted), string(api.KeepPodDoNotDisrupt))) == 1
	})
	// Held, it carries the candidate taint: new pods and replicas go elsewhere when they can.
	testwait.Until(t, testwait.Slow, "the held drifted node "+pinnedNode+" tainted "+api.TaintDisruptionCandidate, 10*time.Second, func() bool {
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), pinnedNode, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool {
			return x.Key == api.TaintDisruptionCandidate && x.Effect == corev1.TaintEffectPreferNoSchedule
		})
	})
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two web pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// testDriftSeveralReplacements: the pool buys m7i.xlarge only, and one such node runs the two
// 1500m pods of a Deployment under a PodDisruptionBudget (maxUnavailable 1). The policy narrows
// the pool to m7i.large, which holds one pod: the node drifts, and no single new node can take its
// pods, so the action launches two replacements, and the old node is cordoned only once both are
// Ready. Each pod lands on its own replacement; two launches in all; the lifecycle watch checks
// the budget, no pod lost, no instance leaked. Before, the node was kept for ever
// (NoReplacement).
func testDriftSeveralReplacements(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "drift-split", "web"
	policy := func(typ string) string {
		return `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: narrow
  instanceTypes: [` + typ + `]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
`
	}
	e.namespace(ns)
	e.applyPolicy("policy", policy("m7i.xlarge"))
	e.deployment(ns, app, 2, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj())
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	pods := e.waitAppReady(ns, app, 2, 2*time.Minute)
	old := pods[0].Spec.NodeName
	if pods[1].Spec.NodeName != old || len(e.managedNodes()) != 1 {
		t.Fatalf("pods on %s and %s: want one m7i.xlarge", old, pods[1].Spec.NodeName)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	nw := e.watchNodes()
	e.applyPolicy("policy", policy("m7i.large"))
	e.waitReplaced("the drifted m7i.xlarge replaced", map[string]bool{old: true}, 2)
	events := nw.finish()
	// The pass that deleted the instance reports the action done once the deletion is.
	var action *provisioner.ActionProgress
	testwait.Until(t, testwait.Slow, "the Drifted action reported done", 10*time.Second, func() bool {
		for _, p := range passes.all() {
			for i, a := range p.Actions {
				if a.Reason == api.ReasonDrifted && a.Step == provisioner.ActionDone {
					action = &p.Actions[i]
				}
			}
		}
		return action != nil
	})
	repl := strings.Split(action.Replacement, ",")
	if len(repl) != 2 {
		t.Fatalf("action %+v: want two replacements", action)
	}
	for _, r := range repl {
		readyBeforeCordon(t, events, old, r)
	}
	on := map[string]int{}
	for _, p := range e.waitAppReady(ns, app, 2, 30*time.Second) {
		on[p.Spec.NodeName]++
	}
	for _, r := range repl {
		if on[r] != 1 {
			t.Errorf("pods per node %v: want one on each replacement %v", on, repl)
		}
	}
	for _, n := range e.managedNodes() {
		if n.Labels[corev1.LabelInstanceTypeStable] != "m7i.large" {
			t.Errorf("node %s is %s, want m7i.large", n.Name, n.Labels[corev1.LabelInstanceTypeStable])
		}
	}
	if got := e.launches() - launches; got != 2 {
		e.explainPurchases()
		t.Errorf("%d launches after the policy change, want the two replacements", got)
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two web pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// testImageDrift: the operator rolls the fleet onto a new image by restarting the controller with
// it (as --aws-image-id or --sim-image would). Two m7i.large nodes booted from img-1 run the two
// pods of a Deployment under a PodDisruptionBudget (maxUnavailable 1); one node's launch record
// does not know its image, as a record an older controller wrote. The restarted controller's
// Recover learns that image from the cloud, and both nodes are replaced as Drifted, one action at
// a time (the pool's budget: 1), each replacement booted from img-2 and Ready before its old node
// is cordoned; the Disrupting Events say which image. The lifecycle watch checks the budget, no
// pod lost and no instance leaked; two launches in all. Then the operator changes the other launch
// settings (as a new security group or instance profile would): both nodes roll again the same
// way, a record without settings learning them from the cloud, and the Events say which settings.
func testImageDrift(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), func(c *sim.Config) { c.Image, c.LaunchSettings = "img-1", "s-1" })
	ns, app := "image-drift", "web"
	e.namespace(ns)
	e.applyPolicy("policy", driftPolicy("a"))
	e.deployment(ns, app, 2, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj())
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	old := map[string]bool{}
	for _, p := range e.waitAppReady(ns, app, 2, 2*time.Minute) {
		old[p.Spec.NodeName] = true
	}
	if len(old) != 2 || len(e.managedNodes()) != 2 {
		t.Fatalf("web pods on %v: want two nodes, one pod each", old)
	}
	recs := e.records()
	for _, r := range recs {
		if r.Image != "img-1" {
			t.Fatalf("record %s: image %q, want img-1 (from the cloud's answer to the launch)", r.LaunchID, r.Image)
		}
	}
	e.stopAndWait()
	records := e.dyn.Resource(provisioner.LaunchRecordsResource).Namespace(e.cfg.Namespace)
	obj, err := records.Get(context.Background(), recs[0].LaunchID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(obj.Object, "status", "image")
	if _, err := records.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	nw := e.watchNodes()
	start := time.Now()
	e.simCfg.Image = "img-2"
	e.start()
	e.waitReplaced("both nodes booted from img-1 replaced", old, 2)
	events := nw.finish()
	t.Logf("image change → both nodes replaced: %.1fs", time.Since(start).Seconds())
	// The old nodes' records go last (instance, Node, then record).
	e.waitRecordsOn("img-2", 2)
	repl := e.checkRolled(events, old, "booted from image img-1; its nodes now boot from img-2", launches, "the image change")
	for _, p := range passes.all() {
		if len(p.Started) > 1 {
			t.Errorf("a pass started %v: the pool's budget allows one node at a time", p.Started)
		}
	}
	testwait.Until(t, testwait.Slow, "tiler_disruption_actions_total{kind=Replace,reason=Drifted} = 2", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionActions.WithLabelValues(string(api.ActionReplace), string(api.ReasonDrifted))) == 2
	})

	// The launch settings change.
	e.stopAndWait()
	recs = e.records()
	for _, r := range recs {
		if r.Settings != "s-1" {
			t.Fatalf("record %s: settings %q, want s-1 (from the cloud's answer to the launch)", r.LaunchID, r.Settings)
		}
	}
	if obj, err = records.Get(context.Background(), recs[1].LaunchID, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(obj.Object, "status", "settings")
	if _, err := records.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old = map[string]bool{}
	for _, n := range repl {
		old[n] = true
	}
	launches = e.launches()
	nw = e.watchNodes()
	e.simCfg.LaunchSettings = "s-2"
	e.start()
	e.waitReplaced("both nodes launched with settings s-1 replaced", old, 2)
	events = nw.finish()
	e.waitRecordsWith("launched with settings s-2", 2, func(r provisioner.LaunchRecord) bool { return r.Settings == "s-2" && r.Image == "img-2" })
	e.checkRolled(events, old, "launched with settings s-1; its nodes now launch with s-2", launches, "the settings change")
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 4 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the two web pods evicted twice, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// rollPolicy buys g4dn.12xlarge (4 × T4) on-demand in one zone and replaces one node at a time;
// repair is off (budget 0) unless repair is set, so that a node broken by a bad image stays for
// the test to see.
func rollPolicy(repair bool) string {
	doc := `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: roll
  instanceTypes: [g4dn.12xlarge]
  zones: [us-east-1a]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    budgets:
    - nodes: "1"
`
	if !repair {
		doc += "    repair:\n      budget: \"0\"\n"
	}
	return doc
}

// testImageRollPausedOnBadImage: three GPU nodes booted from img-1 run a 4-GPU pod each under a
// PodDisruptionBudget (maxUnavailable 1). The fleet is rolled onto img-2, whose GPU driver throws
// XID errors (AcceleratedHardwareReady=False on every node booted from it). The first node is
// replaced (the canary); its replacement turns unhealthy, and the roll pauses: the two other old
// nodes are kept (RollPaused, tiler_disruption_held_nodes{Drifted,RollPaused} = 2, a
// DisruptionBlocked Event naming the canary) and no further node is bought over several planning
// passes. Rolled onto a good image (img-3, repair back on), the fleet ends on it. The lifecycle
// watch checks the budget, no pod lost and no instance leaked throughout.
func testImageRollPausedOnBadImage(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), func(c *sim.Config) { c.Image = "img-1" })
	ns, app := "roll-paused", "trainer"
	e.applyPolicy("policy", rollPolicy(false))
	old := e.appUnderPDB(ns, app, 3, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("4").Mem("16Gi").GPU(4).Obj())
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	e.cloud.SetImageFault("img-2", sim.GPUFaultXID)
	e.cloud.SetImage("img-2")
	testwait.Until(t, testwait.Slow, "the roll paused on the two old nodes left (tiler_disruption_held_nodes{Drifted,RollPaused} = 2)", 2*time.Minute,
		func() bool { return e.rollHeld() == 2 })
	var canary string
	for _, r := range e.records() {
		if r.Image == "img-2" {
			canary = r.NodeName
		}
	}
	if canary == "" || e.launches()-launches != 1 {
		t.Fatalf("canary %q, %d launches since the image change; want one node booted from img-2", canary, e.launches()-launches)
	}
	// Paused: several more planning passes buy nothing and leave both old nodes.
	e.staysPaused("while paused", passes, old, launches, 1)
	for o := range old {
		if o != canary && slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Name == o }) {
			e.waitEventOn(o, "DisruptionBlocked", "the roll onto image img-2 is paused: node "+canary, 30*time.Second)
			break
		}
	}
	// A good image, and repair back on: the fleet ends on img-3.
	e.cloud.SetImage("img-3")
	e.applyPolicy("policy", rollPolicy(true))
	old[canary] = true
	e.waitReplaced("every node booted from img-1 or img-2 replaced", old, 3)
	e.waitRecordsOn("img-3", 3)
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("lost %v with the nodes; want none", lost)
	}
	e.cleanupNamespace(ns)
}

// testImageThatDoesNotBoot: two m7i.large nodes booted from img-1 run two pods under a
// PodDisruptionBudget (maxUnavailable 1). The fleet is rolled onto img-2, whose instances never
// register. The first replacement is abandoned at the registration timeout and img-2 is
// remembered as failed (the ConfigMap tiler-failed-images, an ImageFailed Event,
// tiler_disruption_failed_images 1): no other replacement is launched over several planning
// passes, and both old nodes stay, held as RollPaused. A restarted controller, whose cloud would
// now boot img-2, keeps the roll paused from the ConfigMap alone. Once an operator deletes the
// ConfigMap the roll goes on, and both nodes end on img-2 with no pod lost.
func testImageThatDoesNotBoot(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := disruptionConfig()
	cfg.RegistrationTimeout = 5 * time.Second
	e, passes := newDisruptionEnv(t, cp, cfg, func(c *sim.Config) { c.Image = "img-1" })
	ns, app := "image-no-boot", "web"
	e.applyPolicy("policy", driftPolicy("a"))
	old := e.appUnderPDB(ns, app, 2, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj())
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	e.cloud.SetImageNeverRegisters("img-2")
	e.cloud.SetImage("img-2")
	remembered := func() string {
		cm, err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Get(context.Background(), provisioner.FailedImagesConfigMap, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data["failures.json"]
	}
	testwait.Until(t, testwait.Slow, "img-2 remembered as failed in ConfigMap "+provisioner.FailedImagesConfigMap, time.Minute,
		func() bool { return strings.Contains(remembered(), `"image": "img-2"`) })
	testwait.Until(t, testwait.Slow, "both old nodes held (tiler_disruption_held_nodes{Drifted,RollPaused} = 2)", 30*time.Second,
		func() bool { return e.rollHeld() == 2 })
	if !strings.Contains(remembered(), "did not register within 5s") {
		t.Errorf("the failure says %s; want the registration timeout", remembered())
	}
	if got := counterValue(t, e.metrics.DisruptionAbandoned.WithLabelValues(string(api.ActionReplace), string(api.ReasonDrifted))); got != 1 {
		t.Errorf("%v actions abandoned, want the first replacement's", got)
	}
	if got := gaugeValue(t, e.metrics.FailedImages); got != 1 {
		t.Errorf("tiler_disruption_failed_images %v, want 1", got)
	}
	e.staysPaused("paused", passes, old, launches, 1)
	for o := range old {
		e.waitEventOn(o, "DisruptionBlocked", "the roll onto image img-2 is paused: it failed before: launch", 30*time.Second)
	}
	// A restart whose cloud would boot img-2: the ConfigMap alone keeps the roll paused.
	e.stopAndWait()
	e.simCfg.Image = "img-2"
	e.start()
	testwait.Until(t, testwait.Slow, "the restarted controller holds both old nodes", 30*time.Second, func() bool { return e.rollHeld() == 2 })
	e.staysPaused("after a restart", passes, old, launches, 1)
	// The operator clears the memory: the roll goes on.
	if err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Delete(context.Background(), provisioner.FailedImagesConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitReplaced("both nodes booted from img-1 replaced", old, 2)
	e.waitRecordsOn("img-2", 2)
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("lost %v with the nodes; want none", lost)
	}
	e.cleanupNamespace(ns)
}

// testImageRemembersRepairedCanary: three GPU nodes booted from img-1 run a 4-GPU pod each under
// a PodDisruptionBudget (maxUnavailable 1), repair on, and are rolled onto img-2. Its first node
// (the canary) throws XID errors soon after it is Ready: img-2 is remembered as failed (the
// node was younger than --image-probation, 40 s here), and the canary is repaired onto a healthy
// img-2 node. The roll stays paused though every node on img-2 is healthy now, and resumes by
// itself once the probation has passed since the failure: the fleet ends on img-2, no pod lost.
func testImageRemembersRepairedCanary(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := disruptionConfig()
	cfg.ImageProbation = 40 * time.Second
	e, passes := newDisruptionEnv(t, cp, cfg, func(c *sim.Config) { c.Image = "img-1" })
	ns, app := "roll-remembered", "trainer"
	e.applyPolicy("policy", rollPolicy(true))
	old := e.appUnderPDB(ns, app, 3, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("4").Mem("16Gi").GPU(4).Obj())
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	e.cloud.SetImage("img-2")
	var canary, id string
	testwait.Until(t, testwait.Fast, "the first node booted from img-2 Ready", time.Minute, func() bool {
		ready := map[string]bool{}
		for _, n := range e.managedNodes() {
			ready[n.Name] = snapshot.IsNodeReady(&n)
		}
		for _, r := range e.records() {
			if r.Image == "img-2" && ready[r.NodeName] {
				canary, id = r.NodeName, r.InstanceID
				return true
			}
		}
		return false
	})
	if err := e.cloud.InjectGPUFault(id, sim.GPUFaultXID); err != nil {
		t.Fatal(err)
	}
	injected := time.Now()
	testwait.Until(t, testwait.Slow, "img-2 remembered as failed on "+canary, 30*time.Second, func() bool {
		cm, err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Get(context.Background(), provisioner.FailedImagesConfigMap, metav1.GetOptions{})
		return err == nil && strings.Contains(cm.Data["failures.json"], `"node": "`+canary+`"`)
	})
	testwait.Until(t, testwait.Slow, "the canary repaired", time.Minute, func() bool {
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Name == canary })
	})
	// Every node on img-2 is healthy, and the roll stays paused: the canary and its repair bought.
	e.staysPaused("after the repair", passes, old, launches, 2)
	if since := time.Since(injected); since >= cfg.ImageProbation {
		t.Fatalf("the pause was checked %s after the fault, past the %s probation: the check proves nothing", since, cfg.ImageProbation)
	}
	e.waitReplaced("every node booted from img-1 replaced", old, 3)
	if since := time.Since(injected); since < cfg.ImageProbation {
		t.Errorf("the roll went on %s after the fault, within the %s probation", since, cfg.ImageProbation)
	}
	e.waitRecordsOn("img-2", 3)
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("lost %v with the nodes; want none", lost)
	}
	e.cleanupNamespace(ns)
}

// appUnderPDB creates namespace ns and a Deployment app of n pods shaped like tmpl under a
// PodDisruptionBudget (maxUnavailable 1), waits until they are Ready, one per node, and returns
// their nodes.
func (e *env) appUnderPDB(ns, app string, n int, tmpl *corev1.Pod) map[string]bool {
	e.t.Helper()
	e.namespace(ns)
	e.deployment(ns, app, int32(n), tmpl)
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	nodes := map[string]bool{}
	for _, p := range e.waitAppReady(ns, app, n, 2*time.Minute) {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != n {
		e.t.Fatalf("%s pods on %v: want %d nodes, one pod each", app, nodes, n)
	}
	return nodes
}

// rollHeld is tiler_disruption_held_nodes{Drifted,RollPaused}: the nodes a paused roll holds.
func (e *env) rollHeld() float64 {
	return gaugeValue(e.t, e.metrics.DisruptionHeld.WithLabelValues(string(api.ReasonDrifted), string(api.KeepRollPaused)))
}

// staysPaused waits for three more planning passes and checks that the roll stayed paused: want
// launches since the cloud's launch count was launches, two of the old nodes left, both held.
func (e *env) staysPaused(what string, passes *passLog, old map[string]bool, launches, want int) {
	e.t.Helper()
	passes.waitMorePlans(e.t, what, 3)
	left := 0
	for _, n := range e.managedNodes() {
		if old[n.Name] {
			left++
		}
	}
	if left != 2 || e.launches()-launches != want || e.rollHeld() != 2 {
		e.t.Errorf("%s: %d old nodes left, %d launches since the image change, %v held; want 2, %d, 2", what, left, e.launches()-launches, e.rollHeld(), want)
	}
}

// waitMorePlans waits for n more passes that made a plan than the log holds now.
func (l *passLog) waitMorePlans(t testing.TB, what string, n int) {
	t.Helper()
	planned := func() int {
		k := 0
		for _, p := range l.all() {
			if p.Plan != nil {
				k++
			}
		}
		return k
	}
	seen := planned()
	testwait.Until(t, testwait.Slow, fmt.Sprintf("%s: %d more planning passes", what, n), time.Minute, func() bool { return planned() >= seen+n })
}

// checkRolled checks a roll that replaced the old nodes one for one: each replacement (the
// managed nodes now) was Ready before each old node was cordoned, each old node has a Disrupting
// Event holding msg, and there were as many launches since launches as old nodes (since says
// since what). It returns the replacements' names.
func (e *env) checkRolled(events []nodeEvent, old map[string]bool, msg string, launches int, since string) []string {
	e.t.Helper()
	var repl []string
	for _, n := range e.managedNodes() {
		repl = append(repl, n.Name)
	}
	for o := range old {
		readyBeforeCordon(e.t, events, o, repl...)
		e.waitEventOn(o, "Disrupting", msg, 10*time.Second)
	}
	if got := e.launches() - launches; got != len(old) {
		e.explainPurchases()
		e.t.Errorf("%d launches after %s, want the %d replacements", got, since, len(old))
	}
	return repl
}

// waitRecordsOn waits until there are n launch records, all booted from image.
func (e *env) waitRecordsOn(image string, n int) {
	e.t.Helper()
	e.waitRecordsWith("booted from "+image, n, func(r provisioner.LaunchRecord) bool { return r.Image == image })
}

// waitRecordsWith waits until there are n launch records, all as ok wants (what says how).
func (e *env) waitRecordsWith(what string, n int, ok func(provisioner.LaunchRecord) bool) {
	e.t.Helper()
	testwait.Until(e.t, testwait.Slow, fmt.Sprintf("%d launch records, all %s", n, what), 30*time.Second, func() bool {
		recs := e.records()
		for _, r := range recs {
			if !ok(r) {
				return false
			}
		}
		return len(recs) == n
	})
}

// testTerminationGracePeriod: the drift of testDriftAfterPolicyChange, on a pool with a
// terminationGracePeriod of 20 s. One node runs a pod whose PodDisruptionBudget (minAvailable 1)
// never allows an eviction, the other a pod annotated tiler.dev/do-not-disrupt; without the period
// both would hold their nodes for good (as the pinned node there). Both nodes are replaced: each
// replacement Ready before its old node is cordoned; the budget and the annotation hold the drain
// until the period nearly ends — each pod is deleted no earlier than its own
// terminationGracePeriodSeconds (2 s) before the node's tiler.dev/disruption-force-after, and
// not evicted — then the pods come back on the replacements, with a DisruptionForced Event each and
// tiler_disruption_forced_deletions_total{Drifted} at 2. The lifecycle watch checks that nothing
// else broke a budget, no pod was lost and no instance leaked. The controller is restarted while
// the first node drains: its force-after does not move.
func testTerminationGracePeriod(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns := "grace"
	graced := func(tier string) string {
		return strings.Replace(driftPolicy(tier), "    consolidation: never\n", "    consolidation: never\n    terminationGracePeriod: 20s\n", 1)
	}
	e.namespace(ns)
	e.applyPolicy("policy", graced("a"))
	two := int64(2)
	tmpl := func(app string) *corev1.Pod {
		p := simtest.Pod("t").Namespace(ns).Label("app", app).Label("held", "yes").CPU("1500m").Mem("1Gi").Obj()
		p.Spec.TerminationGracePeriodSeconds = &two
		return p
	}
	pinned := tmpl("pinned")
	pinned.Annotations = map[string]string{api.AnnotationDoNotDisrupt: "true"}
	e.deployment(ns, "guarded", 1, tmpl("guarded"))
	e.deployment(ns, "pinned", 1, pinned)
	one := intstr.FromInt32(1)
	e.pdb(ns, "guarded", nil, &one)
	old := map[string]bool{}
	for _, app := range []string{"guarded", "pinned"} {
		old[e.waitAppReady(ns, app, 1, 2*time.Minute)[0].Spec.NodeName] = true
	}
	if len(old) != 2 || len(e.managedNodes()) != 2 {
		t.Fatalf("pods on %v: want two nodes, one pod each", old)
	}
	testwait.Until(t, testwait.Slow, "the budget to allow no disruption of its healthy pod", 30*time.Second, func() bool {
		pdb, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "guarded", metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 &&
			pdb.Status.DesiredHealthy == 1 && pdb.Status.DisruptionsAllowed == 0
	})
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	lw.expectForced(labels.SelectorFromSet(labels.Set{"held": "yes"}))
	nw := e.watchNodes()
	// The drain's end as the old nodes say it, read while they drain; it must never move.
	forceAfter := map[string]time.Time{}
	var moved []string
	var mu sync.Mutex
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			for _, n := range e.managedNodes() {
				if v := n.Annotations[api.AnnotationDisruptionForceAfter]; v != "" && old[n.Name] {
					at, err := time.Parse(time.RFC3339, v)
					mu.Lock()
					if first, ok := forceAfter[n.Name]; ok && !first.Equal(at) {
						moved = append(moved, fmt.Sprintf("%s: %s then %s", n.Name, first, at))
					}
					if err == nil {
						forceAfter[n.Name] = at
					}
					mu.Unlock()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	e.applyPolicy("policy", graced("b"))
	// A restart while the first node drains keeps its period: the end is on the node.
	testwait.Until(t, testwait.Slow, "an old node draining with its force-after", 2*time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(forceAfter) > 0
	})
	e.stopAndWait()
	e.start()
	e.waitReplaced("both drifted nodes replaced past their budget and annotation", old, 2)
	close(stop)
	<-watched
	if len(moved) > 0 {
		t.Errorf("force-after moved (the restart restarted the period?): %v", moved)
	}
	events := nw.finish()
	t.Logf("policy change → both held nodes replaced: %.1fs", time.Since(start).Seconds())
	e.checkRolled(events, old, string(api.ReasonDrifted), launches, "the policy change")
	if len(forceAfter) != 2 {
		t.Fatalf("force-after seen on %v, want both old nodes", forceAfter)
	}
	evicted, lost := lw.finish(30 * time.Second)
	if len(evicted) > 0 || len(lost) > 0 {
		t.Errorf("evicted %v, lost with their node %v: want both pods deleted past their hold, neither evicted", evicted, lost)
	}
	forced := lw.forcedPods()
	if len(forced) != 2 {
		t.Fatalf("%d pods deleted past their hold, want 2", len(forced))
	}
	for _, p := range forced {
		end, ok := forceAfter[p.Spec.NodeName]
		switch {
		case !ok:
			t.Errorf("pod %s deleted on %s, not one of the drained nodes %v", p.Name, p.Spec.NodeName, forceAfter)
		case p.DeletionTimestamp == nil || p.DeletionTimestamp.Time.Before(end.Add(-time.Second)):
			// Deleted with a grace of 2 s no earlier than 2 s before the end: its deletion
			// timestamp (deletion + grace) is at the end or later (to the second).
			t.Errorf("pod %s deleted for %v, before its node's force-after %s less its 2 s", p.Name, p.DeletionTimestamp, end)
		}
		e.waitEventOn(p.Name, "DisruptionForced", "terminationGracePeriod (20s)", 10*time.Second)
	}
	for _, app := range []string{"guarded", "pinned"} {
		if p := e.waitAppReady(ns, app, 1, 30*time.Second)[0]; old[p.Spec.NodeName] {
			t.Errorf("%s pod on the old node %s", app, p.Spec.NodeName)
		}
	}
	testwait.Until(t, testwait.Slow, "tiler_disruption_forced_deletions_total{reason=Drifted} = 2", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonDrifted))) == 2
	})
	e.cleanupNamespace(ns)
}

// testNodeNotReadyIsKept: a node that stops being Ready after it was (a kubelet restart, a crashed
// runtime, a network partition) is no launch that failed to register. Two pods run under a
// PodDisruptionBudget on two nodes, whose records say when they turned Ready. One node's kubelet
// stops and its Ready condition goes Unknown (the test posts what the node lifecycle controller
// would after its 50 s grace). Past the registration timeout (5 s here), over five batches that saw
// it not Ready, the node and its instance stay, nothing is bought, no offering is marked
// unavailable and nothing is removed. With the kubelet back, the node is Ready with its pod.
// Then the machine dies for good and its Node is deleted, as a person or a cloud controller
// deletes the Node of a dead machine: the launch is removed as node-gone (its instance deleted, a NodeGone Event), no offering marked, and
// the pod, deleted by the pod garbage collector, is bought for again; no other pod lost, no
// instance leaked.
func testNodeNotReadyIsKept(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := disruptionConfig()
	cfg.DisruptionInterval = 0
	cfg.RegistrationTimeout = 5 * time.Second
	e, _ := newDisruptionEnv(t, cp, cfg, nil)
	ctx := context.Background()
	ns, app := "kubelet-down", "web"
	e.applyPolicy("policy", driftPolicy("a"))
	_, victim, id := e.readyOnTwo(ns, app, simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj())
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	removed := func(reason string) float64 { return counterValue(t, e.metrics.Deletions.WithLabelValues(reason)) }

	e.cloud.SetKubeletDown(id, true)
	e.setNodeReady(victim, corev1.ConditionUnknown)
	notReady := func(b batch) bool {
		for _, n := range b.state.Nodes {
			if n.Name == victim {
				return !snapshot.IsNodeReady(n)
			}
		}
		return false
	}
	e.waitBatch("a batch that sees "+victim+" not Ready", 30*time.Second, notReady)
	from := e.batches.count()
	var gone bool
	testwait.Until(t, testwait.Slow, "five more batches that see it not Ready", time.Minute, func() bool {
		seen := 0
		for _, b := range e.batches.since(from) {
			if notReady(b) {
				seen++
			}
		}
		_, err := e.kube.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		gone = apierrors.IsNotFound(err)
		return seen >= 5 || gone
	})
	if gone {
		t.Fatalf("node %s removed while not Ready (deletions: %v at the registration timeout); want it kept", victim, removed(provisioner.RemovalRegistrationTimeout))
	}
	if got, err := e.cloud.Get(ctx, id); err != nil || got.Ending() {
		t.Errorf("instance %s of the node not Ready: %+v, %v; want it running", id, got, err)
	}
	if got := e.launches() - launches; got != 0 {
		t.Errorf("%d launches while the node was not Ready, want none", got)
	}
	if rt, gone, marked := removed(provisioner.RemovalRegistrationTimeout), removed(provisioner.RemovalNodeGone), gaugeValue(t, e.metrics.UnavailableOfferings); rt+gone+marked != 0 {
		t.Errorf("while not Ready: removed %v at the registration timeout, %v as node-gone, %v offerings unavailable; want none", rt, gone, marked)
	}

	e.cloud.SetKubeletDown(id, false)
	e.waitNode(func(n *corev1.Node) bool { return n.Name == victim && snapshot.IsNodeReady(n) }, 30*time.Second)

	// The machine dies for good (its kubelet never registers again) and its Node is deleted, as a
	// person or a cloud controller deletes the Node of a dead machine.
	e.cloud.SetKubeletDown(id, true)
	if err := e.kube.CoreV1().Nodes().Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the launch removed as "+provisioner.RemovalNodeGone, 30*time.Second, func() bool {
		return removed(provisioner.RemovalNodeGone) == 1
	})
	e.waitEventOn(victim, "NodeGone", "node "+victim+" was Ready and its Node is gone", 30*time.Second)
	if _, err := e.cloud.Get(ctx, id); !cloudprovider.IsNotFound(err) {
		t.Errorf("instance %s after its Node was deleted: %v; want it deleted", id, err)
	}
	if rt, marked := removed(provisioner.RemovalRegistrationTimeout), gaugeValue(t, e.metrics.UnavailableOfferings); rt+marked != 0 {
		t.Errorf("node gone: removed %v at the registration timeout, %v offerings unavailable; want none", rt, marked)
	}
	start := time.Now()
	testwait.Until(t, testwait.Slow, "the pod of the gone node deleted and bought for again", 3*time.Minute, func() bool {
		pods := e.appPods(ns, app)
		for i := range pods {
			if pods[i].Spec.NodeName == victim || pods[i].Spec.NodeName == "" || !podReady(&pods[i]) {
				return false
			}
		}
		return len(pods) == 2
	})
	t.Logf("the pod of the gone node back, Ready, %.1fs after the launch was removed", time.Since(start).Seconds())
	if _, lost := lw.finish(30 * time.Second); len(lost) != 1 {
		t.Errorf("lost %v with the node; want its one pod", lost)
	}
	e.cleanupNamespace(ns)
}

// readyOnTwo runs app's two pods shaped like tmpl under a PodDisruptionBudget on two nodes
// (appUnderPDB), waits until both launch records say their nodes were seen Ready (readyAt: a node
// whose kubelet stops before the controller saw it Ready is a launch that never came up), and
// returns the nodes, one of them and the ID of its instance.
func (e *env) readyOnTwo(ns, app string, tmpl *corev1.Pod) (nodes map[string]bool, node, id string) {
	e.t.Helper()
	nodes = e.appUnderPDB(ns, app, 2, tmpl)
	e.waitRecordsWith("with readyAt", 2, func(r provisioner.LaunchRecord) bool { return !r.ReadyAt.IsZero() })
	insts, err := e.cloud.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, i := range insts {
		if nodes[i.NodeName] {
			return nodes, i.NodeName, i.ID
		}
	}
	e.t.Fatalf("no instance for the nodes %v in %+v", nodes, insts)
	return nil, "", ""
}

// setNodeReady sets the Ready condition of node to status, as the node lifecycle controller does
// when the kubelet stops posting (Unknown).
func (e *env) setNodeReady(node string, status corev1.ConditionStatus) {
	e.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
				c.Status, c.Reason, c.Message = status, "NodeStatusUnknown", "Kubelet stopped posting node status."
				c.LastTransitionTime = metav1.Now()
			}
		}
		_, err = e.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("setting node %s Ready %s: %v", node, status, err)
	}
}

// markPodsNotReady sets the Ready condition of the pods bound to node False, as
// kube-controller-manager's node lifecycle controller does when it sees the node's Ready
// condition leave True (it does not when a test sets the condition itself, as setNodeReady does).
func (e *env) markPodsNotReady(node string) {
	e.t.Helper()
	ctx := context.Background()
	pods, err := e.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		for j := range p.Status.Conditions {
			if c := &p.Status.Conditions[j]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.Now()
			}
		}
		if _, err := e.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			e.t.Fatal(err)
		}
	}
}

const notReadyRepairPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: nr
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    repair:
      notReadyGracePeriod: 5s
`

// testNotReadyNodeRepaired: a node whose kubelet stops is repaired once it has been not Ready
// for its pool's repair.notReadyGracePeriod (5 s here), which it never was while a node not Ready
// counted as a launch in flight (no disruption was planned: "1 launches are in flight"): the
// replacement Ready before the node is cordoned, its pod evicted through the Eviction API (the
// PodDisruptionBudget allows one), and, since no kubelet ends the evicted pod (its own grace
// period is 1 s), the drain stops waiting for it StuckTerminatingAfter past its deletion
// timestamp and the node is removed. The pod's successor runs on the replacement meanwhile. A
// pod annotated do-not-disrupt on the node (session 49: it held the repair, since no kubelet ends
// it) is not evicted: not Ready (as kube-controller-manager marks a dead node's pods), it is
// deleted, going with the node (a DisruptionForced Event), and its successor runs at once. One Replace action for Unhealthy, one launch; no other pod lost, no instance leaked.
func testNotReadyNodeRepaired(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "not-ready-repair", "web"
	e.applyPolicy("policy", notReadyRepairPolicy)
	one := int64(1)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("1Gi").Obj()
	tmpl.Spec.TerminationGracePeriodSeconds = &one
	nodes, victim, id := e.readyOnTwo(ns, app, tmpl)
	// The do-not-disrupt pod, on the node to be repaired (preferred: its successor goes anywhere).
	keep := simtest.Pod("k").Namespace(ns).Label("app", "keep").CPU("100m").Mem("128Mi").
		PreferNode(100, corev1.LabelHostname, victim).Annotate(api.AnnotationDoNotDisrupt, "true").Obj()
	e.deployment(ns, "keep", 1, keep)
	kept := e.waitAppReady(ns, "keep", 1, time.Minute)
	if kept[0].Spec.NodeName != victim {
		t.Fatalf("the do-not-disrupt pod is on %s, not %s", kept[0].Spec.NodeName, victim)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	lw.expectForced(labels.SelectorFromSet(labels.Set{"app": "keep"}))
	nw := e.watchNodes()
	e.cloud.SetKubeletDown(id, true)
	e.setNodeReady(victim, corev1.ConditionUnknown)
	e.markPodsNotReady(victim)
	down := time.Now()
	e.waitReplaced("the node not Ready repaired", map[string]bool{victim: true}, 2)
	t.Logf("the node not Ready replaced and removed %.1fs after its kubelet stopped", time.Since(down).Seconds())
	if d := time.Since(down); d < provisioner.StuckTerminatingAfter {
		t.Errorf("the node removed %s after its kubelet stopped, before its evicted pod was stuck terminating (%s): want the drain to wait for it", d, provisioner.StuckTerminatingAfter)
	}
	events := nw.finish()
	var repl []string
	for _, n := range e.managedNodes() {
		if !nodes[n.Name] {
			repl = append(repl, n.Name)
		}
	}
	if len(repl) != 1 {
		t.Fatalf("new nodes %v, want one replacement", repl)
	}
	readyBeforeCordon(t, events, victim, repl[0])
	e.waitEventOn(victim, "Disrupting", "Ready is Unknown for", 10*time.Second)
	if got := e.launches() - launches; got != 1 {
		t.Errorf("%d launches after the kubelet stopped, want the replacement", got)
	}
	testwait.Until(t, testwait.Slow, "tiler_disruption_actions_total{kind=Replace,reason=Unhealthy} = 1", 10*time.Second, func() bool {
		return counterValue(t, e.metrics.DisruptionActions.WithLabelValues(string(api.ActionReplace), string(api.ReasonUnhealthy))) == 1
	})
	testwait.Until(t, testwait.Slow, "the do-not-disrupt pod's successor Ready", 30*time.Second, func() bool {
		ps := e.appPods(ns, "keep")
		return len(ps) == 1 && ps[0].Name != kept[0].Name && podReady(&ps[0])
	})
	e.waitEventOn(kept[0].Name, "DisruptionForced", "no kubelet runs it there", 10*time.Second)
	if got := counterValue(t, e.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonUnhealthy))); got != 1 {
		t.Errorf("tiler_disruption_forced_deletions_total{reason=Unhealthy} %v, want the do-not-disrupt pod's deletion", got)
	}
	evicted, lost := lw.finish(time.Minute)
	if forced := lw.forcedPods(); len(evicted) != 1 || len(lost) > 0 || len(forced) != 1 || forced[0].Name != kept[0].Name {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node, %d deleted; want the pod of the node not Ready evicted, the do-not-disrupt pod %s deleted with the node", evicted, lost, len(forced), kept[0].Name)
	}
	e.cleanupNamespace(ns)
}

const repairGracePolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: rg
  instanceTypes: [g6.xlarge]
  zones: [us-east-1a]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    terminationGracePeriod: 15s
`

// testRepairGracePeriod: a GPU node that stays Ready runs a do-not-disrupt GPU pod, a pod whose
// PodDisruptionBudget allows no disruption (minAvailable 1 of 1) and a pod free to go; its GPUs
// then throw critical XID errors (AcceleratedHardwareReady=False), so it is repaired at once. Its
// pool sets a terminationGracePeriod of 15 s, which the repair carries (before session 50 a
// repair carried none, and the do-not-disrupt pod held the broken node and its replacement both
// for as long as it ran: this test timed out). Replacement Ready before the cordon; the free pod
// evicted through the Eviction API; the other two neither evicted nor deleted before the period
// is about to end (each no earlier than its own 1 s before the node's force-after), then deleted
// (a DisruptionForced Event, tiler_disruption_forced_deletions_total{reason=Unhealthy} 2), and
// back on the replacement; one launch, nothing lost, no instance leaked.
func testRepairGracePeriod(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns := "repair-grace"
	e.namespace(ns)
	e.applyPolicy("policy", repairGracePolicy)
	one := int64(1)
	app := func(name string, gpu bool, annotations ...string) {
		b := simtest.Pod("p").Namespace(ns).Label("app", name).CPU("500m").Mem("512Mi")
		if gpu {
			b.GPU(1)
		}
		for i := 0; i+1 < len(annotations); i += 2 {
			b.Annotate(annotations[i], annotations[i+1])
		}
		tmpl := b.Obj()
		tmpl.Spec.TerminationGracePeriodSeconds = &one
		e.deployment(ns, name, 1, tmpl)
	}
	app("keep", true, api.AnnotationDoNotDisrupt, "true")
	victim := e.waitAppReady(ns, "keep", 1, 2*time.Minute)[0].Spec.NodeName
	// The other two join it on the node already there (room for both).
	minOne := intstr.FromInt32(1)
	e.pdb(ns, "guarded", nil, &minOne)
	app("guarded", false)
	app("web", false)
	for _, a := range []string{"guarded", "web"} {
		if on := e.waitAppReady(ns, a, 1, time.Minute)[0].Spec.NodeName; on != victim {
			t.Fatalf("%s runs on %s, not with the do-not-disrupt pod on %s", a, on, victim)
		}
	}
	kept := map[string]bool{e.appPods(ns, "keep")[0].Name: true, e.appPods(ns, "guarded")[0].Name: true}
	testwait.Until(t, testwait.Slow, "the budget to allow no disruption", 30*time.Second, func() bool {
		pdb, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "guarded", metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0
	})
	var id string
	for _, n := range e.managedNodes() {
		if n.Name == victim {
			id = n.Labels[api.LabelInstanceID]
		}
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	held, err := labels.Parse("app in (keep, guarded)")
	if err != nil {
		t.Fatal(err)
	}
	lw.expectForced(held)
	nw := e.watchNodes()
	if err := e.cloud.InjectGPUFault(id, sim.GPUFaultXID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var forceAfter time.Time
	testwait.Until(t, testwait.Slow, "the node repaired", 3*time.Minute, func() bool {
		nodes := e.managedNodes()
		for _, n := range nodes {
			if n.Name == victim {
				if v := n.Annotations[api.AnnotationDisruptionForceAfter]; v != "" && forceAfter.IsZero() {
					forceAfter, _ = time.Parse(time.RFC3339, v)
				}
				return false
			}
		}
		return len(nodes) == 1
	})
	t.Logf("the node repaired %.1fs after its GPUs failed", time.Since(start).Seconds())
	events := nw.finish()
	repl := e.managedNodes()[0].Name
	readyBeforeCordon(t, events, victim, repl)
	if got := e.launches() - launches; got != 1 {
		t.Errorf("%d launches after the fault, want the replacement", got)
	}
	if forceAfter.IsZero() {
		t.Fatal("the repaired node never showed a force-after: the repair carried no terminationGracePeriod")
	}
	for name := range kept {
		e.waitEventOn(name, "DisruptionForced", "terminationGracePeriod", 10*time.Second)
	}
	if got := counterValue(t, e.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonUnhealthy))); got != 2 {
		t.Errorf("tiler_disruption_forced_deletions_total{reason=Unhealthy} %v, want 2", got)
	}
	evicted, lost := lw.finish(time.Minute)
	forced := lw.forcedPods()
	if len(evicted) != 1 || kept[evicted[0]] || len(lost) > 0 || len(forced) != 2 {
		t.Errorf("evicted %v, lost with the node %v, %d deleted past their hold; want the free pod evicted, the other two deleted", evicted, lost, len(forced))
	}
	for _, p := range forced {
		if !kept[p.Name] || p.DeletionTimestamp == nil || p.DeletionTimestamp.Time.Before(forceAfter.Add(-time.Second)) {
			t.Errorf("pod %s deleted for %v; want the held pods deleted no earlier than their own 1 s before the force-after %s", p.Name, p.DeletionTimestamp, forceAfter)
		}
	}
	for _, a := range []string{"keep", "guarded", "web"} {
		if ps := e.appPods(ns, a); len(ps) != 1 || ps[0].Spec.NodeName != repl {
			t.Errorf("%s: pods %d, want one on the replacement %s", a, len(ps), repl)
		}
	}
	e.cleanupNamespace(ns)
}
