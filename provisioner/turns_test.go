package provisioner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
)

// TestReplacementTurns: two expiry actions reach their last wave (a pod each that the plan moves
// to its replacement, reserved r-a and r-b) in one pass. The first takes the turn, opens its
// replacement (ends its reservation) and evicts its pod; the second evicts nothing and keeps its
// replacement reserved, so that the first pod's replica cannot take it, until that replica is
// bound; then it takes the turn. An interrupted action opens its replacement at once, whoever
// holds the turn. The turn is given back when its action concludes, and passes on after a
// reschedule grace when the holder's replicas never come.
func TestReplacementTurns(t *testing.T) {
	d := newDrainTest(t)
	ctx := context.Background()
	nodes := d.ctl.factory.Core().V1().Nodes().Informer().GetStore()
	reserved := func(name string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{reservationTaint("l-" + name)}}}
		if _, err := d.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := nodes.Add(n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	isReserved := func(name string) bool {
		n, err := d.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := reservationValue(n)
		return ok
	}
	var idxNodes []*corev1.Node
	action := func(id, node, repl string, reason api.DisruptionReason, moved string) *actionState {
		n := annotatedNode(node, nil)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		idxNodes = append(idxNodes, reserved(repl))
		return &actionState{id: id, reason: reason, replacement: "l-" + repl, replacementNodes: []string{repl}, nodes: []*corev1.Node{n},
			since: d.clk.Now(), toReplacement: map[string]bool{"default/" + moved: true}}
	}
	for _, p := range []*corev1.Pod{podRunning(ownedPod("x", "ux", "old-a", "500m")), podRunning(ownedPod("y", "uy", "old-b", "500m")),
		podRunning(ownedPod("z", "uz", "old-c", "500m"))} {
		if err := d.pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	a, b := action("d-a", "old-a", "r-a", api.ReasonExpired, "x"), action("d-b", "old-b", "r-b", api.ReasonExpired, "y")
	c := action("d-c", "old-c", "r-c", api.ReasonInterrupted, "z")
	log := zaptest.NewLogger(t)
	drain := func(act *actionState) string {
		t.Helper()
		_, _, msg, abandon := d.ctl.drainAction(ctx, log, newNodeIndex(idxNodes), act, d.clk.Now())
		if abandon != "" {
			t.Fatalf("%s abandoned: %s", act.id, abandon)
		}
		return msg
	}
	drain(a)
	msg := drain(b)
	if d.evictions != 1 || isReserved("r-a") || !isReserved("r-b") {
		t.Fatalf("first pass: %d evictions, r-a reserved %v, r-b reserved %v; want x alone evicted, r-a open, r-b reserved", d.evictions, isReserved("r-a"), isReserved("r-b"))
	}
	if !strings.Contains(msg, "wait for their turn: another action's replacement is open") {
		t.Errorf("b's message %q, want it waiting for its turn", msg)
	}
	drain(c)
	if d.evictions != 2 || isReserved("r-c") {
		t.Errorf("the interrupted action: %d evictions, r-c reserved %v; want z evicted and r-c open at once", d.evictions, isReserved("r-c"))
	}
	d.clk.Step(200 * time.Millisecond)
	drain(b)
	if d.evictions != 2 || !isReserved("r-b") {
		t.Fatalf("x's replica not bound yet: %d evictions, r-b reserved %v; want b still waiting", d.evictions, isReserved("r-b"))
	}
	// x's replica is bound (on r-a): the turn passes to b.
	gone := metav1.NewTime(d.clk.Now())
	x, _, _ := d.pods.GetByKey("default/x")
	xt := x.(*corev1.Pod).DeepCopy()
	xt.DeletionTimestamp = &gone
	if err := d.pods.Update(xt); err != nil {
		t.Fatal(err)
	}
	if err := d.pods.Add(podRunning(ownedPod("x-2", "ux", "r-a", "500m"))); err != nil {
		t.Fatal(err)
	}
	drain(b)
	if d.evictions != 3 || isReserved("r-b") {
		t.Fatalf("x's replica bound: %d evictions, r-b reserved %v; want y evicted, r-b open", d.evictions, isReserved("r-b"))
	}
	if got := counted(t, d.metrics.ReservationsEnded.WithLabelValues("replacement-turn")); got != 3 {
		t.Errorf("reservations ended on a turn: %v, want 3", got)
	}
	// b holds the turn while y's replica is not bound; it is given back when b concludes.
	placed := func(string) bool { return false }
	if d.ctl.disruption.takeTurn("d-e", d.clk.Now(), time.Minute, placed) {
		t.Error("another action took the turn b holds")
	}
	d.ctl.disruption.conclude(b.id, b.names())
	if !d.ctl.disruption.takeTurn("d-e", d.clk.Now(), time.Minute, placed) {
		t.Error("the turn not given back when b concluded")
	}
	// A holder whose replicas never come keeps it a reschedule grace at most.
	if d.ctl.disruption.takeTurn("d-f", d.clk.Now(), time.Minute, placed) {
		t.Error("d-f took the turn d-e has just taken")
	}
	d.clk.Step(time.Minute + time.Second)
	if !d.ctl.disruption.takeTurn("d-f", d.clk.Now(), time.Minute, placed) {
		t.Error("the turn still held a reschedule grace after it was taken")
	}
	if ids := replacementsUnderWay([]*corev1.Node{annotatedNode("o", map[string]string{api.AnnotationDisruptionAction: "d-1",
		api.AnnotationDisruptionReplacement: "l-1,l-2"}), annotatedNode("idle", nil)}); !slices.Equal(ids, []string{"l-1", "l-2"}) {
		t.Errorf("replacementsUnderWay %v, want [l-1 l-2]", ids)
	}
}

// TestReleaseHoldsReplacements: the reservation watch keeps a disruption replacement's
// reservation while its action's node carries the action, though no pod tolerates it yet, and
// ends it (planned-pods-bound) once the action's node is gone; a node bought by a batch whose
// pods are bound is released at once, as before.
func TestReleaseHoldsReplacements(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	reserved := func(name, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: api.TaintReserved, Value: v, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(clk.Now())}}}}
	}
	old := annotatedNode("old", map[string]string{api.AnnotationDisruptionAction: "d-1", api.AnnotationDisruptionReplacement: "l-repl"})
	nodes := []*corev1.Node{reserved("repl", "l-repl"), reserved("bought", "l-bought"), old}
	kube := fake.NewClientset()
	nodeInf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Node{}, 0, cache.Indexers{})
	for _, n := range nodes {
		if _, err := kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := nodeInf.GetStore().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	w := newReservationWatch(reservationDeps{kube: kube, nodes: nodeInf,
		pods:    cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{}),
		records: func(context.Context) ([]LaunchRecord, error) { return nil, nil }, clock: clk, log: zap.NewNop(),
		recorder: record.NewFakeRecorder(10), ended: NewMetrics(prometheus.NewRegistry()).ReservationsEnded, ttl: time.Minute, recheck: time.Minute})
	reservedNow := func() []string {
		var out []string
		list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range list.Items {
			if _, ok := reservationValue(&n); ok {
				out = append(out, n.Name)
			}
		}
		return out
	}
	w.release(context.Background())
	if got := reservedNow(); !slices.Equal(got, []string{"repl"}) {
		t.Fatalf("reserved after a release: %v, want [repl] (its action's node still there)", got)
	}
	if err := nodeInf.GetStore().Delete(old); err != nil {
		t.Fatal(err)
	}
	w.release(context.Background())
	if got := reservedNow(); len(got) != 0 {
		t.Errorf("reserved once the action's node is gone: %v, want none", got)
	}
}
