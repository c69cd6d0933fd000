package provisioner

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBootTimesMedianOfRecent(t *testing.T) {
	b := newBootTimes()
	if _, ok := b.median("gpu"); ok {
		t.Fatal("median before any boot")
	}
	for _, s := range []int{300, 120, 240} {
		b.observe("gpu", time.Duration(s)*time.Second)
	}
	if d, _ := b.median("gpu"); d != 240*time.Second {
		t.Errorf("median %s, want 4m", d)
	}
	b.observe("gpu", 200*time.Second)
	if d, _ := b.median("gpu"); d != 220*time.Second {
		t.Errorf("median of four %s, want 3m40s", d)
	}
	for i := 0; i < bootSamples; i++ { // older samples age out
		b.observe("gpu", time.Minute)
	}
	if d, _ := b.median("gpu"); d != time.Minute {
		t.Errorf("median after %d new samples %s, want 1m", bootSamples, d)
	}
}

func TestObserveBootUsesReadyTransition(t *testing.T) {
	c := &Controller{boot: newBootTimes(), metrics: NewMetrics(prometheus.NewRegistry())}
	created := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady,
		Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(3*time.Minute + 30*time.Second))}}}}
	c.recordBoot("gpu", bootTime(LaunchRecord{Pool: "gpu", CreatedAt: created}, n, created.Add(10*time.Minute)))
	if d, ok := c.ObservedBootTime("gpu"); !ok || d != 210*time.Second {
		t.Errorf("observed %s %v, want 3m30s from the Ready transition", d, ok)
	}
}
