package provisioner_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// testReservation: a bought node registers with the reservation taint — the launch ID, or, with
// a bootstrap shared by many launches (AWS launch templates), api.ReservationPending,
// which the controller replaces with the launch ID once it matches the Node to its launch — the
// pods planned there carry its toleration, they are bound there, and the taint goes once they are.
func testReservation(t *testing.T, cp *controlplane.ControlPlane, shared bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Every version of every Node: the taint values each node went through, in order.
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	watch, err := kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	history := map[string][]string{} // node → reservation values seen ("" = none)
	go func() {
		for ev := range watch.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			v := ""
			for _, tt := range n.Spec.Taints {
				if tt.Key == api.TaintReserved && tt.Effect == corev1.TaintEffectNoSchedule {
					v = tt.Value
				}
			}
			mu.Lock()
			if h := history[n.Name]; len(h) == 0 || h[len(h)-1] != v {
				history[n.Name] = append(h, v)
			}
			mu.Unlock()
		}
	}()
	defer watch.Stop()
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) { c.SharedBootstrap = shared })
	prefix := "resv"
	if shared {
		prefix = "resv-shared"
	}
	pods := []*corev1.Pod{
		simtest.Pod(prefix + "-0").CPU("2").Mem("8Gi").GPU(1).Obj(),
		simtest.Pod(prefix + "-1").CPU("2").Mem("8Gi").GPU(1).Obj(),
	}
	e.create(pods...)
	bound := e.waitBound(2*time.Minute, pods...)
	for key, node := range bound {
		p, err := e.kube.CoreV1().Pods("default").Get(ctx, key[len("default/"):], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tolerated := ""
		for _, tol := range p.Spec.Tolerations {
			if tol.Key == api.TaintReserved && tol.Operator == corev1.TolerationOpEqual {
				tolerated = tol.Value
			}
		}
		if tolerated != node {
			t.Errorf("pod %s bound to %s, tolerates reservation %q: want its planned node's", key, node, tolerated)
		}
	}
	// Each node's taint: registered with the launch ID (or pending, then the launch ID), removed
	// once its pods are bound.
	for _, node := range bound {
		want := []string{node, ""}
		if shared {
			want = []string{api.ReservationPending, node, ""}
		}
		var got []string
		if err := testwait.Poll(testwait.Slow, 30*time.Second, func() bool {
			mu.Lock()
			got = append([]string(nil), history[node]...)
			mu.Unlock()
			return slices.Equal(got, want)
		}); err != nil {
			t.Errorf("node %s reservation values %q, want %q", node, got, want)
		}
	}
	if got := counterValue(t, e.metrics.ReservationsEnded.WithLabelValues("planned-pods-bound")); got < 1 {
		t.Errorf("reservations_ended_total{reason=planned-pods-bound} = %v", got)
	}
	e.cleanup(pods)
}

// testReservationTTL: a reservation whose pod cannot bind ends once the node has been Ready for
// the TTL, and a reservation no pending pod holds ends at once.
func testReservationTTL(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.ReservationTTL = 3 * time.Second
	e := newEnv(t, cp, cfg, nil)
	ctx := context.Background()
	mkNode := func(name, value string) {
		// A Node's status may be set on create (as kubelet registers).
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: api.TaintReserved, Value: value, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}}}
		if _, err := e.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	// The pod holds reservation "held" but selects a label no node or offering has.
	stuck := simtest.Pod("resv-stuck").CPU("1").NodeSelector("example.com/nowhere", "x").Obj()
	stuck.Spec.Tolerations = append(stuck.Spec.Tolerations, corev1.Toleration{Key: api.TaintReserved,
		Operator: corev1.TolerationOpEqual, Value: "held", Effect: corev1.TaintEffectNoSchedule})
	e.create(stuck)
	// The reservation watch reads the pod cache the batches read: a batch that has the pod shows
	// that the watch has it too.
	e.waitBatch("the controller's pod cache to have resv-stuck", 30*time.Second, func(b batch) bool { return b.hasPod("default/resv-stuck") })
	start := time.Now()
	mkNode("resv-held", "held")
	mkNode("resv-free", "free")
	untainted := func(name string) func(*corev1.Node) bool {
		return func(n *corev1.Node) bool {
			if n.Name != name {
				return false
			}
			for _, tt := range n.Spec.Taints {
				if tt.Key == api.TaintReserved {
					return false
				}
			}
			return true
		}
	}
	e.waitNode(untainted("resv-free"), 10*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("an unheld reservation ended after %s, want at once", d)
	}
	n, err := e.kube.CoreV1().Nodes().Get(ctx, "resv-held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) == 0 {
		t.Errorf("the held reservation ended before its TTL")
	}
	e.waitNode(untainted("resv-held"), 15*time.Second)
	// Ready's lastTransitionTime has whole seconds: the TTL may end up to a second early.
	if d := time.Since(start); d < cfg.ReservationTTL-time.Second {
		t.Errorf("the held reservation ended after %s, before its TTL %s", d, cfg.ReservationTTL)
	}
	if got := counterValue(t, e.metrics.ReservationsEnded.WithLabelValues("ttl")); got != 1 {
		t.Errorf("reservations_ended_total{reason=ttl} = %v, want 1", got)
	}
	e.cleanup([]*corev1.Pod{stuck})
}

// counterValue reads a counter.
func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// gaugeValue reads a gauge.
func gaugeValue(t testing.TB, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
