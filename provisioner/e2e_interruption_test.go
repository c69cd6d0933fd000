package provisioner_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// testSpotInterruption: the cloud announces that a spot GPU node is reclaimed 3 s ahead; the
// controller marks the offering unavailable and replaces the node through the disruption executor
// (an Interrupted action, see testSpotInterruptionReplacedFirst), and the Deployment's pod is
// bound on a newly bought node of another offering.
func testSpotInterruption(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) { c.InterruptionGrace = 3 * time.Second })
	ctx := context.Background()
	tmpl := simtest.Pod("x").Label("app", "spot-infer").CPU("2").Mem("8Gi").GPU(1).Obj()
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "spot-infer", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spot-infer"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	if _, err := e.kube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := e.waitDeploymentNode("spot-infer", "", 2*time.Minute)
	insts, _ := e.cloud.List(ctx)
	var id, offering string
	for _, i := range insts {
		if i.NodeName == first {
			id, offering = i.ID, string(i.Offering.InstanceType)+"/"+i.Offering.Zone+"/"+string(i.Offering.CapacityType)
		}
	}
	if id == "" || !contains(offering, "/spot") {
		t.Fatalf("first node %s is %q, want a spot instance", first, offering)
	}
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	second := e.waitDeploymentNode("spot-infer", first, 2*time.Minute)
	insts, _ = e.cloud.List(ctx)
	for _, i := range insts {
		if i.NodeName == second {
			if got := string(i.Offering.InstanceType) + "/" + i.Offering.Zone + "/" + string(i.Offering.CapacityType); got == offering {
				t.Errorf("replacement bought the interrupted offering %s again", got)
			}
		}
	}
	_ = e.kube.AppsV1().Deployments("default").Delete(ctx, "spot-infer", metav1.DeleteOptions{})
	e.cleanup(nil)
}

// testSpotInterruptedBeforeRegistration: the spot instance bought for a GPU pod is interrupted
// while it boots. The controller removes that launch at the notice — instance and launch record —
// and the next batch buys for the pod on the pool's other offering (on-demand), instead of
// counting the pod in flight on an instance that never comes until the registration timeout
// (5 minutes here, far beyond the wait).
func testSpotInterruptedBeforeRegistration(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.RegistrationTimeout = 5 * time.Minute
	e := newEnv(t, cp, cfg, func(c *sim.Config) { c.BootDelay, c.InterruptionGrace = 8*time.Second, 30*time.Second })
	ctx := context.Background()
	e.applyPolicy("policy", spotPolicy)
	pod := simtest.Pod("boot-interrupted").CPU("2").Mem("8Gi").GPU(1).Obj()
	e.create(pod)
	var id string
	testwait.Until(t, 50*time.Millisecond, "a spot instance launched for the pod", time.Minute, func() bool {
		insts, err := e.cloud.List(ctx)
		if err != nil {
			return false
		}
		for _, i := range insts {
			if i.Offering.CapacityType == api.Spot && i.NodeName != "" {
				id = i.ID
				return true
			}
		}
		return false
	})
	if _, err := e.kube.CoreV1().Nodes().Get(ctx, mustInstance(t, e, id).NodeName, metav1.GetOptions{}); err == nil {
		t.Fatalf("instance %s registered its node before the interruption; the scenario needs it booting", id)
	}
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	node := e.waitBound(time.Minute, pod)["default/"+pod.Name]
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range insts {
		if i.ID == id {
			t.Errorf("the interrupted instance %s is still listed; want it deleted at the notice", id)
		}
		if i.NodeName == node && i.Offering.CapacityType != api.OnDemand {
			t.Errorf("the pod is bound to %s, %s; want the on-demand failover", node, i.Offering)
		}
	}
	if n := e.launches(); n != 2 {
		t.Errorf("%d launches; want 2 (the interrupted one and its failover)", n)
	}
	_ = e.kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
	e.cleanup(nil)
}

