package provisioner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// firstPolicy buys m7i.large (1930m allocatable) and m7i.xlarge (3920m) nodes.
const firstPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.large, m7i.xlarge]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: 2s
`

// testReplacementKeepsItsRoom: node Y (m7i.xlarge) runs a 2520m pod and has 1400m free; node X
// (m7i.xlarge) runs a 1500m pod (big) and three 450m pods (small). The only saving replaces X by
// an m7i.large that takes big (430m left, no room for a small pod), the small pods moving to Y
// (big does not fit there). kube-scheduler puts each replica on the emptiest node that fits it:
// a small replica bound before big's took the empty replacement, and big's replica then fit
// nowhere, stayed pending, and was bought a node after the reschedule grace (two of three runs
// when the drain evicted every pod at once). The drain evicts the small pods first, while the
// replacement carries tiler.dev/replacement-filling:PreferNoSchedule, and big once their
// replicas are bound: one launch (the replacement), the small pods on Y, big on the replacement,
// big's replica created after the small ones', and the replacement's taint gone at the end.
func testReplacementKeepsItsRoom(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns = "replacement-first"
	e.namespace(ns)
	e.applyPolicy("policy", firstPolicy)
	pod := func(app, cpu string) *corev1.Pod {
		return simtest.Pod("t").Namespace(ns).Label("app", app).CPU(cpu).Mem("512Mi").Obj()
	}
	// Y: the fill pod, and a pod that holds its room while X is bought.
	e.deployment(ns, "fill", 1, pod("fill", "2520m"))
	e.deployment(ns, "tmp", 1, pod("tmp", "1300m"))
	nodeY := e.waitAppReady(ns, "fill", 1, 60*time.Second)[0].Spec.NodeName
	e.waitAppReady(ns, "tmp", 1, 30*time.Second)
	// X: big, three small pods and an extra pod, one m7i.xlarge.
	e.deployment(ns, "big", 1, pod("big", "1500m"))
	e.deployment(ns, "small", 3, pod("small", "450m"))
	e.deployment(ns, "extra", 1, pod("extra", "1000m"))
	nodeX := e.waitAppReady(ns, "big", 1, 60*time.Second)[0].Spec.NodeName
	for _, p := range append(e.waitAppReady(ns, "small", 3, 30*time.Second), e.waitAppReady(ns, "extra", 1, 30*time.Second)...) {
		if p.Spec.NodeName != nodeX {
			t.Fatalf("pod %s on %s, want X %s beside big", p.Name, p.Spec.NodeName, nodeX)
		}
	}
	if n := len(e.managedNodes()); n != 2 || nodeX == nodeY {
		t.Fatalf("%d nodes, Y %s, X %s: want two", n, nodeY, nodeX)
	}
	launches := e.launches()
	pods := e.watchPods(ns)
	for _, d := range []string{"tmp", "extra"} {
		if err := e.kube.AppsV1().Deployments(ns).Delete(context.Background(), d, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, testwait.Slow, "X to be replaced", 90*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 2 && !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == nodeX }) &&
			len(e.records()) == 2
	})
	big := e.waitAppReady(ns, "big", 1, 30*time.Second)[0]
	small := e.waitAppReady(ns, "small", 3, 30*time.Second)
	log := pods.finish()
	if got := e.launches() - launches; got != 1 {
		t.Errorf("%d launches, want the replacement alone (a pod the drain left without room was bought for)", got)
	}
	if big.Spec.NodeName == nodeY {
		t.Errorf("big is on Y %s, want the replacement", nodeY)
	}
	for _, p := range small {
		if p.Spec.NodeName != nodeY {
			t.Errorf("small pod %s is on %s, want Y %s", p.Name, p.Spec.NodeName, nodeY)
		}
	}
	_, bigSeen := log.app(ns + "/" + big.Name)
	for _, p := range small {
		if _, seen := log.app(ns + "/" + p.Name); seen.After(bigSeen) {
			t.Errorf("small replica %s was created after big's %s: the drain evicted big, which moves to the replacement, first", p.Name, big.Name)
		}
	}
	repl, err := e.kube.CoreV1().Nodes().Get(context.Background(), big.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the replacement's taint to be removed", 20*time.Second, func() bool {
		repl, err = e.kube.CoreV1().Nodes().Get(context.Background(), repl.Name, metav1.GetOptions{})
		return err == nil && !slices.ContainsFunc(repl.Spec.Taints, func(t corev1.Taint) bool { return t.Key == api.TaintReplacementFilling })
	})
	if !passes.done(api.ActionReplace, nodeX) {
		t.Error("no Replace action on X reported done")
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// testLaterWavesKeepTheirRoom: node B runs a 1820m pod and will have 2100m free, node D a 2320m
// pod and 1600m free; node X runs big (1500m), mid (1100m) and mid2 (1000m). Deleting X is the
// only saving, and it fits one way only: big to D, mid and mid2 to B. The drain evicts big first;
// kube-scheduler's LeastAllocated score would put its replica on B, the emptier node, and mid2
// would then fit nowhere and be bought a node after the reschedule grace (campaign seed 20, a
// two-Delete plan). While big's replica is placed, B (the room of the later waves) carries
// tiler.dev/replacement-filling:PreferNoSchedule: no launch, big on D, mid and mid2 on B, the
// three evicted and none lost, the taint seen on B and gone at the end. The candidate taint is off, so that it does not steer the
// replicas instead.
func testLaterWavesKeepTheirRoom(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := disruptionConfig()
	cfg.DisruptionCandidateTaint = false
	e, passes := newDisruptionEnv(t, cp, cfg, nil)
	const ns = "later-waves"
	e.namespace(ns)
	e.applyPolicy("policy", xlargePolicy("2s")) // no replacement is cheaper: every saving is a Delete
	pod := func(app, cpu string) *corev1.Pod {
		return simtest.Pod("t").Namespace(ns).Label("app", app).CPU(cpu).Mem("512Mi").Obj()
	}
	// Each node is filled by a pod that stays and one that holds its room while the next is bought.
	fill := func(stay, stayCPU, tmp, tmpCPU string) string {
		e.deployment(ns, stay, 1, pod(stay, stayCPU))
		e.deployment(ns, tmp, 1, pod(tmp, tmpCPU))
		n := e.waitAppReady(ns, stay, 1, 60*time.Second)[0].Spec.NodeName
		if m := e.waitAppReady(ns, tmp, 1, 30*time.Second)[0].Spec.NodeName; m != n {
			t.Fatalf("%s on %s, %s on %s: want one node", stay, n, tmp, m)
		}
		return n
	}
	nodeB := fill("fill-b", "1820m", "tmp-b", "2100m")
	nodeD := fill("fill-d", "2320m", "tmp-d", "1600m")
	e.deployment(ns, "big", 1, pod("big", "1500m"))
	e.deployment(ns, "mid", 1, pod("mid", "1100m"))
	e.deployment(ns, "mid2", 1, pod("mid2", "1000m"))
	nodeX := e.waitAppReady(ns, "big", 1, 60*time.Second)[0].Spec.NodeName
	for _, app := range []string{"mid", "mid2"} {
		if p := e.waitAppReady(ns, app, 1, 30*time.Second)[0]; p.Spec.NodeName != nodeX {
			t.Fatalf("%s on %s, want X %s beside big", p.Name, p.Spec.NodeName, nodeX)
		}
	}
	if n := len(e.managedNodes()); n != 3 || nodeX == nodeB || nodeX == nodeD || nodeB == nodeD {
		t.Fatalf("%d nodes, B %s, D %s, X %s: want three", n, nodeB, nodeD, nodeX)
	}
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	t.Cleanup(func() {
		if t.Failed() {
			passes.logLast(t)
		}
	})
	// Whether B carried the taint while the drain ran.
	tainted := make(chan bool, 1)
	w, err := e.kube.CoreV1().Nodes().Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + nodeB})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		seen := false
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == api.TaintReplacementFilling }) {
				seen = true
			}
		}
		tainted <- seen
	}()
	for _, d := range []string{"tmp-b", "tmp-d"} {
		if err := e.kube.AppsV1().Deployments(ns).Delete(context.Background(), d, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, testwait.Slow, "X to be deleted", 90*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 2 && !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == nodeX }) && len(e.records()) == 2
	})
	want := map[string]string{"big": nodeD, "mid": nodeB, "mid2": nodeB}
	for app, node := range want {
		if p := e.waitAppReady(ns, app, 1, 30*time.Second)[0]; p.Spec.NodeName != node {
			t.Errorf("%s's replica is on %s, want %s (the plan's only fit: big on D %s, mid and mid2 on B %s)", app, p.Spec.NodeName, node, nodeD, nodeB)
		}
	}
	if evicted, lost := lw.finish(30 * time.Second); len(evicted) != 3 || len(lost) > 0 {
		t.Errorf("evicted %v through the Eviction API, lost %v with the node; want X's three pods evicted, none lost", evicted, lost)
	}
	if got := e.launches() - launches; got != 0 {
		t.Errorf("%d launches, want none (a pod the drain left without room was bought for)", got)
	}
	testwait.Until(t, testwait.Slow, "the taint to leave B", 20*time.Second, func() bool {
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), nodeB, metav1.GetOptions{})
		return err == nil && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == api.TaintReplacementFilling })
	})
	w.Stop()
	if !<-tainted {
		t.Error("B never carried the taint while big's replica was placed")
	}
	if !passes.done(api.ActionDelete, nodeX) {
		t.Error("no Delete action on X reported done")
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}

// rollPairPolicy buys m7i.large and m7i.xlarge nodes labelled tier, replaced two at a time when
// they drift (a do-not-disrupt pod held for 8 s at most), never consolidated.
func rollPairPolicy(tier string) string {
	return `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: roll
  instanceTypes: [m7i.large, m7i.xlarge]
  capacityTypes: [on-demand]
  labels:
    tier: ` + tier + `
  disruption:
    consolidation: never
    terminationGracePeriod: 8s
    budgets:
    - nodes: "2"
