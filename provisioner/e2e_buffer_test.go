package provisioner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

const bufferPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.xlarge]
`

// testCapacityBuffer: a CapacityBuffer (autoscaling.x-k8s.io/v1beta1) of two chunks of a PodTemplate is bought
// ahead and held by placeholder pods, its status saying 2 held; two real pods of the template
// then arrive and are bound on the room bought, without another purchase, and the buffer's
// status says the room was released (0 held) — the forecast machinery with a buffer's size.
func testCapacityBuffer(t *testing.T, cp *controlplane.ControlPlane) {
	dyn := installCRDs(t, cp) // deploy/crds carries a CapacityBuffer CRD
	ctx := context.Background()
	cfg := testConfig()
	setup := func(o *provisioner.Options) {
		b, err := prescale.NewBuffers(prescale.Config{Namespace: cfg.Namespace, Interval: time.Hour}, o.Kube, dyn, clock.RealClock{}, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		o.Prescaler = b
	}
	tmplPod := simtest.Pod("buf-web").Label("app", "buf-web").CPU("1").Mem("2Gi").Obj()
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "buf-web", Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmplPod.Labels}, Spec: tmplPod.Spec}}
	buf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "buf-web"}, "replicas": int64(2)},
	}}
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := kube.CoreV1().PodTemplates("default").Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Create(ctx, buf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newEnvSetup(t, cp, cfg, nil, setup)
	e.applyPolicy("policy", bufferPolicy)
	testwait.Until(t, testwait.Slow, "two placeholder pods bound on bought nodes", 90*time.Second, func() bool {
		bound := 0
		for _, p := range e.placeholders() {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2
	})
	waitBufferHeld(t, dyn, 2)
	bought := e.launches()
	if bought == 0 {
		t.Fatal("placeholders bound but nothing bought")
	}
	t.Logf("the buffer's two chunks held on %d bought node(s)", bought)
	pods := []*corev1.Pod{
		simtest.Pod("buf-web-0").Label("app", "buf-web").CPU("1").Mem("2Gi").Obj(),
		simtest.Pod("buf-web-1").Label("app", "buf-web").CPU("1").Mem("2Gi").Obj(),
	}
	e.create(pods...)
	e.waitBound(time.Minute, pods...)
	waitBufferHeld(t, dyn, 0)
	for range 3 {
		e.waitBatch("a batch after the real pods bound", 30*time.Second, func(b batch) bool { return b.boundPods("default", "app=buf-web") == 2 })
	}
	if got := e.launches(); got != bought {
		t.Errorf("%d launches after the real pods arrived, %d before: the buffer's room was not used", got, bought)
		e.explainPurchases()
	}
	if n := len(e.placeholders()); n != 0 {
		t.Errorf("%d placeholder pods left after the buffer's room was used", n)
	}
	_ = dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Delete(ctx, "web", metav1.DeleteOptions{})
	_ = e.kube.CoreV1().PodTemplates("default").Delete(ctx, "buf-web", metav1.DeleteOptions{})
	e.cleanup(pods)
}

// waitBufferHeld waits until the buffer default/web's status says held chunks are held.
func waitBufferHeld(t *testing.T, dyn dynamic.Interface, held int64) {
	t.Helper()
	var last map[string]any
	err := testwait.Poll(testwait.Slow, time.Minute, func() bool {
		u, err := dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		last, _, _ = unstructured.NestedMap(u.Object, "status")
		got, ok, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return ok && got == held
	})
	if err != nil {
		t.Fatalf("CapacityBuffer status %v; want replicas %d", last, held)
	}
}

// testCapacityBufferSizing: a buffer of 50 % of a three-replica Deployment holds two chunks
// (rounded up); a buffer sized by limits alone and one referring to a ReplicaSet are not held,
// and their Provisioning condition says why, naming the field.
func testCapacityBufferSizing(t *testing.T, cp *controlplane.ControlPlane) {
	dyn := installCRDs(t, cp) // deploy/crds carries a CapacityBuffer CRD
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cfg := testConfig()
	// Nothing can hold the Deployment's pods, so nothing is bought: only the sizing is watched.
	tmpl := simtest.Pod("pct").Label("app", "pct").CPU("1").Mem("1Gi").Obj()
	tmpl.Spec.NodeSelector = map[string]string{"tiler.dev/nowhere": "true"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pct", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buffers := map[string]map[string]any{
		"pct":        {"scalableRef": map[string]any{"apiGroup": "apps", "kind": "Deployment", "name": "pct"}, "percentage": int64(50)},
		"limits":     {"scalableRef": map[string]any{"apiGroup": "apps", "kind": "Deployment", "name": "pct"}, "limits": map[string]any{"cpu": "4"}},
		"replicaset": {"scalableRef": map[string]any{"apiGroup": "apps", "kind": "ReplicaSet", "name": "pct"}, "replicas": int64(1)},
	}
	for name, spec := range buffers {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
		if _, err := dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvSetup(t, cp, cfg, nil, func(o *provisioner.Options) {
		b, err := prescale.NewBuffers(prescale.Config{Namespace: cfg.Namespace, Interval: time.Hour}, o.Kube, dyn, clock.RealClock{}, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		o.Prescaler = b
	})
	waitBufferStatus(t, dyn, "pct", "True", "2 of 2 chunks held", 2)
	waitBufferStatus(t, dyn, "limits", "False", "spec.limits alone", -1)
	waitBufferStatus(t, dyn, "replicaset", "False", `spec.scalableRef.kind "ReplicaSet"`, -1)
	for name := range buffers {
		_ = dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Delete(ctx, name, metav1.DeleteOptions{})
	}
	_ = kube.AppsV1().Deployments("default").Delete(ctx, "pct", metav1.DeleteOptions{})
	_ = kube.CoreV1().Pods(cfg.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tiler.dev/placeholder"})
	e.cleanup(nil)
}

// waitBufferStatus waits until the buffer's Provisioning condition has the status and a message
// holding substr, and, when replicas ≥ 0, its status.replicas is replicas.
func waitBufferStatus(t *testing.T, dyn dynamic.Interface, name, status, substr string, replicas int64) {
	t.Helper()
	var last map[string]any
	err := testwait.Poll(testwait.Slow, time.Minute, func() bool {
		u, err := dyn.Resource(prescale.CapacityBufferResource).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last, _, _ = unstructured.NestedMap(u.Object, "status")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		ok := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == prescale.ConditionProvisioning && m["status"] == status && strings.Contains(fmt.Sprint(m["message"]), substr) {
				ok = true
			}
		}
		if replicas >= 0 {
			got, has, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
			ok = ok && has && got == replicas
		}
		return ok
	})
	if err != nil {
		t.Fatalf("CapacityBuffer %s status %v; want condition %s %s saying %q (replicas %d)", name, last, prescale.ConditionProvisioning, status, substr, replicas)
	}
}