// mustInstance returns the cloud's instance id.
func mustInstance(t *testing.T, e *env, id string) *cloudprovider.Instance {
	t.Helper()
	i, err := e.cloud.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// waitDeploymentNode waits until a running pod of the Deployment is bound to a node other than
// not, and returns that node.
func (e *env) waitDeploymentNode(app, not string, timeout time.Duration) string {
	e.t.Helper()
	node := ""
	err := testwait.Poll(testwait.Slow, timeout, func() bool {
		pods, _ := e.kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Spec.NodeName != not && p.DeletionTimestamp == nil {
				node = p.Spec.NodeName
				return true
			}
		}
		return false
	})
	if err != nil {
		e.t.Fatalf("no pod of %s bound to a node other than %q", app, not)
	}
	return node
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// spotPolicy buys g4dn.12xlarge (4 × T4) in one zone, spot first: once the zone's spot offering
// is marked unavailable, the only replacement left is on-demand (failover).
const spotPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu-spot
  instanceTypes: [g4dn.12xlarge]
  zones: [us-east-1a]
  capacityTypes: [spot, on-demand]
  disruption:
    consolidation: never
`

// testSpotInterruptionReplacedFirst: three GPU pods under a PodDisruptionBudget (maxUnavailable
// 1) run on a spot g4dn.12xlarge; the cloud announces its reclaim with a 90 s notice. The
// controller hands the node to the disruption executor: the offering is marked unavailable, a
// replacement is launched at once (on-demand: the pool's only other offering), and only once it
// is Ready are the pods evicted, one at a time as the budget allows; they bind on the replacement
// and the interrupted instance is deleted before the cloud reclaims it. One launch in all, no pod
// lost, the budget held (lifecycle watch), instances match Nodes. The time from the notice to all
// pods bound again is logged. With kill, the controller is killed right after the pass that
// started the Interrupted action (the notice acknowledged, the replacement launched), and a new
// one (new cloud client, same inventory) resumes it from the node's annotations: still one launch.
// With rebalance, the notice is an EC2 rebalance recommendation instead: the same path without a
// deadline (the replacement Ready first, whenever that is), and the cloud reclaims nothing.
func testSpotInterruptionReplacedFirst(t *testing.T, cp *controlplane.ControlPlane, kill, rebalance bool) {
	const grace = 90 * time.Second
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), func(c *sim.Config) { c.InterruptionGrace = grace })
	ctx := context.Background()
	ns, app := "spot", "spot-infer"
	if kill {
		ns = "spot-restart"
	}
	if rebalance {
		ns = "spot-rebalance"
	}
	killed := make(chan struct{})
	if kill {
		var once sync.Once
		cancel := e.cancel
		passes.hook = func(p *provisioner.DisruptionPass) {
			if len(p.Started) > 0 {
				once.Do(func() { cancel(); close(killed) })
			}
		}
	}
	e.namespace(ns)
	e.applyPolicy("policy", spotPolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("2").Mem("8Gi").GPU(1).Obj()
	e.deployment(ns, app, 3, tmpl)
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	pods := e.waitAppReady(ns, app, 3, 2*time.Minute)
	old := pods[0].Spec.NodeName
	for _, p := range pods {
		if p.Spec.NodeName != old {
			t.Fatalf("pods on %s and %s, want one g4dn.12xlarge", old, p.Spec.NodeName)
		}
	}
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var offering api.Offering
	for _, i := range insts {
		if i.NodeName == old {
			id, offering = i.ID, i.Offering
		}
	}
	if id == "" || offering.CapacityType != api.Spot {
		t.Fatalf("node %s is %+v, want a spot instance", old, offering)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)

	start := time.Now()
	notice, what := e.cloud.Interrupt, "interruption notice"
	if rebalance {
		notice, what = e.cloud.RecommendRebalance, "rebalance recommendation"
	}
	if err := notice(id); err != nil {
		t.Fatal(err)
	}
	if kill {
		select {
		case <-killed:
		case <-time.After(30 * time.Second):
			t.Fatal("no Interrupted action started")
		}
		e.stopAndWait()
		n, err := e.kube.CoreV1().Nodes().Get(ctx, old, metav1.GetOptions{})
		if err != nil || n.Annotations[api.AnnotationInterruption] == "" || n.Annotations[api.AnnotationInterruptionDeadline] == "" ||
			n.Annotations[api.AnnotationDisruptionReason] != string(api.ReasonInterrupted) || !n.Spec.Unschedulable {
			t.Fatalf("after the kill the interrupted node is %v, unschedulable %v (err %v); want it cordoned, annotated with the notice and the action", n.Annotations, n.Spec.Unschedulable, err)
		}
		t.Logf("controller killed %s after the notice, with the action at %s", time.Since(start).Round(time.Millisecond), n.Annotations[api.AnnotationDisruptionStep])
		e.start()
	}
	allBound := e.waitReboundOff(ns, app, 3, old, start, grace)
	testwait.Until(t, testwait.Slow, "the interrupted instance deleted by the controller", grace, func() bool {
		_, err := e.cloud.Get(ctx, id)
		return cloudprovider.IsNotFound(err)
	})
	gone := time.Since(start)
	after := e.waitAppReady(ns, app, 3, 30*time.Second)
	period := "notice period " + grace.String()
	if rebalance {
		period = "no deadline"
	}
	t.Logf("%s→all bound: %s (interrupted instance gone after %s; %s)", what, allBound.Round(time.Millisecond), gone.Round(time.Millisecond), period)

	repl := after[0].Spec.NodeName
	for _, p := range after {
		if p.Spec.NodeName != repl {
			t.Errorf("pod %s on %s, want every pod on the replacement %s", p.Name, p.Spec.NodeName, repl)
		}
	}
	insts, _ = e.cloud.List(ctx)
	for _, i := range insts {
		if i.NodeName == repl && i.Offering == offering {
			t.Errorf("the replacement %s bought the interrupted offering %+v again", repl, offering)
		}
	}
	if allBound >= grace {
		t.Errorf("pods bound again %s after the notice, after the %s deadline", allBound, grace)
	}
	e.notReclaimed(id)
	if got := e.launches() - launches; got != 1 {
		e.explainPurchases()
		t.Errorf("%d launches since the notice, want exactly one replacement", got)
	}
	// The pass that deleted the instance reports the action done once it ends.
	testwait.Until(t, testwait.Slow, "the Interrupted Replace action on "+old+" reported done", 10*time.Second, func() bool {
		for _, p := range passes.all() {
			for _, a := range p.Actions {
				if a.Reason == api.ReasonInterrupted && slices.Contains(a.Nodes, old) && a.Kind == api.ActionReplace && a.Step == provisioner.ActionDone {
					return true
				}
			}
		}
		return false
	})
	if rebalance {
		e.waitEventOn(old, "Interrupted", "rebalance-recommendation notice for instance "+id+" (no deadline)", 10*time.Second)
	} else {
		e.waitEventOn(old, "Interrupted", "spot-interruption notice for instance "+id+" (reclaimed at", 10*time.Second)
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 3 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the 3 pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// testSpotInterruptionDeadlineFirst: the replacement cannot be Ready in time — nodes boot in 12 s,
// the notice gives 20 s and the controller drains 15 s before the deadline. The node is drained
// at the margin, before its replacement is Ready; the evicted pods wait for the replacement
// already in flight (no second purchase) and bind there; the controller deletes the drained
// instance before the cloud reclaims it, and no pod goes with the node.
func testSpotInterruptionDeadlineFirst(t *testing.T, cp *controlplane.ControlPlane) {
	const grace, margin, boot = 20 * time.Second, 15 * time.Second, 12 * time.Second
	cfg := disruptionConfig()
	cfg.InterruptionDrainMargin = margin
	e, passes := newDisruptionEnv(t, cp, cfg, func(c *sim.Config) { c.InterruptionGrace, c.BootDelay = grace, boot })
	ctx := context.Background()
	ns, app := "spot-deadline", "spot-batch"
	e.namespace(ns)
	e.applyPolicy("policy", spotPolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("2").Mem("8Gi").GPU(1).Obj()
	e.deployment(ns, app, 2, tmpl)
	pods := e.waitAppReady(ns, app, 2, 2*time.Minute)
	old := pods[0].Spec.NodeName
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, i := range insts {
		if i.NodeName == old && i.Offering.CapacityType == api.Spot {
			id = i.ID
		}
	}
	if id == "" || pods[1].Spec.NodeName != old {
		t.Fatalf("pods on %s and %s, want both on one spot node", old, pods[1].Spec.NodeName)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	start := time.Now()
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	allBound := e.waitReboundOff(ns, app, 2, old, start, 2*grace)
	t.Logf("interruption notice→all bound: %s (deadline-first: notice %s, drain margin %s, boot %s)", allBound.Round(time.Millisecond), grace, margin, boot)
	e.waitAppReady(ns, app, 2, 30*time.Second)
	// The drain began before the replacement was Ready: a pass moved the action from Replacing
	// to Draining while its replacement had no Ready Node yet, which the executor logs as the
	// deadline; the passes say it by the order of the steps and the time.
	var drainAt time.Time
	for _, p := range passes.all() {
		for _, a := range p.Actions {
			if a.Reason == api.ReasonInterrupted && a.Step == api.DisruptionStepDraining && drainAt.IsZero() {
				drainAt = p.Now
			}
		}
	}
	if drainAt.IsZero() {
		t.Fatal("no pass saw the Interrupted action Draining")
	}
	if d := drainAt.Sub(start); d >= boot {
		t.Errorf("draining %s after the notice, want it at the margin (%s), before the replacement boots (%s)", d, grace-margin, boot)
	}
	if got := e.launches() - launches; got != 1 {
		e.explainPurchases()
		t.Errorf("%d launches since the notice, want exactly one replacement", got)
	}
	events, err := sim.ReadEvents(e.cloud.EventLogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.InstanceID == id && ev.Kind == sim.EventDeleted && ev.Reason == sim.ReasonSpotReclaimed {
			t.Errorf("the cloud reclaimed %s: the controller should have deleted it once drained", id)
		}
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 2 || len(lost) > 0 {
		t.Errorf("evicted %v, lost %v with the node; want the 2 pods evicted, none lost", evicted, lost)
	}
	e.cleanupNamespace(ns)
}

// waitReboundOff waits until the app's n pods are all bound to nodes other than old, and returns
// how long that took since start.
func (e *env) waitReboundOff(ns, app string, n int, old string, start time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	var allBound time.Duration
	testwait.Until(e.t, testwait.Slow, "every pod bound again, off the interrupted node", timeout, func() bool {
		ps := e.appPods(ns, app)
		if len(ps) != n {
			return false
		}
		for _, p := range ps {
			if p.Spec.NodeName == "" || p.Spec.NodeName == old {
				return false
			}
		}
		allBound = time.Since(start)
		return true
	})
	return allBound
}

// testSpotInterruptionDoNotDisrupt: a spot node runs a GPU pod free to go and a do-not-disrupt GPU
// pod (its own grace period 2 s); the cloud announces its reclaim with a 30 s notice. The free pod
// is evicted; the do-not-disrupt pod stays (an urgent action leaves it) until the reclaim is within
// its 2 s, then is deleted (session 50: before, it died with the machine and the pod garbage
// collector deleted it 40 s after the Node was gone, which left the replacement bought for it
// empty meanwhile; campaign seed 43 saw consolidation remove it and a node bought for the
// successor). Its successor binds on the replacement at once; a DisruptionForced Event and
// tiler_disruption_forced_deletions_total{reason=Interrupted} 1; the controller deletes the
// instance before the cloud reclaims it; one launch, nothing lost.
func testSpotInterruptionDoNotDisrupt(t *testing.T, cp *controlplane.ControlPlane) {
	const grace = 30 * time.Second
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), func(c *sim.Config) { c.InterruptionGrace = grace })
	ctx := context.Background()
	ns := "spot-dnd"
	e.namespace(ns)
	e.applyPolicy("policy", spotPolicy)
	two := int64(2)
	for _, a := range []string{"free", "keep"} {
		b := simtest.Pod("t").Namespace(ns).Label("app", a).CPU("2").Mem("8Gi").GPU(1)
		if a == "keep" {
			b.Annotate(api.AnnotationDoNotDisrupt, "true")
		}
		tmpl := b.Obj()
		tmpl.Spec.TerminationGracePeriodSeconds = &two
		e.deployment(ns, a, 1, tmpl)
	}
	kept := e.waitAppReady(ns, "keep", 1, 2*time.Minute)[0]
	old := kept.Spec.NodeName
	if on := e.waitAppReady(ns, "free", 1, time.Minute)[0].Spec.NodeName; on != old {
		t.Fatalf("pods on %s and %s, want one g4dn.12xlarge", old, on)
	}
	var id string
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range insts {
		if i.NodeName == old && i.Offering.CapacityType == api.Spot {
			id = i.ID
		}
	}
	if id == "" {
		t.Fatalf("node %s is not a spot instance", old)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	lw.expectForced(labels.SelectorFromSet(labels.Set{"app": "keep"}))
	deadline := e.watchNodeTime(old, api.AnnotationInterruptionDeadline)
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the interrupted instance deleted by the controller", 2*grace, func() bool {
		_, err := e.cloud.Get(ctx, id)
		return cloudprovider.IsNotFound(err)
	})
	end := deadline()
	var successor corev1.Pod
	testwait.Until(t, testwait.Slow, "the do-not-disrupt pod's successor Ready", 30*time.Second, func() bool {
		ps := e.appPods(ns, "keep")
		if len(ps) == 1 && ps[0].Name != kept.Name && podReady(&ps[0]) {
			successor = ps[0]
			return true
		}
		return false
	})
	if end.IsZero() {
		t.Fatal("the interrupted node never showed its deadline")
	}
	if bound := successor.CreationTimestamp.Time; bound.After(end.Add(2 * time.Second)) {
		t.Errorf("the successor made at %s, after the reclaim at %s: want it made as its predecessor was deleted", bound, end)
	}
	e.waitEventOn(kept.Name, "DisruptionForced", "the cloud reclaims the node at", 10*time.Second)
	if got := counterValue(t, e.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonInterrupted))); got != 1 {
		t.Errorf("tiler_disruption_forced_deletions_total{reason=Interrupted} %v, want the do-not-disrupt pod's deletion", got)
	}
	e.notReclaimed(id)
	if got := e.launches() - launches; got != 1 {
		e.explainPurchases()
		t.Errorf("%d launches since the notice, want exactly one replacement", got)
	}
	evicted, lost := lw.finish(30 * time.Second)
	if len(evicted) != 1 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want the free pod evicted, none lost", evicted, lost)
	}
	if got := deletedAt(t, "interruption", lw, old, end, "interruption deadline"); len(got) != 1 || got[0] != kept.Name {
		t.Errorf("deleted without the Eviction API: %v, want the do-not-disrupt pod %s", got, kept.Name)
	}
	e.cleanupNamespace(ns)
}

// notReclaimed checks that the simulated cloud never reclaimed instance id: the controller
// deleted it first.
func (e *env) notReclaimed(id string) {
	e.t.Helper()
	events, err := sim.ReadEvents(e.cloud.EventLogPath())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range events {
		if ev.InstanceID == id && ev.Kind == sim.EventDeleted && ev.Reason == sim.ReasonSpotReclaimed {
			e.t.Errorf("the cloud reclaimed %s: the controller should have deleted it first", id)
		}
	}
}
