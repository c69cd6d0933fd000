package crds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
)

var (
	provreqs = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1", Resource: "provisioningrequests"}
	buffers  = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Resource: "capacitybuffers"}
)

// TestAll: every file of the directory parses and is a CustomResourceDefinition.
func TestAll(t *testing.T) {
	defs, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range defs {
		if d.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s: kind %q", d.GetName(), d.GetKind())
		}
		names[d.GetName()] = true
	}
	for _, n := range []string{"launchrecords.tiler.dev", "provisioningrequests.autoscaling.x-k8s.io", "capacitybuffers.autoscaling.x-k8s.io"} {
		if !names[n] {
			t.Errorf("no CustomResourceDefinition %s in %v", n, names)
		}
	}
}

// TestSchemas installs the definitions on a real API server and checks what their schemas
// accept and refuse: objects shaped as the Cluster Autoscaler and Kueue write them (with fields
// the schemas do not spell out) are kept whole, the fields Tiler reads are validated, and status
// conditions must have the shape of metav1.Condition.
func TestSchemas(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	if err := crds.Install(context.Background(), dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Installing again (a restart of the demo, a second test) is a no-op that succeeds.
	if err := crds.Install(context.Background(), dyn, time.Minute); err != nil {
		t.Fatalf("second install: %v", err)
	}
	t.Run("ProvisioningRequest", func(t *testing.T) { testProvisioningRequest(t, dyn) })
	t.Run("CapacityBuffer", func(t *testing.T) { testCapacityBuffer(t, dyn) })
}

func object(gvr schema.GroupVersionResource, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
}

// mustRefuse creates the object and wants an Invalid error naming field.
func mustRefuse(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured, field string) {
	t.Helper()
	_, err := dyn.Resource(gvr).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{})
	if err == nil {
		t.Errorf("%s accepted; want it refused for %s", u.GetName(), field)
		return
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("%s refused with %v; want the error to name %s", u.GetName(), err, field)
	}
}