`
}

// testConcurrentReplacementsKeepTheirPods: an m7i.large (1930m) runs small (1500m) and an
// m7i.xlarge (3920m) runs large (3000m, annotated tiler.dev/do-not-disrupt). Both drift at once
// (the pool's label changes; its budget allows two), so two Replace actions start together, each
// replacement an empty node of its old node's type. Small is evicted as soon as its replacement
// is Ready; large is held until the pool's terminationGracePeriod (8 s) ends, its replacement
// Ready and empty meanwhile. kube-scheduler's LeastAllocated score prefers the emptier xlarge for
// small's replica: when replacements registered open, it took the xlarge planned for large, whose
// replica then fit nowhere and was bought a node (as campaign seed 44's expiry swapped 12 pods
// and bought two nodes). Now each replacement stays reserved until its own action's pods go:
// small's replica on the new m7i.large, large's on the new m7i.xlarge; two launches; small
// evicted, large deleted at the period's end, none lost; no reservation left at the end.
func testConcurrentReplacementsKeepTheirPods(t *testing.T, cp *controlplane.ControlPlane) {
	e, passes := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns = "concurrent-replacements"
	e.namespace(ns)
	ctx := context.Background()
	e.applyPolicy("policy", rollPairPolicy("a"))
	e.deployment(ns, "small", 1, simtest.Pod("t").Namespace(ns).Label("app", "small").CPU("1500m").Mem("512Mi").Obj())
	e.deployment(ns, "large", 1, simtest.Pod("t").Namespace(ns).Label("app", "large").CPU("3").Mem("512Mi").
		Annotate(api.AnnotationDoNotDisrupt, "true").Obj())
	old := map[string]bool{}
	for _, app := range []string{"small", "large"} {
		old[e.waitAppReady(ns, app, 1, 60*time.Second)[0].Spec.NodeName] = true
	}
	if len(old) != 2 || len(e.managedNodes()) != 2 {
		t.Fatalf("small and large on %v: want two nodes", old)
	}
	testwait.Until(t, testwait.Slow, "every node carrying "+api.AnnotationPoolHash, 30*time.Second, func() bool {
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Annotations[api.AnnotationPoolHash] == "" })
	})
	launches := e.launches()
	lw := e.watchLifecycle(ns)
	lw.expectForced(labels.SelectorFromSet(labels.Set{"app": "large"}))
	e.applyPolicy("policy", rollPairPolicy("b"))
	var pods []corev1.Pod
	testwait.Until(t, testwait.Slow, "both drifted nodes gone and both replicas bound", 3*time.Minute, func() bool {
		if slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return old[n.Name] }) {
			return false
		}
		pods = append(e.appPods(ns, "small"), e.appPods(ns, "large")...)
		return len(pods) == 2 && pods[0].Spec.NodeName != "" && pods[1].Spec.NodeName != ""
	})
	want := map[string]string{"small": "m7i.large", "large": "m7i.xlarge"}
	for _, p := range pods {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if typ := n.Labels[corev1.LabelInstanceTypeStable]; typ != want[p.Labels["app"]] {
			t.Errorf("%s's replica on %s (%s), want its own replacement, an %s", p.Labels["app"], n.Name, typ, want[p.Labels["app"]])
		}
	}
	if got := e.launches() - launches; got != 2 {
		e.explainPurchases()
		t.Errorf("%d launches after the drift, want the two replacements", got)
	}
	for n := range old {
		if !passes.done(api.ActionReplace, n) {
			t.Errorf("no Replace action on %s reported done", n)
		}
	}
	evicted, lost := lw.finish(30 * time.Second)
	if len(evicted) != 1 || len(lost) > 0 || len(lw.forcedPods()) != 1 {
		t.Errorf("evicted %v through the Eviction API, deleted %d past the period, lost %v with the node; want small evicted, large deleted, none lost",
			evicted, len(lw.forcedPods()), lost)
	}
	testwait.Until(t, testwait.Slow, "the replacements' reservations ended", 20*time.Second, func() bool {
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool {
			return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == api.TaintReserved })
		})
	})
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}
