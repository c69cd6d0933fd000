package provisioner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestE2EDisruption runs the consolidation scenarios on one real control plane, with the
// simulated cloud playing the kubelet for pods too (Running, Ready, terminating pods end), so
// that ReplicaSets, PodDisruptionBudgets and the Eviction API behave as in a cluster. Time is
// real but short: consolidateAfter of a few seconds in the policy, a disruption pass every second.
func TestE2EDisruption(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	t.Run("ShrinkConsolidates", func(t *testing.T) { testShrinkConsolidates(t, cp) })
	t.Run("DoNotDisruptAndPDBKeepNodes", func(t *testing.T) { testDisruptionBlocked(t, cp) })
	t.Run("RestartDuringDrain", func(t *testing.T) { testRestartDuringDrain(t, cp, false) })
	t.Run("RestartAfterEvictionApproved", func(t *testing.T) { testRestartDuringDrain(t, cp, true) })
	t.Run("LargeNodeReplacedFirst", func(t *testing.T) { testReplaceLaunchedFirst(t, cp, false) })
	t.Run("RestartWhileReplacing", func(t *testing.T) { testReplaceLaunchedFirst(t, cp, true) })
	t.Run("ReplacementLosesCapacity", func(t *testing.T) { testReplacementLosesCapacity(t, cp) })
	t.Run("GPUNodeWithCPUPodsRemoved", func(t *testing.T) { testGPUNodeEmptied(t, cp) })
	t.Run("ReplacementKeepsSpreadDomains", func(t *testing.T) { testReplacementKeepsSpreadDomains(t, cp) })
	t.Run("CandidateTaintSteersNewPods", func(t *testing.T) { testCandidateTaint(t, cp) })
	t.Run("ReplacementKeepsItsRoom", func(t *testing.T) { testReplacementKeepsItsRoom(t, cp) })
	t.Run("LaterWavesKeepTheirRoom", func(t *testing.T) { testLaterWavesKeepTheirRoom(t, cp) })
	t.Run("ConcurrentReplacementsKeepTheirPods", func(t *testing.T) { testConcurrentReplacementsKeepTheirPods(t, cp) })
	t.Run("NodeExpiryReplacedFirst", func(t *testing.T) { testNodeExpiry(t, cp) })
	t.Run("CapacityBlockEnding", func(t *testing.T) { testReservationEnding(t, cp) })
	t.Run("CapacityBlockForcedBeforeTheEnd", func(t *testing.T) { testReservationForcedBeforeTheEnd(t, cp) })
	t.Run("NodeNotReadyIsKept", func(t *testing.T) { testNodeNotReadyIsKept(t, cp) })
	t.Run("NotReadyNodeRepaired", func(t *testing.T) { testNotReadyNodeRepaired(t, cp) })
	t.Run("SpotInterruptionReplacedFirst", func(t *testing.T) { testSpotInterruptionReplacedFirst(t, cp, false, false) })
	t.Run("RestartDuringInterruption", func(t *testing.T) { testSpotInterruptionReplacedFirst(t, cp, true, false) })
	t.Run("RebalanceRecommendationReplacedFirst", func(t *testing.T) { testSpotInterruptionReplacedFirst(t, cp, false, true) })
	t.Run("SpotInterruptionDeadlineFirst", func(t *testing.T) { testSpotInterruptionDeadlineFirst(t, cp) })
	t.Run("SpotInterruptionDoNotDisrupt", func(t *testing.T) { testSpotInterruptionDoNotDisrupt(t, cp) })
	t.Run("RepairOnGPULoss", func(t *testing.T) { testRepairOnGPULoss(t, cp) })
	t.Run("RepairGracePeriod", func(t *testing.T) { testRepairGracePeriod(t, cp) })
	t.Run("DriftAfterPolicyChange", func(t *testing.T) { testDriftAfterPolicyChange(t, cp) })
	t.Run("DriftSeveralReplacements", func(t *testing.T) { testDriftSeveralReplacements(t, cp) })
	t.Run("TerminationGracePeriod", func(t *testing.T) { testTerminationGracePeriod(t, cp) })
	t.Run("ImageDrift", func(t *testing.T) { testImageDrift(t, cp) })
	t.Run("ImageRollPausedOnBadImage", func(t *testing.T) { testImageRollPausedOnBadImage(t, cp) })
	t.Run("ImageThatDoesNotBoot", func(t *testing.T) { testImageThatDoesNotBoot(t, cp) })
	t.Run("ImageRemembersRepairedCanary", func(t *testing.T) { testImageRemembersRepairedCanary(t, cp) })
}

// passLog records the disruption passes of an env's controllers (Options.OnDisruption).
type passLog struct {
	mu   sync.Mutex
	seen []*provisioner.DisruptionPass
	// hook, when set, sees each pass first (under no lock).
	hook func(*provisioner.DisruptionPass)
}

func (l *passLog) observe(p *provisioner.DisruptionPass) {
	if l.hook != nil {
		l.hook(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, p)
}

func (l *passLog) all() []*provisioner.DisruptionPass {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*provisioner.DisruptionPass(nil), l.seen...)
}

// done reports whether a pass reported an action of the kind on the node done.
func (l *passLog) done(kind api.DisruptionKind, node string) bool {
	for _, p := range l.all() {
		for _, a := range p.Actions {
			if a.Kind == kind && a.Step == provisioner.ActionDone && slices.Contains(a.Nodes, node) {
				return true
			}
		}
	}
	return false
}

// logLast logs what the last pass planned or why it planned nothing, and the actions it advanced.
func (l *passLog) logLast(t testing.TB) {
	all := l.all()
	if len(all) == 0 {
		t.Log("no disruption pass")
		return
	}
	p := all[len(all)-1]
	t.Logf("last disruption pass at %s: skipped %q, err %v", p.Now.Format(time.TimeOnly), p.Skipped, p.Err)
	for _, a := range p.Actions {
		t.Logf("  action %s %s %v: %s %s", a.ID, a.Kind, a.Nodes, a.Step, a.Message)
	}
	if p.Plan != nil {
		for _, k := range p.Plan.Kept {
			t.Logf("  kept %s: %s %s", k.Name, k.Reason, k.Message)
		}
	}
}

