package provisioner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

const oneGPUPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu
  instanceTypes: [g6.xlarge]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`

// testOnePublisherPerNode: a plain nvidia.com/gpu pod and a pod claiming a GPU through DRA, which
// by CPU fit one one-GPU g6.xlarge together, get a node each, bound there by the real
// kube-scheduler: the plain pod a node of the device plugin (nvidia.com/gpu, no ResourceSlice),
// the claim a node of the DRA driver alone (its slice, the deploy labels, no nvidia.com/gpu) —
// never one L4 given to both. The DRA node's launch record keeps its GPU configuration through
// the API server (a field the CRD lacked was pruned, and the node, never showing the GPUs its
// record promised, was bought again and again): two launches in all, also in a batch that sees
// both pods bound.
func testOnePublisherPerNode(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	e.applyPolicy("policy", oneGPUPolicy)
	e.draClasses(false)

	plain := simtest.Pod("plain-gpu").Label("app", "publisher").CPU("1").Mem("2Gi").GPU(1).Obj()
	claimed := simtest.Pod("claimed-gpu").Label("app", "publisher").CPU("1").Mem("2Gi").Tolerate("nvidia.com/gpu").Obj()
	claimed.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}}
	claimed.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	pods := []*corev1.Pod{plain, claimed}
	e.create(pods...)
	bound := e.waitBound(2*time.Minute, pods...)
	e.waitBatch("a batch that sees both pods bound", time.Minute, func(b batch) bool { return b.boundPods("default", "app=publisher") == 2 })

	pn, cn := bound["default/plain-gpu"], bound["default/claimed-gpu"]
	if pn == cn {
		t.Errorf("both pods bound to %s, which has one L4", pn)
	}
	if n, slices := e.nodeAndSlices(pn); n.Status.Allocatable.Name(api.ResourceGPU, "").Value() != 1 || slices != 0 {
		t.Errorf("plain pod's node %s: nvidia.com/gpu %v, %d ResourceSlices; want the device plugin's one GPU alone",
			pn, n.Status.Allocatable.Name(api.ResourceGPU, ""), slices)
	}
	if n, slices := e.nodeAndSlices(cn); !draDriverNode(n, slices) {
		t.Errorf("claim pod's node %s: allocatable %v, %d ResourceSlices, labels %v; want the DRA driver's slice alone",
			cn, n.Status.Allocatable, slices, n.Labels)
	}
	if got, managed := e.launches(), len(e.managedNodes()); got != 2 || managed != 2 {
		t.Errorf("%d launches, %d managed nodes; want 2 of each", got, managed)
		e.explainPurchases()
	}
	e.cleanup(pods)
}

// draClasses creates the NVIDIA DRA driver's GPU DeviceClass (serving nvidia.com/gpu as its
// extendedResourceName when extended is set) and a one-GPU claim template in default, removed
// when the test ends.
func (e *env) draClasses(extended bool) {
	e.t.Helper()
	ctx := context.Background()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}}}
	if extended {
		class.Spec.ExtendedResourceName = new(string(api.ResourceGPU))
	}
	if _, err := e.kube.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name}}}}}}}
	if _, err := e.kube.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.kube.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), tmpl.Name, metav1.DeleteOptions{})
		_ = e.kube.ResourceV1().DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
}

// nodeAndSlices returns the node and how many ResourceSlices it has.
func (e *env) nodeAndSlices(name string) (*corev1.Node, int) {
	e.t.Helper()
	ctx := context.Background()
	n, err := e.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := e.kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	return n, len(l.Items)
}

// draDriverNode reports whether the node's GPUs are the DRA driver's alone: a slice, the GPU
// operator's deploy labels, no nvidia.com/gpu.
func draDriverNode(n *corev1.Node, slices int) bool {
	_, plugin := n.Status.Allocatable[api.ResourceGPU]
	return !plugin && slices == 1 && n.Labels[api.LabelDeployDevicePlugin] == "false" && n.Labels[api.LabelDeployDRADriver] == "true"
}

// testDRADriverServesPlainGPU: in a pool pinned to the DRA driver (gpu.driver dra), a plain
// nvidia.com/gpu pod is bought a node of the DRA driver alone and bound there by the real
// kube-scheduler through the DeviceClass's extendedResourceName (the scheduler's claim for the
// pod takes the node's L4); one launch.
func testDRADriverServesPlainGPU(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	e.applyPolicy("policy", strings.Replace(oneGPUPolicy, "  capacityTypes: [on-demand]\n", "  capacityTypes: [on-demand]\n  gpu: {driver: dra}\n", 1))
	e.draClasses(true)
	plain := simtest.Pod("plain-gpu").Label("app", "publisher").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(plain)
	bound := e.waitBound(2*time.Minute, plain)
	if n, slices := e.nodeAndSlices(bound["default/plain-gpu"]); !draDriverNode(n, slices) {
		t.Errorf("plain pod's node %s: allocatable %v, %d ResourceSlices, labels %v; want the DRA driver's slice alone",
			n.Name, n.Status.Allocatable, slices, n.Labels)
	}
	got, err := e.kube.CoreV1().Pods("default").Get(context.Background(), plain.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.ExtendedResourceClaimStatus; st == nil || st.ResourceClaimName == "" {
		t.Errorf("the pod got its GPU without an extended-resource claim: %+v", st)
	}
	if n := e.launches(); n != 1 {
		t.Errorf("%d launches, want 1", n)
		e.explainPurchases()
	}
	e.cleanup([]*corev1.Pod{plain})
}
