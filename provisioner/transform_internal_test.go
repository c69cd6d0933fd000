package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestStripManagedFields: the informers' transform drops managedFields and nothing else, and
// passes tombstones through.
func TestStripManagedFields(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"},
		Annotations:   map[string]string{"tiler.dev/nominated-node": "n"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}},
		Spec: corev1.PodSpec{NodeName: "n"}}
	want := p.DeepCopy()
	want.ManagedFields = nil
	got, err := stripManagedFields(p)
	if err != nil {
		t.Fatal(err)
	}
	if gp := got.(*corev1.Pod); gp.ManagedFields != nil || gp.Labels["app"] != "a" || gp.Annotations["tiler.dev/nominated-node"] != "n" || gp.Spec.NodeName != "n" {
		t.Errorf("transformed: %+v", gp)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: want}
	if got, err := stripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}
