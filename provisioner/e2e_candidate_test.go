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
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// xlargePolicy buys m7i.xlarge nodes only (3920m allocatable: three 1-CPU pods each), with the
// given consolidateAfter.
func xlargePolicy(consolidateAfter string) string {
	return `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.xlarge]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: ` + consolidateAfter + "\n"
}

// candidatePolicy: a node is a candidate once it is consolidateAfter old, and removed once it has
// been one that long: 20 s leaves the scenario time to act while node A is a candidate.
var candidatePolicy = xlargePolicy("20s")

// testCandidateTaint: node A runs three 1-CPU pods of app a, node B two of app b. Scaled to one
// pod of a, A is the node consolidation would remove (its pod fits on B): A gets the taint
// tiler.dev/disruption-candidate:PreferNoSchedule, B does not. A new 1-CPU pod then goes to B,
// which has room, although A is the emptier node that kube-scheduler's LeastAllocated score
// prefers (without the taint it went to A). With B full, A's pod no longer fits elsewhere: A is
// no candidate any more, and its taint is removed.
func testCandidateTaint(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	const ns = "candidate-taint"
	e.namespace(ns)
	e.applyPolicy("policy", candidatePolicy)
	pod := func(app string) *corev1.Pod {
		return simtest.Pod("t").Namespace(ns).Label("app", app).CPU("1").Mem("1Gi").Obj()
	}
	e.deployment(ns, "a", 3, pod("a"))
	nodeA := e.waitAppReady(ns, "a", 3, 60*time.Second)[0].Spec.NodeName
	e.deployment(ns, "b", 2, pod("b"))
	nodeB := e.waitAppReady(ns, "b", 2, 60*time.Second)[0].Spec.NodeName
	if nodeA == nodeB || len(e.managedNodes()) != 2 {
		t.Fatalf("nodes %v, a on %s, b on %s: want one node each", names(e.managedNodes()), nodeA, nodeB)
	}
	tainted := func(name string) bool {
		n, err := e.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == api.TaintDisruptionCandidate && t.Effect == corev1.TaintEffectPreferNoSchedule
		})
	}
	e.scale(ns, "a", 1)
	e.waitAppReady(ns, "a", 1, 30*time.Second)
	testwait.Until(t, testwait.Slow, "node A to carry the disruption-candidate taint", 45*time.Second, func() bool { return tainted(nodeA) })
	if tainted(nodeB) {
		t.Errorf("node B %s carries the disruption-candidate taint; only A %s is a candidate", nodeB, nodeA)
	}
	e.deployment(ns, "c", 1, pod("c"))
	if on := e.waitAppReady(ns, "c", 1, 30*time.Second)[0].Spec.NodeName; on != nodeB {
		t.Errorf("the new pod is on %s, want B %s: A %s is a candidate", on, nodeB, nodeA)
	}
	testwait.Until(t, testwait.Slow, "node A's taint to be removed once it is no candidate", 30*time.Second, func() bool { return !tainted(nodeA) })
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}
