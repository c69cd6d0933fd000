package provisioner_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestDecidePlansUnjudgedWithMarked: once the scheduler has found no place for a pod, the batch
// plans with it the pods the scheduler has not judged yet (no PodScheduled condition, the default
// scheduler's, created within PlanUnjudgedWithin), so that a burst is bought for in one plan; alone,
// unjudged pods buy nothing, and PlanUnjudgedWithin 0 plans the marked pod only.
func TestDecidePlansUnjudgedWithMarked(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	pod := func(name string, age time.Duration) *corev1.Pod {
		p := simtest.Pod(name).Namespace("web").Label("app", "web").CPU("3").Mem("6Gi").Obj()
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		return p
	}
	marked := pendingPod(pod("marked", 10*time.Second))
	fresh := []*corev1.Pod{pod("fresh-0", time.Second), pod("fresh-1", 2*time.Second), pod("fresh-2", 29*time.Second)}
	old := pod("old", time.Minute)
	other := pod("other-scheduler", time.Second)
	other.Spec.SchedulerName = "volcano"
	gated := pod("gated", time.Second)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	bound := pod("bound", time.Second)
	bound.Spec.NodeName = "elsewhere"
	all := append([]*corev1.Pod{marked, old, other, gated, bound}, fresh...)
	// An unjudged pod of higher priority than a running one may preempt it: it waits for the
	// scheduler's judgement, unless its preemptionPolicy is Never.
	high, never := int32(1000), corev1.PreemptNever
	preemptor := pod("preemptor", time.Second)
	preemptor.Spec.Priority = &high
	polite := pod("polite", time.Second)
	polite.Spec.Priority, polite.Spec.PreemptionPolicy = &high, &never
	withPreemptor := append(slices.Clone(all), preemptor, polite)

	cases := []struct {
		name    string
		pods    []*corev1.Pod
		within  time.Duration
		pending int
	}{
		{"marked and fresh unjudged", all, 30 * time.Second, 4},
		{"unjudged alone", append([]*corev1.Pod{old, other, gated}, fresh...), 30 * time.Second, 0},
		{"off", all, 0, 1},
		{"short window", all, 1500 * time.Millisecond, 2},
		{"a preemptor waits", withPreemptor, 30 * time.Second, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
			cfg.PlanUnjudgedWithin = tc.within
			s := provisioner.State{Now: now, Pods: tc.pods, Catalog: decideCatalog(t)}
			d := provisioner.Decide(s, cfg, provisioner.NewMemory())
			if d.Pending != tc.pending {
				t.Fatalf("%d pods planned, want %d", d.Pending, tc.pending)
			}
			if tc.pending == 0 {
				return
			}
			placed := 0
			for _, n := range d.Plan.NewNodes {
				placed += len(n.Pods)
			}
			if placed != tc.pending || len(d.Plan.Unschedulable) != 0 {
				t.Fatalf("%d pods placed on new nodes, %d unschedulable; want all %d placed", placed, len(d.Plan.Unschedulable), tc.pending)
			}
		})
	}
}
