package provisioner_test

import (
	"context"
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// migPolicy buys p4d.24xlarge (8 × A100-40GB) in MIG slices (mixed strategy).
const migPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: mig
  instanceFamilies: [p4d]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: mig, migStrategy: mixed}
`

// testMIGRelayout: seven pods take seven GPUs' worth of 1g.5gb slices of a p4d Tiler bought in
// all-1g.5gb; a pod asking for a 3g.20gb slice then arrives.
// With --mig-relayout Tiler re-partitions the idle eighth GPU instead of buying a second p4d
// (relayout.go): the simulated MIG manager applies the new nvidia.com/mig.config after its delay,
// the device plugin advertises the new slices a little later, the real scheduler binds the pod there, no second instance is launched, and the
// tiler.dev/mig-relayout annotation is gone once the state is success.
func testMIGRelayout(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.MIGRelayout = true
	// The new slices are advertised 2 s after the MIG manager's success, as when the device plugin
	// restarts: a batch in between must still count the node with its new layout, not buy.
	e := newEnv(t, cp, cfg, func(c *sim.Config) { c.MIGReconfigureDelay, c.MIGAdvertiseDelay = 3*time.Second, 2*time.Second })
	e.applyPolicy("policy", migPolicy)
	// migPod asks for n slices of the profile (extended resources need limits equal to requests).
	migPod := func(name, app, profile string, n int) *corev1.Pod {
		p := simtest.Pod(name).Label("app", app).CPU("1").Mem("2Gi").Tolerate("nvidia.com/gpu").Obj()
		q := *resource.NewQuantity(int64(n), resource.DecimalSI)
		c := &p.Spec.Containers[0]
		c.Resources.Requests[corev1.ResourceName("nvidia.com/mig-"+profile)] = q
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceName("nvidia.com/mig-" + profile): q}
		return p
	}
	var small []*corev1.Pod
	for i := range 7 {
		small = append(small, migPod(named("slices", i), "slices", "1g.5gb", 7))
	}
	e.create(small...)
	bound := e.waitBound(2*time.Minute, small...)
	if got := e.launches(); got != 1 {
		t.Fatalf("%d launches for 49 slices, want one p4d", got)
	}
	node := bound["default/slices-0"]
	// The node carries its pool's hash from the launch record (drift detection).
	pol, err := policy.Parse([]byte(migPolicy))
	if err != nil {
		t.Fatal(err)
	}
	wantHash := policy.PoolHash(&pol.Pools[0])
	e.waitNode(func(n *corev1.Node) bool {
		return n.Name == node && n.Annotations[api.AnnotationPoolHash] == wantHash
	}, 30*time.Second)
	if n, err := e.kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{}); err != nil || n.Labels[api.LabelMIGConfig] != "all-1g.5gb" {
		t.Fatalf("the p4d bought for 49 1g.5gb slices: %v (%v); the scenario needs every GPU in 1g.5gb", n.Labels, err)
	}
	mid := migPod("mid-slice", "mid", "3g.20gb", 1)
	e.create(mid)
	e.waitNode(func(n *corev1.Node) bool {
		return n.Name == node && n.Annotations[api.AnnotationMIGRelayout] != ""
	}, time.Minute)
	got := e.waitBound(time.Minute, mid)
	if got["default/mid-slice"] != node {
		t.Errorf("the 3g.20gb pod bound to %s, want the re-laid-out %s", got["default/mid-slice"], node)
	}
	e.waitNode(func(n *corev1.Node) bool {
		return n.Name == node && n.Annotations[api.AnnotationMIGRelayout] == "" &&
			n.Labels[api.LabelMIGConfigState] == api.MIGConfigSuccess
	}, time.Minute)
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches, want 1: the re-layout should have replaced a purchase", got)
	}
	n, err := e.kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := n.Status.Allocatable["nvidia.com/mig-3g.20gb"]; q.Value() < 1 {
		t.Errorf("node %s advertises %v, want 3g.20gb slices", node, n.Status.Allocatable)
	}
	e.cleanup(append(small, mid))
}