func disruptionConfig() provisioner.Config {
	cfg := testConfig()
	cfg.DisruptionInterval = time.Second
	cfg.DisruptionStepInterval = 200 * time.Millisecond
	cfg.DisruptionRescheduleGrace = 30 * time.Second
	return cfg
}

// newDisruptionEnv is an env whose simulated cloud runs pods and whose controllers report their
// disruption passes to the returned log.
func newDisruptionEnv(t *testing.T, cp *controlplane.ControlPlane, cfg provisioner.Config, tweak func(*sim.Config)) (*env, *passLog) {
	t.Helper()
	passes := &passLog{}
	e := newEnvSetup(t, cp, cfg, func(c *sim.Config) {
		c.RunPods = true
		if tweak != nil {
			tweak(c)
		}
	}, func(o *provisioner.Options) { o.OnDisruption = passes.observe })
	return e, passes
}

func (e *env) namespace(name string) {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
		e.t.Fatal(err)
	}
	// A scenario that fails stops before its cleanupNamespace: its Deployments would go on making
	// pods for the next scenario's controller to buy nodes for.
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.cleanupNamespace(name)
		}
	})
}

// deployment creates a Deployment of replicas pods shaped like the template pod (its labels
// must hold app=name), with the template's terminationGracePeriodSeconds, 0 when it sets none.
func (e *env) deployment(ns, name string, replicas int32, tmpl *corev1.Pod) *appsv1.Deployment {
	e.t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels, Annotations: tmpl.Annotations},
				Spec: *tmpl.Spec.DeepCopy()}}}
	d.Spec.Template.Spec.SchedulerName = corev1.DefaultSchedulerName
	if d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
		zero := int64(0) // pods end at once, unless the template says otherwise
		d.Spec.Template.Spec.TerminationGracePeriodSeconds = &zero
	}
	if len(d.Spec.Template.Spec.Containers) > 0 && d.Spec.Template.Spec.Containers[0].Image == "" {
		d.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	}
	got, err := e.kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) scale(ns, name string, replicas int32) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.kube.AppsV1().Deployments(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) pdb(ns, name string, maxUnavailable, minAvailable *intstr.IntOrString) {
	e.t.Helper()
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: maxUnavailable, MinAvailable: minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if _, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// appPods returns the pods of app in ns that are not terminating.
func (e *env) appPods(ns, app string) []corev1.Pod {
	e.t.Helper()
	pods, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitAppReady waits until app has exactly n pods, not terminating, bound and Ready.
func (e *env) waitAppReady(ns, app string, n int, timeout time.Duration) []corev1.Pod {
	e.t.Helper()
	var pods []corev1.Pod
	testwait.Until(e.t, testwait.Slow, fmt.Sprintf("%d pods of %s bound and Ready", n, app), timeout, func() bool {
		pods = e.appPods(ns, app)
		if len(pods) != n {
			return false
		}
		for i := range pods {
			if pods[i].Spec.NodeName == "" || !podReady(&pods[i]) {
				return false
			}
		}
		return true
	})
	return pods
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// records reads the launch records.
func (e *env) records() []provisioner.LaunchRecord {
	e.t.Helper()
	recs, err := provisioner.ListRecords(context.Background(), e.dyn, e.cfg.Namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// fleetCost is the price of every launch Tiler has on record.
func (e *env) fleetCost() float64 {
	total := 0.0
	for _, r := range e.records() {
		total += r.PricePerHour
	}
	return total
}

// scratchCost is what Tiler buys for n pods like tmpl from nothing, under the policy doc.
func (e *env) scratchCost(doc string, tmpl *corev1.Pod, n int) float64 {
	e.t.Helper()
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		p := tmpl.DeepCopy()
		p.Name = fmt.Sprintf("scratch-%d", i)
		pods = append(pods, p)
	}
	plan := e.scratchPlan(doc, pods)
	if len(plan.Unschedulable) > 0 {
		e.t.Fatalf("plan from scratch: %+v", plan)
	}
	return plan.CostPerHour
}

// scratchPlan is Tiler's plan for the pods from nothing, under the policy doc.
func (e *env) scratchPlan(doc string, pods []*corev1.Pod) *api.Plan {
	e.t.Helper()
	pol, err := policy.Parse([]byte(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: pods}, Catalog: e.cat, Policy: pol})
	if err != nil {
		e.t.Fatalf("plan from scratch: %v", err)
	}
	return plan
}

// availabilityWatch follows the pods of app and records the most that were unavailable at once
// (not Ready, or terminating) against want, from its start to stop.
type availabilityWatch struct {
	mu         sync.Mutex
	maxMissing int
	events     int
	stop       context.CancelFunc
	done       chan struct{}
}

func (e *env) watchAvailability(ns, app string, want int) *availabilityWatch {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app, ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	a := &availabilityWatch{stop: cancel, done: make(chan struct{})}
	avail := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		avail[p.Name] = p.DeletionTimestamp == nil && podReady(p)
	}
	go func() {
		defer close(a.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				delete(avail, p.Name)
			default:
				avail[p.Name] = p.DeletionTimestamp == nil && podReady(p)
			}
			n := 0
			for _, ok := range avail {
				if ok {
					n++
				}
			}
			a.mu.Lock()
			a.events++
			a.maxMissing = max(a.maxMissing, want-n)
			a.mu.Unlock()
		}
	}()
	return a
}

// finish stops the watch and returns the most pods unavailable at once and the events seen.
func (a *availabilityWatch) finish() (maxMissing, events int) {
	a.stop()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxMissing, a.events
}

// instancesMatchNodes checks that every instance of the cloud has its managed Node and every
// managed Node its instance: nothing leaked, nothing bought twice.
func (e *env) instancesMatchNodes() {
	e.t.Helper()
	var insts, nodes []string
	testwait.Until(e.t, testwait.Slow, "the cloud's instances and the managed Nodes to match", 20*time.Second, func() bool {
		all, err := e.cloud.List(context.Background())
		if err != nil {
			return false
		}
		insts, nodes = nil, nil
		for _, i := range all {
			insts = append(insts, i.NodeName)
		}
		for _, n := range e.managedNodes() {
			nodes = append(nodes, n.Name)
		}
		return sameSet(insts, nodes)
	})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

// cleanupNamespace deletes the Deployments and budgets of ns before the env's cleanup.
func (e *env) cleanupNamespace(ns string) {
	ctx := context.Background()
	e.stop()
	_ = e.kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = e.kube.PolicyV1().PodDisruptionBudgets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	zero := int64(0)
	_ = e.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	e.cleanup(nil)
}

const shrinkPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.2xlarge]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: 2s
`

// testShrinkConsolidates: a Deployment of 30 pods bought onto 6 nodes is scaled to 8. Within
// consolidateAfter and a few passes the fleet costs at most 1.10× what Tiler buys for 8 such pods
// from nothing, every pod is bound and Ready, and a watch over the whole consolidation never sees
// more pods unavailable than the PodDisruptionBudget's maxUnavailable: 1.
func testShrinkConsolidates(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns, app = "shrink", "shrink"
	e.namespace(ns)
	e.applyPolicy("policy", shrinkPolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("2Gi").Obj()
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	e.deployment(ns, app, 30, tmpl)
	e.waitAppReady(ns, app, 30, 90*time.Second)
	if n := len(e.managedNodes()); n != 6 {
		t.Fatalf("%d nodes for 30 pods, want 6", n)
	}
	launchesBefore := e.launches()
	e.scale(ns, app, 8)
	e.waitAppReady(ns, app, 8, 30*time.Second)
	watch := e.watchAvailability(ns, app, 8)
	start := time.Now()
	want := e.scratchCost(shrinkPolicy, tmpl, 8)
	before := e.fleetCost()
	testwait.Until(t, testwait.Slow, "the fleet to cost at most 1.10× a purchase from scratch", 60*time.Second, func() bool {
		return e.fleetCost() <= 1.10*want+1e-9 && len(e.managedNodes()) == len(e.records())
	})
	took := time.Since(start)
	pods := e.waitAppReady(ns, app, 8, 30*time.Second)
	maxMissing, events := watch.finish()
	after := e.fleetCost()
	t.Logf("fleet $%.4f/h → $%.4f/h in %.1fs (from scratch $%.4f/h, ratio %.3f); %d nodes; %d pod events watched, at most %d unavailable",
		before, after, took.Seconds(), want, after/want, len(e.managedNodes()), events, maxMissing)
	if maxMissing > 1 {
		t.Errorf("%d pods unavailable at once; the PodDisruptionBudget allows 1", maxMissing)
	}
	// (The ReplicaSet may leave whole nodes empty when it scales down: then nothing moves and the
	// watch sees no event, which is fine.)
	evicted := counterValue(t, e.metrics.DisruptionEvictions)
	t.Logf("%v pods evicted", evicted)
	if evicted > 0 {
		testwait.Until(t, testwait.Slow, "a Disrupted Event on an evicted pod", 20*time.Second, func() bool {
			evs, err := e.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Disrupted"})
			return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "disruption action d-")
		})
	}
	nodes := map[string]bool{}
	for _, n := range e.managedNodes() {
		nodes[n.Name] = true
	}
	for _, p := range pods {
		if !nodes[p.Spec.NodeName] {
			t.Errorf("pod %s is on %s, not a managed node", p.Name, p.Spec.NodeName)
		}
	}
	if got := e.launches(); got != launchesBefore {
		t.Errorf("%d launches during consolidation; deletions need none", got-launchesBefore)
	}
	done := 0
	for _, p := range passes.all() {
		for _, a := range p.Actions {
			if a.Step == provisioner.ActionDone {
				done++
			}
			if a.Step == provisioner.ActionAbandoned {
				t.Errorf("action %s abandoned: %s", a.ID, a.Message)
			}
		}
	}
	if done == 0 {
		t.Error("no disruption action reported done")
	}
	if v := collectorSeries(e.metrics.DisruptionActions); v == 0 {
		t.Error("tiler_disruption_actions_total has no series")
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

const keepPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: keep
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: 1s
`

// setUnschedulable cordons or uncordons a node, as kubectl cordon does.
func (e *env) setUnschedulable(node string, v bool) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, v)
	if _, err := e.kube.CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitEventOn waits for an Event of the reason on the object named name (a node, a pod: names
// are unique enough in these tests) whose message holds substr.
func (e *env) waitEventOn(name, reason, substr string, timeout time.Duration) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	testwait.Until(e.t, testwait.Slow, fmt.Sprintf("a %s Event on %s saying %q", reason, name, substr), timeout, func() bool {
		evs, err := e.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason && strings.Contains(ev.Message, substr) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// testDisruptionBlocked: two nodes that one could replace are kept, one for its pod annotated
// tiler.dev/do-not-disrupt, the other for its pod whose PodDisruptionBudget allows no eviction,
// each with a DisruptionBlocked Event saying why. Once the budget is deleted, the second node is
// consolidated onto the first: it was kept for the budget alone.
func testDisruptionBlocked(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns = "keep"
	e.namespace(ns)
	e.applyPolicy("policy", keepPolicy)
	guarded := simtest.Pod("t").Namespace(ns).Label("app", "guarded").CPU("500m").Mem("1Gi").Obj()
	one := intstr.FromInt32(1)
	e.pdb(ns, "guarded", nil, &one)
	e.deployment(ns, "guarded", 1, guarded)
	b := e.waitAppReady(ns, "guarded", 1, 60*time.Second)[0].Spec.NodeName
	// Keep the do-not-disrupt pod off b, so that each node holds one pod and either could go.
	e.setUnschedulable(b, true)
	pinned := simtest.Pod("t").Namespace(ns).Label("app", "pinned").Annotate(api.AnnotationDoNotDisrupt, "true").CPU("500m").Mem("1Gi").Obj()
	e.deployment(ns, "pinned", 1, pinned)
	a := e.waitAppReady(ns, "pinned", 1, 60*time.Second)[0].Spec.NodeName
	e.setUnschedulable(b, false)
	if a == b {
		t.Fatalf("both pods on %s", a)
	}
	start := time.Now()
	ev := e.waitEventOn(a, "DisruptionBlocked", string(api.KeepPodDoNotDisrupt), 30*time.Second)
	t.Logf("%s: %s", a, ev.Message)
	ev = e.waitEventOn(b, "DisruptionBlocked", string(api.KeepPDB), 30*time.Second)
	t.Logf("%s: %s", b, ev.Message)
	for _, p := range passes.all() {
		for _, id := range p.Started {
			t.Errorf("pass at %s started action %s while both nodes were blocked", p.Now.Format(time.RFC3339), id)
		}
	}
	if n := len(e.managedNodes()); n != 2 {
		t.Fatalf("%d managed nodes, want both kept", n)
	}
	// The budget goes: b's pod may move, and b is consolidated onto a.
	if err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Delete(context.Background(), "guarded", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the node kept for the budget alone to be consolidated", 30*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 1 && nodes[0].Name == a
	})
	if got := e.waitAppReady(ns, "guarded", 1, 30*time.Second)[0].Spec.NodeName; got != a {
		t.Errorf("the guarded pod is on %s, want %s", got, a)
	}
	t.Logf("blocked Events and the consolidation after the budget went: %.1fs", time.Since(start).Seconds())
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// testRestartDuringDrain: the controller is killed right after a disruption pass that left an
// action draining (one pod evicted, the next refused by the PodDisruptionBudget). The node stays
// cordoned with its action; a new controller (new process, new cloud client on the same
// inventory) resumes the drain and removes the node: no pod lost, no pod beyond the budget
// unavailable, nothing launched, every instance a managed Node and every managed Node an instance.
//
// With approved, the killed controller had also asked to evict a pod of the draining node and
// the Eviction API had approved it — the PodDisruptionBudget's status charges the pod
// (status.disruptedPods) — but the pod was not deleted: the API server stops the request when
// its client dies between the two (found by internal/chaos: a drain held two minutes). The
// budget then refuses every eviction until kube-controller-manager lets the charge expire, two
// minutes later. The new controller must complete the approved eviction (delete the charged pod)
// rather than wait, within the same bounds.
func testRestartDuringDrain(t *testing.T, cp *controlplane.ControlPlane, approved bool) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "restart", "restart"
	if approved {
		ns, app = "approved", "approved"
	}
	e.namespace(ns)
	e.applyPolicy("policy", shrinkPolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1500m").Mem("2Gi").Obj()
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	e.deployment(ns, app, 10, tmpl)
	e.waitAppReady(ns, app, 10, 90*time.Second)
	if n := len(e.managedNodes()); n != 2 {
		t.Fatalf("%d nodes for 10 pods, want 2", n)
	}
	// The ReplicaSet picks the pods a scale-down deletes; left to itself it may empty a node,
	// which is then removed without a drain. Deletion costs make it take three from each node,
	// so that consolidation must drain one of them.
	perNode := map[string]int{}
	for _, p := range e.appPods(ns, app) {
		cost := "0"
		if perNode[p.Spec.NodeName] < 2 {
			cost = "100"
		}
		perNode[p.Spec.NodeName]++
		patch := []byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"` + cost + `"}}}`)
		if _, err := e.kube.CoreV1().Pods(ns).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	launches := e.launches()
	// The scale-down happens with the controller stopped, and it starts again once the budget
	// has seen it: a budget that still counted the pods being deleted as healthy allowed more
	// than one eviction at once, and the drain went through without a refusal (approved needs
	// one).
	e.stopAndWait()
	e.scale(ns, app, 4)
	e.waitBudgetSettled(ns, app, 4)
	// Kill the controller after the first pass that leaves an action draining.
	var once sync.Once
	killed := make(chan string, 1)
	var cancelMu sync.Mutex
	var cancel context.CancelFunc
	passes.hook = func(p *provisioner.DisruptionPass) {
		cancelMu.Lock()
		stop := cancel
		cancelMu.Unlock()
		for _, a := range p.Actions {
			// (approved needs a pod left on the node: a pass that found one refused.)
			if stop != nil && a.Step == api.DisruptionStepDraining && (!approved || strings.Contains(a.Message, "eviction refused")) {
				once.Do(func() {
					stop()
					killed <- a.ID + " on " + strings.Join(a.Nodes, ",") + ": " + a.Message
				})
			}
		}
	}
	e.start()
	cancelMu.Lock()
	cancel = e.cancel
	cancelMu.Unlock()
	e.waitAppReady(ns, app, 4, 30*time.Second)
	watch := e.watchAvailability(ns, app, 4)
	var what string
	select {
	case what = <-killed:
	case <-time.After(45 * time.Second):
		t.Fatal("no disruption action reached its drain")
	}
	e.stopAndWait()
	t.Logf("killed during the drain of %s", what)
	draining := 0
	for _, n := range e.managedNodes() {
		if n.Annotations[api.AnnotationDisruptionStep] == api.DisruptionStepDraining {
			draining++
			if !n.Spec.Unschedulable {
				t.Errorf("node %s is draining but not cordoned", n.Name)
			}
		}
	}
	if draining != 1 {
		t.Fatalf("%d nodes draining after the kill, want 1", draining)
	}
	if approved {
		e.chargeApprovedEviction(ns, app)
	}
	start := time.Now()
	e.start()
	testwait.Until(t, testwait.Slow, "the restarted controller to finish the action", 30*time.Second, func() bool {
		return len(e.managedNodes()) == 1 && len(e.records()) == 1
	})
	pods := e.waitAppReady(ns, app, 4, 30*time.Second)
	maxMissing, _ := watch.finish()
	t.Logf("resumed and done %.1fs after the restart; at most %d pods unavailable", time.Since(start).Seconds(), maxMissing)
	if maxMissing > 1 {
		t.Errorf("%d pods unavailable at once; the budget allows 1", maxMissing)
	}
	node := e.managedNodes()[0].Name
	for _, p := range pods {
		if p.Spec.NodeName != node {
			t.Errorf("pod %s on %s, want %s", p.Name, p.Spec.NodeName, node)
		}
	}
	if got := e.launches(); got != launches {
		t.Errorf("%d launches since the scale-down, want none", got-launches)
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// waitBudgetSettled waits, with the controller stopped, until the app's pods are replicas, none
// terminating, and its budget (maxUnavailable 1) has seen them: expected and healthy replicas,
// one disruption allowed, none charged.
func (e *env) waitBudgetSettled(ns, app string, replicas int32) {
	e.t.Helper()
	ctx := context.Background()
	testwait.Until(e.t, testwait.Slow, "the budget to see the scale-down", 30*time.Second, func() bool {
		// The stopped controller's cloud plays the kubelets no more: a step ends the deleted pods.
		if err := e.cloud.Step(ctx); err != nil {
			e.t.Logf("sim step: %v", err)
		}
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil || len(pods.Items) != int(replicas) {
			return false
		}
		pdb, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, app, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == replicas &&
			pdb.Status.CurrentHealthy == replicas && pdb.Status.DisruptionsAllowed == 1 && len(pdb.Status.DisruptedPods) == 0
	})
}

// chargeApprovedEviction leaves what an eviction the API approved but did not carry out leaves:
// once the app is whole again and its budget (maxUnavailable 1) allows a disruption, a pod still
// on the draining node is charged in the budget's status (disruptedPods, disruptionsAllowed 0),
// and not deleted.
func (e *env) chargeApprovedEviction(ns, app string) {
	e.t.Helper()
	ctx := context.Background()
	var pdb *policyv1.PodDisruptionBudget
	testwait.Until(e.t, testwait.Slow, "the budget to allow one disruption again", 30*time.Second, func() bool {
		// The stopped controller's cloud plays the kubelets no more: a step runs the evicted
		// pod's replacement.
		if err := e.cloud.Step(ctx); err != nil {
			e.t.Logf("sim step: %v", err)
		}
		var err error
		pdb, err = e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, app, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == 1 &&
			len(pdb.Status.DisruptedPods) == 0
	})
	var victim string
	for _, n := range e.managedNodes() {
		if n.Annotations[api.AnnotationDisruptionStep] != api.DisruptionStepDraining {
			continue
		}
		for _, p := range e.appPods(ns, app) {
			if p.Spec.NodeName == n.Name {
				victim = p.Name
			}
		}
	}
	if victim == "" {
		e.t.Fatal("no pod left on the draining node to charge")
	}
	pdb.Status.DisruptedPods = map[string]metav1.Time{victim: metav1.Now()}
	pdb.Status.DisruptionsAllowed = 0
	if _, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("charged %s/%s to the budget without deleting it", ns, victim)
}

const replacePolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: big
  instanceTypes: [m7i.large, m7i.4xlarge]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: 2s
`

// nodeEvent is one Node as a watch delivered it: watch events of one stream are in etcd order.
type nodeEvent struct {
	name          string
	ready         bool
	unschedulable bool
}

// nodeWatch records every Node event in order until stopped.
type nodeWatch struct {
	mu     sync.Mutex
	events []nodeEvent
	stop   context.CancelFunc
	done   chan struct{}
}

func (e *env) watchNodes() *nodeWatch {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	nw := &nodeWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(nw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
				nw.mu.Lock()
				nw.events = append(nw.events, nodeEvent{name: n.Name, ready: snapshot.IsNodeReady(n), unschedulable: n.Spec.Unschedulable})
				nw.mu.Unlock()
			}
		}
	}()
	return nw
}

