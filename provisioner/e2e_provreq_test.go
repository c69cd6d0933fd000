package provisioner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"go.uber.org/zap/zaptest"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

const provreqPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.xlarge]
  limits: {maxNodes: 3}
`

// provreqEnv is an env whose controller answers ProvisioningRequests (autoscaling.x-k8s.io/v1), with the
// policy of one pool of m7i.xlarge (4 vCPU) limited to three nodes; tweak, when set, changes the
// test configuration.
func provreqEnv(t *testing.T, cp *controlplane.ControlPlane, tweak func(*provisioner.Config)) (*env, dynamic.Interface) {
	dyn := installCRDs(t, cp) // deploy/crds carries a ProvisioningRequest CRD
	cfg := testConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	e := newEnvSetup(t, cp, cfg, nil, answersRequests(t, dyn, cfg))
	e.applyPolicy("policy", provreqPolicy)
	return e, dyn
}

// answersRequests is the setup of an env whose controller answers ProvisioningRequests.
func answersRequests(t *testing.T, dyn dynamic.Interface, cfg provisioner.Config) func(*provisioner.Options) {
	return func(o *provisioner.Options) {
		src, err := prescale.NewProvisioningRequests(prescale.Config{Namespace: cfg.Namespace}, o.Kube, dyn, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		o.ProvisioningRequests = src
	}
}

// createTemplate creates the PodTemplate default/<name> of pods requesting cpu and 1 GiB.
func (e *env) createTemplate(name, cpu string) *corev1.Pod {
	e.t.Helper()
	p := simtest.Pod(name).Label("app", name).CPU(cpu).Mem("1Gi").Obj()
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec}}
	if _, err := e.kube.CoreV1().PodTemplates("default").Create(context.Background(), pt, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.kube.CoreV1().PodTemplates("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return p
}

// createRequest creates the ProvisioningRequest default/<name> of count pods of the template.
func createRequest(t *testing.T, dyn dynamic.Interface, name, class, template string, count int64, params map[string]any) {
	t.Helper()
	spec := map[string]any{"provisioningClassName": class,
		"podSets": []any{map[string]any{"podTemplateRef": map[string]any{"name": template}, "count": count}}}
	if params != nil {
		spec["parameters"] = params
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
	if _, err := dyn.Resource(prescale.ProvisioningRequestResource).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(prescale.ProvisioningRequestResource).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// requestConditions returns the status.conditions of the request default/<name>.
func requestConditions(t *testing.T, dyn dynamic.Interface, name string) []metav1.Condition {
	t.Helper()
	return requestConditionsIn(t, dyn, "default", name)
}

// requestConditionsIn returns the status.conditions of the request ns/<name>.
func requestConditionsIn(t *testing.T, dyn dynamic.Interface, ns, name string) []metav1.Condition {
	t.Helper()
	u, err := dyn.Resource(prescale.ProvisioningRequestResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []metav1.Condition
	for _, c := range raw {
		m, _ := c.(map[string]any)
		out = append(out, metav1.Condition{Type: fmt.Sprint(m["type"]), Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
			Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])})
	}
	return out
}

// waitCondition waits until the request default/<name> has the condition type with status and
// reason, and returns how long that took.
func waitCondition(t *testing.T, dyn dynamic.Interface, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) time.Duration {
	t.Helper()
	return waitConditionIn(t, dyn, "default", name, typ, status, reason, timeout)
}

// waitConditionIn is waitCondition for the request ns/<name>.
func waitConditionIn(t *testing.T, dyn dynamic.Interface, ns, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last []metav1.Condition
	err := testwait.Poll(testwait.Slow, timeout, func() bool {
		last = requestConditionsIn(t, dyn, ns, name)
		c := apimeta.FindStatusCondition(last, typ)
		return c != nil && c.Status == status && c.Reason == reason
	})
	if err != nil {
		t.Fatalf("ProvisioningRequest %s conditions %+v; want %s=%s (%s) within %s", name, last, typ, status, reason, timeout)
	}
	return time.Since(start)
}

// instances counts the simulated cloud's instances.
func (e *env) instances() int {
	e.t.Helper()
	insts, err := e.cloud.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return len(insts)
}

// settle waits for three batches that start after the call, so that a purchase or a status the
// controller would make has been made.
func (e *env) settle(what string) {
	e.t.Helper()
	n := e.batches.count()
	e.waitBatch(what, 30*time.Second, func(batch) bool { return e.batches.count() >= n+3 })
}

// testProvisioningRequestCheckCapacity: a check-capacity request for two 1-CPU pods in an empty
// cluster is answered Provisioned=False (CapacityIsNotFound) and nothing is bought; once a pod
// of its own has a node bought, the same request is answered Provisioned=True (CapacityIsFound)
// without a purchase. A request for ten such pods (more than the node) stays Provisioned=False,
// one with noRetry is Failed, and one of an unknown class is left alone.
func testProvisioningRequestCheckCapacity(t *testing.T, cp *controlplane.ControlPlane) {
	e, dyn := provreqEnv(t, cp, nil)
	e.createTemplate("cc", "1")
	createRequest(t, dyn, "check", provisioner.ClassCheckCapacity, "cc", 2, nil)
	took := waitCondition(t, dyn, "check", provisioner.ConditionProvisioned, metav1.ConditionFalse, provisioner.ReasonCapacityIsNotFound, time.Minute)
	t.Logf("empty cluster: Provisioned=False after %s", took.Round(time.Millisecond))
	if c := apimeta.FindStatusCondition(requestConditions(t, dyn, "check"), provisioner.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("no Accepted=True condition: %+v", requestConditions(t, dyn, "check"))
	}
	e.settle("batches after the empty-cluster answer")
	if n, inst := e.launches(), e.instances(); n != 0 || inst != 0 {
		t.Fatalf("%d launches, %d instances for a check-capacity request; want none", n, inst)
	}
	// A pod of its own buys one node (4 vCPU): room for the request's two pods.
	seed := simtest.Pod("cc-seed").CPU("1").Mem("1Gi").Obj()
	e.create(seed)
	e.waitBound(time.Minute, seed)
	before, instBefore := e.launches(), e.instances()
	start := time.Now()
	waitCondition(t, dyn, "check", provisioner.ConditionProvisioned, metav1.ConditionTrue, provisioner.ReasonCapacityIsFound, time.Minute)
	t.Logf("one node bought for another pod: Provisioned=True after %s", time.Since(start).Round(time.Millisecond))
	createRequest(t, dyn, "check-big", provisioner.ClassCheckCapacity, "cc", 10, nil)
	createRequest(t, dyn, "check-noretry", provisioner.ClassCheckCapacity, "cc", 10, map[string]any{provisioner.NoRetryParameter: "true"})
	createRequest(t, dyn, "other-class", "queued-provisioning.gke.io", "cc", 1, nil)
	waitCondition(t, dyn, "check-big", provisioner.ConditionProvisioned, metav1.ConditionFalse, provisioner.ReasonCapacityIsNotFound, time.Minute)
	waitCondition(t, dyn, "check-noretry", provisioner.ConditionFailed, metav1.ConditionTrue, provisioner.ReasonCapacityIsNotFound, time.Minute)
	e.settle("batches after the answers")
	if after, inst := e.launches(), e.instances(); after != before || inst != instBefore {
		t.Errorf("%d launches and %d instances after the check-capacity answers, %d and %d before: a check bought", after, inst, before, instBefore)
		e.explainPurchases()
	}
	if c := requestConditions(t, dyn, "other-class"); len(c) != 0 {
		t.Errorf("a request of an unknown class got conditions %+v; want none", c)
	}
	// The booked request's room is held by its two placeholders on the node.
	testwait.Until(t, testwait.Slow, "the booked request's two placeholders bound", time.Minute, func() bool {
		bound := 0
		for _, p := range e.placeholders() {
			if p.Spec.NodeName != "" && p.Annotations[api.AnnotationPlaceholderWorkload] == "ProvisioningRequest/default/check" {
				bound++
			}
		}
		return bound == 2
	})
	e.cleanup([]*corev1.Pod{seed})
	_ = e.kube.CoreV1().Pods(e.cfg.Namespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: api.LabelPlaceholder})
}

// testProvisioningRequestAtomic: a best-effort-atomic request for two 3-CPU pods is Accepted,
// its two nodes are bought in one batch and it is Provisioned=True (CapacityIsProvisioned);
// placeholders hold the booked room; the request's two pods, created afterwards with the
// consume annotation, are bound by the real kube-scheduler on the two nodes bought, nothing is
// bought again, and the booking ends consumed. A request for four such pods, beyond the pool's
// three nodes, is Failed and buys nothing.
func testProvisioningRequestAtomic(t *testing.T, cp *controlplane.ControlPlane) {
	e, dyn := provreqEnv(t, cp, nil)
	tmpl := e.createTemplate("ba", "3")
	start := time.Now()
	createRequest(t, dyn, "atomic", provisioner.ClassBestEffortAtomic, "ba", 2, nil)
	took := waitCondition(t, dyn, "atomic", provisioner.ConditionProvisioned, metav1.ConditionTrue, provisioner.ReasonCapacityIsProvisioned, time.Minute)
	t.Logf("best-effort-atomic: Provisioned=True %s after the request", took.Round(time.Millisecond))
	if c := apimeta.FindStatusCondition(requestConditions(t, dyn, "atomic"), provisioner.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("no Accepted=True condition: %+v", requestConditions(t, dyn, "atomic"))
	}
	bought := e.launches()
	if bought != 2 {
		t.Fatalf("%d launches for a request of two 3-CPU pods on 4-vCPU nodes; want 2", bought)
	}
	testwait.Until(t, testwait.Slow, "the booked room's two placeholders bound", 90*time.Second, func() bool {
		bound := 0
		for _, p := range e.placeholders() {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2
	})
	t.Logf("booked room held by placeholders %s after the request", time.Since(start).Round(time.Millisecond))
	booked := map[string]bool{}
	for _, n := range e.managedNodes() {
		booked[n.Name] = true
	}
	e.settle("batches with the room booked")
	if n := e.launches(); n != bought {
		t.Fatalf("%d launches while the room is booked, %d before", n, bought)
	}
	var pods []*corev1.Pod
	for i := range 2 {
		p := tmpl.DeepCopy()
		p.Name = named("ba", i)
		p.Annotations = map[string]string{api.AnnotationConsumeProvisioningRequest: "atomic"}
		pods = append(pods, p)
	}
	arrive := time.Now()
	e.create(pods...)
	on := e.waitBound(time.Minute, pods...)
	t.Logf("the request's pods bound %s after they were created", time.Since(arrive).Round(time.Millisecond))
	for p, n := range on {
		if !booked[n] {
			t.Errorf("%s bound on %s, not on a node bought for the request (%v)", p, n, booked)
		}
	}
	waitCondition(t, dyn, "atomic", provisioner.ConditionBookingExpired, metav1.ConditionTrue, provisioner.ReasonCapacityBookingConsumed, time.Minute)
	e.settle("batches after the booking was consumed")
	if n := e.launches(); n != bought {
		t.Errorf("%d launches after the request's pods arrived, %d before: bought twice", n, bought)
		e.explainPurchases()
	}
	if n := len(e.placeholders()); n != 0 {
		t.Errorf("%d placeholder pods left after the booking was consumed", n)
	}
	// Four more 3-CPU pods need four nodes; the pool has room for one more.
	createRequest(t, dyn, "atomic-big", provisioner.ClassBestEffortAtomic, "ba", 4, nil)
	took = waitCondition(t, dyn, "atomic-big", provisioner.ConditionFailed, metav1.ConditionTrue, string(api.LimitExceeded), time.Minute)
	t.Logf("a request beyond the pool limit: Failed after %s", took.Round(time.Millisecond))
	e.settle("batches after the failure")
	if n := e.launches(); n != bought {
		t.Errorf("%d launches after a request beyond the pool limit, %d before: want none", n, bought)
		e.explainPurchases()
	}
	e.cleanup(pods)
}

// testProvisioningRequestWatched: with housekeeping batches an hour apart and nothing else
// happening in the cluster, a new check-capacity request is answered within seconds: the
// controller watches ProvisioningRequests and runs a batch when one changes.
func testProvisioningRequestWatched(t *testing.T, cp *controlplane.ControlPlane) {
	e, dyn := provreqEnv(t, cp, func(c *provisioner.Config) { c.ResyncPeriod = time.Hour })
	e.createTemplate("cw", "1")
	e.waitBatch("the batch of the policy", 30*time.Second, func(batch) bool { return true })
	createRequest(t, dyn, "watched", provisioner.ClassCheckCapacity, "cw", 1, nil)
	took := waitCondition(t, dyn, "watched", provisioner.ConditionProvisioned, metav1.ConditionFalse, provisioner.ReasonCapacityIsNotFound, 15*time.Second)
	t.Logf("answered %s after the request, without a housekeeping batch", took.Round(time.Millisecond))
	e.cleanup(nil)
}
