package provisioner

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
)

// TestDrainEvictsOnce: a drain pass whose informer still shows a pod it evicted, not yet
// terminating, neither evicts it again nor counts the eviction twice, but counts the pod as still
// on the node; an eviction the API refused is tried again once its backoff allows. The informer
// is filled by hand and never catches up, as a lagging one would for a moment; the API server is
// a fake clientset whose eviction reactor accepts (leaving the pod) or refuses.
func TestDrainEvictsOnce(t *testing.T) {
	kube := fake.NewClientset()
	evictions, refuse := 0, false
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		evictions++
		if refuse {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return true, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	metrics := NewMetrics(prometheus.NewRegistry())
	ctl, err := New(Options{Config: DefaultConfig(), Kube: kube, Dynamic: FakeRecordsClient(), Provider: newEKSCloud(), Catalog: &catalog.Catalog{},
		Clock: clk, Logger: zaptest.NewLogger(t), Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	pods := ctl.factory.Core().V1().Pods().Informer().GetIndexer()
	ctl.factory.Policy().V1().PodDisruptionBudgets().Informer() // (an empty lister)
	running := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	a, b := running(ownedPod("a", "u1", "old", "500m")), running(ownedPod("b", "u2", "old", "500m"))
	for _, p := range []*corev1.Pod{a, b} {
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	node := annotatedNode("old", nil)
	// (A repair: urgent, so every pod goes at once, with no waves.)
	act := &actionState{id: "d-1", reason: api.ReasonUnhealthy, nodes: []*corev1.Node{node}, since: clk.Now()}
	log := zaptest.NewLogger(t)
	drain := func() int {
		left, _, _, abandon := ctl.drainAction(context.Background(), log, nodeIndex{}, act, clk.Now())
		if abandon != "" {
			t.Fatalf("abandoned: %s", abandon)
		}
		return left
	}
	if left := drain(); left != 2 || evictions != 2 {
		t.Fatalf("first pass: %d left, %d evictions; want both pods evicted and still terminating", left, evictions)
	}
	clk.Step(10 * time.Millisecond)
	if left := drain(); left != 2 || evictions != 2 {
		t.Errorf("the next pass, its informer still showing both running: %d left, %d evictions; want none again, both still on the node", left, evictions)
	}
	if got := counted(t, metrics.DisruptionEvictions); got != 2 {
		t.Errorf("tiler_disruption_evictions_total %v, want 2", got)
	}
	// A refused eviction is not remembered as done: a new pod is evicted again after its backoff.
	c := running(ownedPod("c", "u3", "old", "500m"))
	if err := pods.Add(c); err != nil {
		t.Fatal(err)
	}
	refuse = true
	drain()
	if evictions != 3 {
		t.Fatalf("%d evictions, want c's refused one", evictions)
	}
	refuse = false
	clk.Step(time.Minute)
	drain()
	if evictions != 4 || counted(t, metrics.DisruptionEvictions) != 3 {
		t.Errorf("%d evictions, %v counted; want c's tried again and counted, a's and b's not again", evictions, counted(t, metrics.DisruptionEvictions))
	}
}

func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