// patchStatus merges status into the object's status subresource.
func patchStatus(dyn dynamic.Interface, gvr schema.GroupVersionResource, name, status string) (*unstructured.Unstructured, error) {
	return dyn.Resource(gvr).Namespace("default").Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"status":`+status+`}`), metav1.PatchOptions{}, "status")
}

const goodCondition = `{"type":"Provisioned","status":"True","reason":"CapacityIsFound","message":"found","lastTransitionTime":"2026-01-02T03:04:05Z","observedGeneration":1}`

func testProvisioningRequest(t *testing.T, dyn dynamic.Interface) {
	ctx := context.Background()
	podSets := func(count int64) []any {
		return []any{map[string]any{"podTemplateRef": map[string]any{"name": "tpl"}, "count": count}}
	}
	// Shaped as Kueue writes one, with a field this schema does not spell out.
	good := object(provreqs, "ProvisioningRequest", "good", map[string]any{
		"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": podSets(3),
		"parameters": map[string]any{"noRetry": "true", "ValidUntilSeconds": "600"}, "someFutureField": "kept"})
	if _, err := dyn.Resource(provreqs).Namespace("default").Create(ctx, good, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := patchStatus(dyn, provreqs, "good", `{"conditions":[`+goodCondition+`],"provisioningClassDetails":{"detail":"x"},"futureStatus":{"a":1}}`)
	if err != nil {
		t.Fatalf("a status as the Cluster Autoscaler writes it: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "someFutureField"); v != "kept" {
		t.Errorf("spec.someFutureField %q after the round trip; want it kept", v)
	}
	if v, _, _ := unstructured.NestedMap(got.Object, "status", "futureStatus"); v["a"] == nil {
		t.Errorf("status.futureStatus %v after the round trip; want it kept", v)
	}
	if conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); len(conds) != 1 {
		t.Errorf("status.conditions %v; want the one written", conds)
	}

	mustRefuse(t, dyn, provreqs, object(provreqs, "ProvisioningRequest", "no-class", map[string]any{"podSets": podSets(1)}),
		"spec.provisioningClassName")
	mustRefuse(t, dyn, provreqs, object(provreqs, "ProvisioningRequest", "zero", map[string]any{
		"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": podSets(0)}), "spec.podSets[0].count")
	mustRefuse(t, dyn, provreqs, object(provreqs, "ProvisioningRequest", "no-sets", map[string]any{
		"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": []any{}}), "spec.podSets")
	mustRefuse(t, dyn, provreqs, object(provreqs, "ProvisioningRequest", "no-template", map[string]any{
		"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": []any{map[string]any{"count": int64(1)}}}),
		"spec.podSets[0].podTemplateRef")
	mustRefuse(t, dyn, provreqs, object(provreqs, "ProvisioningRequest", "int-param", map[string]any{
		"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": podSets(1), "parameters": map[string]any{"noRetry": true}}),
		"spec.parameters.noRetry")

	if _, err := patchStatus(dyn, provreqs, "good", `{"conditions":[{"type":"Accepted","status":"True","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}]}`); err == nil ||
		!strings.Contains(err.Error(), "reason") {
		t.Errorf("a condition without reason: %v; want it refused naming reason", err)
	}
	if _, err := patchStatus(dyn, provreqs, "good", `{"conditions":[{"type":"Accepted","status":"Yes","reason":"R","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}]}`); err == nil ||
		!strings.Contains(err.Error(), "status.conditions[0].status") {
		t.Errorf("a condition of status Yes: %v; want it refused naming status.conditions[0].status", err)
	}
	if _, err := patchStatus(dyn, provreqs, "good", `{"provisioningClassDetails":{"n":1}}`); err == nil ||
		!strings.Contains(err.Error(), "status.provisioningClassDetails.n") {
		t.Errorf("a detail that is a number: %v; want it refused naming it", err)
	}
}

func testCapacityBuffer(t *testing.T, dyn dynamic.Interface) {
	ctx := context.Background()
	good := object(buffers, "CapacityBuffer", "good", map[string]any{
		"podTemplateRef": map[string]any{"name": "tpl"}, "replicas": int64(2), "limits": map[string]any{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": int64(1)}})
	created, err := dyn.Resource(buffers).Namespace("default").Create(ctx, good, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(created.Object, "spec", "provisioningStrategy"); s != "buffer.x-k8s.io/active-capacity" {
		t.Errorf("spec.provisioningStrategy defaulted to %q; want buffer.x-k8s.io/active-capacity", s)
	}
	// The status Tiler writes (provisioner/prescale/buffers.go), and a field it does not.
	got, err := patchStatus(dyn, buffers, "good", `{"provisioningStrategy":"buffer.x-k8s.io/active-capacity","replicas":2,"podTemplateRef":{"name":"tpl"},"podTemplateGeneration":3,`+
		`"conditions":[{"type":"Provisioning","status":"True","reason":"Held","message":"2 chunks","lastTransitionTime":"2026-01-02T03:04:05Z"}],"futureStatus":"kept"}`)
	if err != nil {
		t.Fatalf("the status Tiler writes: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas"); n != 2 {
		t.Errorf("status.replicas %d; want 2", n)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "status", "futureStatus"); v != "kept" {
		t.Errorf("status.futureStatus %q; want it kept", v)
	}

	mustRefuse(t, dyn, buffers, object(buffers, "CapacityBuffer", "both", map[string]any{
		"podTemplateRef": map[string]any{"name": "tpl"}, "scalableRef": map[string]any{"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "replicas": int64(1)}),
		"podTemplateRef or scalableRef")
	mustRefuse(t, dyn, buffers, object(buffers, "CapacityBuffer", "negative", map[string]any{
		"podTemplateRef": map[string]any{"name": "tpl"}, "replicas": int64(-1)}), "spec.replicas")
	mustRefuse(t, dyn, buffers, object(buffers, "CapacityBuffer", "no-kind", map[string]any{
		"scalableRef": map[string]any{"apiGroup": "apps", "name": "web"}, "percentage": int64(10)}), "spec.scalableRef.kind")
	mustRefuse(t, dyn, buffers, object(buffers, "CapacityBuffer", "bad-limit", map[string]any{
		"scalableRef": map[string]any{"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "limits": map[string]any{"cpu": true}}), "spec.limits.cpu")
}
