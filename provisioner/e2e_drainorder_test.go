package provisioner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
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
	replaced := false
	for _, p := range passes.all() {
		for _, a := range p.Actions {
			replaced = replaced || a.Kind == api.ActionReplace && a.Step == provisioner.ActionDone && slices.Contains(a.Nodes, nodeX)
		}
	}
	if !replaced {
		t.Error("no Replace action on X reported done")
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}