func (w *nodeWatch) finish() []nodeEvent {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// testReplaceLaunchedFirst: a Deployment of 10 pods bought onto one m7i.4xlarge is scaled to 1.
// The large on-demand node is replaced by an m7i.large: a node watch sees the replacement Ready
// before the old node is cordoned, the pod ends on the replacement and the fleet costs the
// replacement's price. With kill, the controller is killed right after the pass that launched
// the replacement, and a new one (new cloud client, same inventory) resumes the action: still one
// launch, no duplicate and no leaked instance.
func testReplaceLaunchedFirst(t *testing.T, cp *controlplane.ControlPlane, kill bool) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "replace", "replace"
	if kill {
		ns, app = "replace-restart", "replace-restart"
	}
	killed := make(chan struct{})
	if kill {
		var once sync.Once
		cancel := e.cancel
		passes.hook = func(p *provisioner.DisruptionPass) {
			for _, a := range p.Actions {
				if a.Step == api.DisruptionStepReplacing {
					once.Do(func() { cancel(); close(killed) })
				}
			}
		}
	}
	tmpl, old := e.largeNodeScene(ns, app)
	launches := e.launches()
	nw := e.watchNodes()
	start := time.Now()
	e.scale(ns, app, 1)
	want := e.scratchCost(replacePolicy, tmpl, 1)
	if kill {
		select {
		case <-killed:
		case <-time.After(30 * time.Second):
			t.Fatal("no action reached Replacing")
		}
		e.stopAndWait()
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), old, metav1.GetOptions{})
		if err != nil || n.Annotations[api.AnnotationDisruptionStep] != api.DisruptionStepReplacing || n.Spec.Unschedulable {
			t.Fatalf("after the kill the old node is %v (err %v); want it uncordoned, Replacing", n.Annotations, err)
		}
		e.start()
	}
	testwait.Until(t, testwait.Slow, "the large node to be replaced", 45*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 1 && nodes[0].Name != old && len(e.records()) == 1
	})
	took := time.Since(start)
	events := nw.finish()
	repl := e.managedNodes()[0]
	pod := e.waitAppReady(ns, app, 1, 30*time.Second)[0]
	t.Logf("m7i.4xlarge %s replaced by %s %s in %.1fs; fleet $%.4f/h (from scratch $%.4f/h)", old,
		repl.Labels[corev1.LabelInstanceTypeStable], repl.Name, took.Seconds(), e.fleetCost(), want)
	readyBeforeCordon(t, events, old, repl.Name)
	if pod.Spec.NodeName != repl.Name {
		t.Errorf("the pod is on %s, want the replacement %s", pod.Spec.NodeName, repl.Name)
	}
	if got := e.fleetCost(); got > 1.10*want+1e-9 {
		t.Errorf("fleet $%.4f/h, from scratch $%.4f/h", got, want)
	}
	if got := e.launches(); got != launches+1 {
		t.Errorf("%d launches, want the replacement alone", got-launches)
	}
	replaced := false
	for _, p := range passes.all() {
		for _, a := range p.Actions {
			if a.Kind == api.ActionReplace && a.Step == provisioner.ActionDone {
				replaced = true
			}
		}
	}
	if !replaced {
		t.Error("no Replace action reported done")
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// largeNodeScene applies replacePolicy in namespace ns and runs ten pods of app, which it buys
// one m7i.4xlarge for; it returns the pods' template and that node's name.
func (e *env) largeNodeScene(ns, app string) (*corev1.Pod, string) {
	e.t.Helper()
	e.namespace(ns)
	e.applyPolicy("policy", replacePolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1").Mem("2Gi").Obj()
	e.deployment(ns, app, 10, tmpl)
	e.waitAppReady(ns, app, 10, 60*time.Second)
	nodes := e.managedNodes()
	if len(nodes) != 1 || nodes[0].Labels[corev1.LabelInstanceTypeStable] != "m7i.4xlarge" {
		e.t.Fatalf("nodes %v for 10 pods, want one m7i.4xlarge", names(nodes))
	}
	return tmpl, nodes[0].Name
}

// readyBeforeCordon fails the test unless the node watch saw a replacement of repl Ready before
// the old node was cordoned.
func readyBeforeCordon(t testing.TB, events []nodeEvent, old string, repl ...string) {
	t.Helper()
	readyAt, cordonAt := -1, -1
	for i, ev := range events {
		if readyAt < 0 && slices.Contains(repl, ev.name) && ev.ready {
			readyAt = i
		}
		if cordonAt < 0 && ev.name == old && ev.unschedulable {
			cordonAt = i
		}
	}
	if readyAt < 0 || cordonAt < 0 || readyAt > cordonAt {
		t.Errorf("replacement %v Ready at node event %d, old node %s cordoned at %d: the replacement must be Ready first", repl, readyAt, old, cordonAt)
	}
}

// testReplacementLosesCapacity: the cloud ends a consolidation's replacement while it boots, for
// want of capacity and with no notice. The instance sweep removes the replacement's launch and
// marks its offering unavailable; the executor, its replacement gone, abandons the action at its
// next pass instead of waiting out the registration timeout (10 min here), and the next pass
// replaces the large node on another offering. No pod is lost: the old node is cordoned only once
// a replacement is Ready.
func testReplacementLosesCapacity(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := disruptionConfig()
	cfg.RegistrationTimeout = 10 * time.Minute
	cfg.InstanceSweepPeriod = time.Second
	e, passes := newDisruptionEnv(t, cp, cfg, func(c *sim.Config) { c.BootDelay = 6 * time.Second })
	ns, app := "replace-lost", "replace-lost"
	replacing := make(chan string, 1)
	var once sync.Once
	passes.hook = func(p *provisioner.DisruptionPass) {
		for _, a := range p.Actions {
			if a.Step == api.DisruptionStepReplacing && a.Replacement != "" {
				once.Do(func() { replacing <- a.Replacement })
			}
		}
	}
	_, old := e.largeNodeScene(ns, app)
	nw := e.watchNodes()
	e.scale(ns, app, 1)
	var launchID string
	select {
	case launchID = <-replacing:
	case <-time.After(30 * time.Second):
		t.Fatal("no action reached Replacing")
	}
	ctx := context.Background()
	var lost *cloudprovider.Instance
	testwait.Until(t, 50*time.Millisecond, "the replacement's instance", 30*time.Second, func() bool {
		insts, err := e.cloud.List(ctx)
		for _, i := range insts {
			if err == nil && i.LaunchID == launchID {
				lost = i
			}
		}
		return lost != nil
	})
	if _, err := e.kube.CoreV1().Nodes().Get(ctx, lost.NodeName, metav1.GetOptions{}); err == nil {
		t.Fatalf("the replacement %s registered before its capacity was lost; the scenario needs it booting", lost.NodeName)
	}
	ended := time.Now()
	if err := e.cloud.LoseCapacity(ctx, lost.ID); err != nil {
		t.Fatal(err)
	}
	var abandoned time.Duration
	testwait.Until(t, testwait.Fast, "the action abandoned for its lost replacement", 30*time.Second, func() bool {
		for _, p := range passes.all() {
			for _, a := range p.Actions {
				if a.Replacement == launchID && a.Step == provisioner.ActionAbandoned {
					abandoned = time.Since(ended)
					return true
				}
			}
		}
		return false
	})
	testwait.Until(t, testwait.Slow, "the large node replaced", 60*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 1 && nodes[0].Name != old && len(e.records()) == 1
	})
	took := time.Since(ended)
	events := nw.finish()
	repl := e.managedNodes()[0]
	t.Logf("replacement %s lost its capacity while booting: action abandoned %.1fs later; %s replaced by %s %s %.1fs after the loss",
		lost.Offering, abandoned.Seconds(), old, repl.Labels[corev1.LabelInstanceTypeStable], repl.Name, took.Seconds())
	if next := instanceOfNode(t, e, repl.Name); next == nil || next.Offering == lost.Offering {
		t.Errorf("the second replacement is %+v, want one on another offering than %s", next, lost.Offering)
	}
	readyBeforeCordon(t, events, old, repl.Name)
	if pod := e.waitAppReady(ns, app, 1, 30*time.Second)[0]; pod.Spec.NodeName != repl.Name {
		t.Errorf("the pod is on %s, want the replacement %s", pod.Spec.NodeName, repl.Name)
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// gpuCPUPolicy leaves consolidateAfter at its defaults: 10 minutes for the GPU pool, 2 for the
// CPU pool. The scenario drives the disruption loop's clock past them.
const gpuCPUPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: cpu
  instanceTypes: [m7i.xlarge]
  capacityTypes: [on-demand]
- name: gpu
  instanceTypes: [g6.xlarge]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`

// spreadDomainsPolicy buys web nodes in us-east-1b and 1c only and GPU nodes in every zone, at
// on-demand prices equal in every zone.
const spreadDomainsPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  zones: [us-east-1b, us-east-1c]
- name: gpu
  instanceTypes: [g6.xlarge, g6.12xlarge]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption:
    consolidateAfter: 2s
`

// testReplacementKeepsSpreadDomains: four web pods spread by zone (maxSkew 1, no node affinity)
// run two in 1b and two in 1c, where their pool buys. A g6.12xlarge in 1b, bought for a big pod
// pinned there, is left with one small zone-agnostic GPU pod and is replaced by a g6.xlarge. The
// replacement must not go to 1a: kube-scheduler counts a tainted GPU node there as a domain of
// the web spread with none of its pods, and the web Deployment's next replicas would stay
// pending (it went to 1a, the first zone at the same price, before session 45). The replacement
// is Ready before the old node is cordoned; then the web Deployment grows to six and every pod is
// bound. A purchase for a zone-agnostic GPU pod then keeps out of 1a too (the running web pods'
// spread; before session 45 it went there), the web Deployment grows to eight, and no instance
// leaked. Last, a GPU pod pinned to 1a gets a node there, and the web replica that then has no
// place is told why on its NotTriggerScaleUp Event.
func testReplacementKeepsSpreadDomains(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns = "spread-domains"
	e.namespace(ns)
	e.applyPolicy("policy", spreadDomainsPolicy)
	web := simtest.Pod("t").Namespace(ns).Label("app", "web").CPU("500m").Mem("1Gi").Spread(corev1.LabelTopologyZone, 1, true).Obj()
	e.deployment(ns, "web", 4, web)
	zoneOf := func(name string) string {
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Labels[corev1.LabelTopologyZone]
	}
	for _, p := range e.waitAppReady(ns, "web", 4, 60*time.Second) {
		if z := zoneOf(p.Spec.NodeName); z != "us-east-1b" && z != "us-east-1c" {
			t.Fatalf("web pod %s in %s", p.Name, z)
		}
	}
	big := simtest.Pod("t").Namespace(ns).Label("app", "big").CPU("40").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").NodeSelector(corev1.LabelTopologyZone, "us-east-1b").Obj()
	e.deployment(ns, "big", 1, big)
	old := e.waitAppReady(ns, "big", 1, 60*time.Second)[0].Spec.NodeName
	small := simtest.Pod("t").Namespace(ns).Label("app", "infer").CPU("1").Mem("4Gi").GPU(1).Tolerate("nvidia.com/gpu").Obj()
	e.deployment(ns, "infer", 1, small)
	if on := e.waitAppReady(ns, "infer", 1, 30*time.Second)[0].Spec.NodeName; on != old {
		t.Fatalf("the infer pod is on %s, want the g6.12xlarge %s beside the big pod", on, old)
	}
	nw := e.watchNodes()
	if err := e.kube.AppsV1().Deployments(ns).Delete(context.Background(), "big", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var repl corev1.Node
	testwait.Until(t, testwait.Slow, "the g6.12xlarge to be replaced", 60*time.Second, func() bool {
		var gpu []corev1.Node
		for _, n := range e.managedNodes() {
			if n.Labels[api.LabelPool] == "gpu" {
				gpu = append(gpu, n)
			}
		}
		if len(gpu) != 1 || gpu[0].Name == old || len(e.records()) != len(e.managedNodes()) {
			return false
		}
		repl = gpu[0]
		return true
	})
	pod := e.waitAppReady(ns, "infer", 1, 30*time.Second)[0]
	readyBeforeCordon(t, nw.finish(), old, repl.Name)
	zone := repl.Labels[corev1.LabelTopologyZone]
	t.Logf("g6.12xlarge %s (us-east-1b) replaced by %s %s in %s", old, repl.Labels[corev1.LabelInstanceTypeStable], repl.Name, zone)
	if zone == "us-east-1a" {
		t.Errorf("the replacement %s is in us-east-1a, a zone-spread domain the web pods cannot use", repl.Name)
	}
	if pod.Spec.NodeName != repl.Name {
		t.Errorf("the infer pod is on %s, want the replacement %s", pod.Spec.NodeName, repl.Name)
	}
	if !passes.done(api.ActionReplace, old) {
		t.Error("no Replace action on the g6.12xlarge reported done")
	}
	// The web spread's next replicas: 1b and 1c hold two each and no domain sits at zero.
	e.scale(ns, "web", 6)
	e.waitAppReady(ns, "web", 6, 60*time.Second)
	// A purchase keeps the running spread's domains too: a zone-agnostic GPU pod with no room on
	// the g6.xlarge gets a node in 1b or 1c at the same price (before, 1a), and the web
	// Deployment grows again.
	e.deployment(ns, "more", 1, simtest.Pod("t").Namespace(ns).Label("app", "more").CPU("40").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Obj())
	more := e.waitAppReady(ns, "more", 1, 60*time.Second)[0].Spec.NodeName
	if z := zoneOf(more); z == "us-east-1a" {
		t.Errorf("the node %s bought for a GPU pod is in us-east-1a, a zone-spread domain the running web pods cannot use", more)
	}
	e.scale(ns, "web", 8)
	e.waitAppReady(ns, "web", 8, 60*time.Second)
	// A GPU pod pinned to 1a needs a node there, which makes 1a a domain with none of the web
	// pods: a ninth web replica has no place, and the Event on it says why and what lifts it.
	e.deployment(ns, "pinned", 1, simtest.Pod("t").Namespace(ns).Label("app", "pinned").CPU("1").Mem("4Gi").GPU(1).
		Tolerate("nvidia.com/gpu").NodeSelector(corev1.LabelTopologyZone, "us-east-1a").Obj())
	e.waitAppReady(ns, "pinned", 1, 60*time.Second)
	e.scale(ns, "web", 9)
	testwait.Until(t, testwait.Slow, "a NotTriggerScaleUp Event on the ninth web pod naming us-east-1a's domain", 30*time.Second, func() bool {
		evs, err := e.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + provisioner.ReasonNotTriggerScaleUp})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.InvolvedObject.Name, "web-") && strings.Contains(ev.Message, "zone us-east-1a counts as a domain of its zone spread") &&
				strings.Contains(ev.Message, "nodeTaintsPolicy: Honor") {
				t.Logf("%s: %s", ev.InvolvedObject.Name, ev.Message)
				return true
			}
		}
		return false
	})
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// testGPUNodeEmptied: a GPU node bought for a GPU pod also runs two CPU pods (they tolerate the
// GPU taint). Once the GPU workload is gone, the node carries CPU pods only: it is emptied onto a
// CPU node and removed. The disruption loop runs on a fake clock that the test steps 30 s at a
// time, so the GPU pool's default consolidateAfter (10 min) passes in well under a minute; the
// node is not touched before it has been a candidate that long.
func testGPUNodeEmptied(t *testing.T, cp *controlplane.ControlPlane) {
	dclock := clocktesting.NewFakeClock(time.Now())
	passes := &passLog{}
	cfg := disruptionConfig()
	// The replacement's wait is measured on the fake clock, which runs ahead of the cloud's real
	// boot (a step interval per 50 ms poll): give it the production timeout, not the tests' 30 s.
	cfg.RegistrationTimeout = provisioner.DefaultConfig().RegistrationTimeout
	e := newEnvSetup(t, cp, cfg, func(c *sim.Config) { c.RunPods = true }, func(o *provisioner.Options) {
		o.DisruptionClock = dclock
		o.OnDisruption = passes.observe
	})
	const ns = "gpu-cpu"
	e.namespace(ns)
	e.applyPolicy("policy", gpuCPUPolicy)
	train := simtest.Pod("t").Namespace(ns).Label("app", "train").CPU("1").Mem("4Gi").GPU(1).Obj()
	e.deployment(ns, "train", 1, train)
	gpuNode := e.waitAppReady(ns, "train", 1, 60*time.Second)[0].Spec.NodeName
	side := simtest.Pod("t").Namespace(ns).Label("app", "side").CPU("1").Mem("2Gi").Tolerate("nvidia.com/gpu").Obj()
	e.deployment(ns, "side", 2, side)
	for _, p := range e.waitAppReady(ns, "side", 2, 30*time.Second) {
		if p.Spec.NodeName != gpuNode {
			t.Fatalf("side pod %s on %s, want the GPU node %s", p.Name, p.Spec.NodeName, gpuNode)
		}
	}
	start, fakeStart := time.Now(), dclock.Now()
	if err := e.kube.AppsV1().Deployments(ns).Delete(context.Background(), "train", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitAppReady(ns, "side", 2, 30*time.Second)
	// The fake clock jumps 30 s while the loop waits for candidates; it follows the cloud's real
	// pace (a step interval per poll) while an action is under way, so that a replacement booting
	// in real time is not judged by fake minutes.
	testwait.Until(t, testwait.Slow, "the GPU node to be removed", 45*time.Second, func() bool {
		nodes := e.managedNodes()
		step, gone := 30*time.Second, true
		for _, n := range nodes {
			if n.Annotations[api.AnnotationDisruptionAction] != "" {
				step = e.cfg.DisruptionStepInterval
			}
			gone = gone && n.Name != gpuNode
		}
		if !gone {
			dclock.Step(step)
			return false
		}
		return len(e.records()) == len(nodes)
	})
	// No action touched the GPU node before it had been a candidate for consolidateAfter.
	var since time.Time
	for _, p := range passes.all() {
		if p.Plan != nil && since.IsZero() && slices.Contains(p.Plan.Candidates, gpuNode) {
			since = p.Now
		}
		for _, a := range p.Actions {
			if slices.Contains(a.Nodes, gpuNode) && (since.IsZero() || p.Now.Sub(since) < policy.DefaultConsolidateAfterGPU) {
				t.Errorf("pass at %s carried an action on %s, a candidate since %s only", p.Now, gpuNode, since)
			}
		}
	}
	t.Logf("the disruption clock moved %s", dclock.Since(fakeStart))
	for _, p := range passes.all() {
		for _, a := range p.Actions {
			if a.Step == provisioner.ActionAbandoned {
				t.Errorf("action %s on %v abandoned: %s", a.ID, a.Nodes, a.Message)
			}
		}
	}
	pods := e.waitAppReady(ns, "side", 2, 30*time.Second)
	for _, p := range pods {
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil || n.Labels[api.LabelPool] != "cpu" {
			t.Errorf("side pod %s on %s, want a node of the cpu pool", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("GPU node %s emptied and removed in %.1fs; fleet $%.4f/h on %d nodes", gpuNode, time.Since(start).Seconds(), e.fleetCost(), len(e.managedNodes()))
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

func names(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name+"("+n.Labels[corev1.LabelInstanceTypeStable]+")")
	}
	return out
}
