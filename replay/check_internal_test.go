package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCheckCapacityCatchesOvercommit: the replay's own capacity check, which Run applies after
// every scheduling pass, fails when the pods bound to a node ask more than it has, or when a pod
// is bound to a node that is not registered.
func TestCheckCapacityCatchesOvercommit(t *testing.T) {
	now := ReplayEpoch
	nn := api.NewNode{Name: "n1", Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	w := &world{now: now, live: map[string]*podState{}, nodes: map[string]*nodeState{
		"n1": {planned: nn, obj: nodeObject(nn, now, true)},
	}}
	add := func(name string, cpu int64, node string) {
		p := &podState{spec: &Pod{Name: name, Depart: time.Hour, CPUMilli: cpu, MemoryMiB: 1024}, key: Namespace + "/" + name, arrived: true}
		p.obj = podObject(p.spec, false, metav1.NewTime(now))
		w.live[p.key] = p
		w.bind(p, node)
	}
	add("a", 3000, "n1")
	if err := w.checkCapacity("n1"); err != nil {
		t.Fatalf("one pod of 3 CPUs on 4: %v", err)
	}
	add("b", 3000, "n1")
	if err := w.checkCapacity("n1"); err == nil || !strings.Contains(err.Error(), "overcommitted: cpu 6 requested, 4 allocatable") {
		t.Errorf("two pods of 3 CPUs on 4: %v", err)
	}
	add("c", 1000, "ghost")
	if err := w.checkCapacity("ghost"); err == nil || !strings.Contains(err.Error(), "not a registered node") {
		t.Errorf("a pod on an unknown node: %v", err)
	}
}
