package provisioner

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
)

// TestSteerReplicas: two expiry actions drain at once, each moving one pod of its own
// ReplicaSet to its own replacement (launch l-a, l-b). Once the pods are evicted and their
// ReplicaSets have made replicas, the drain gives each replica its own replacement's reservation
// toleration, and nothing else: not a pod of the controller that existed before the eviction,
// not another controller's pending pod, not a replica a batch already gave a reservation, and
// not again on the next pass while the informer still shows the replica without it. Two replicas
// of one ReplicaSet evicted by two actions get one replacement each. replacementsUnderWay
// lists the launches the reservation watch holds while the actions' nodes carry them.
func TestSteerReplicas(t *testing.T) {
	d := newDrainTest(t)
	add := func(ps ...*corev1.Pod) {
		t.Helper()
		for _, p := range ps {
			if err := d.pods.Add(p); err != nil {
				t.Fatal(err)
			}
			if _, err := d.kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	action := func(id, node, launch string, moved ...string) *actionState {
		n := annotatedNode(node, map[string]string{api.AnnotationDisruptionAction: id, api.AnnotationDisruptionReplacement: launch})
		n.Status.Conditions = ready
		toRepl := map[string]bool{}
		for _, m := range moved {
			toRepl["default/"+m] = true
		}
		return &actionState{id: id, reason: api.ReasonExpired, replacement: launch, nodes: []*corev1.Node{n}, since: d.clk.Now(),
			toReplacement: toRepl}
	}
	// x and y (ReplicaSets ux, uy) move to their actions' replacements; w1, w2 (ReplicaSet uw)
	// one each; sibling is a pod of ux on another node, other a pending pod of another controller.
	x, y := podRunning(ownedPod("x", "ux", "old-a", "500m")), podRunning(ownedPod("y", "uy", "old-b", "500m"))
	w1, w2 := podRunning(ownedPod("w1", "uw", "old-a", "500m")), podRunning(ownedPod("w2", "uw", "old-b", "500m"))
	sibling, other := podRunning(ownedPod("sibling", "ux", "stay", "500m")), ownedPod("other", "uo", "", "500m")
	add(x, y, w1, w2, sibling, other)
	a, b := action("d-a", "old-a", "l-a", "x", "w1"), action("d-b", "old-b", "l-b", "y", "w2")
	log := zaptest.NewLogger(t)
	pass := func() {
		t.Helper()
		for _, act := range []*actionState{a, b} {
			if _, _, _, abandon := d.ctl.drainAction(context.Background(), log, nodeIndex{}, act, d.clk.Now()); abandon != "" {
				t.Fatalf("%s abandoned: %s", act.id, abandon)
			}
		}
		d.clk.Step(200 * time.Millisecond)
	}
	pass()
	if d.evictions != 4 {
		t.Fatalf("%d evictions, want x, y, w1 and w2", d.evictions)
	}
	if got := tolerationPatches(d); len(got) != 0 {
		t.Fatalf("patched %v before any replica was made", got)
	}
	unsteered := func() int {
		return d.ctl.disruption.steers.unsteered(a.id, d.clk.Now(), time.Minute) + d.ctl.disruption.steers.unsteered(b.id, d.clk.Now(), time.Minute)
	}
	if n := unsteered(); n != 4 {
		t.Errorf("%d pods wait for their replicas' toleration, want 4 (the actions' nodes stay meanwhile)", n)
	}
	// The ReplicaSets make their replicas (pending); one of uw's is given a reservation by a batch
	// first, which the drain leaves as it is.
	gone := metav1.NewTime(d.clk.Now())
	for _, p := range []*corev1.Pod{x, y, w1, w2} {
		q := p.DeepCopy()
		q.DeletionTimestamp = &gone
		if err := d.pods.Update(q); err != nil {
			t.Fatal(err)
		}
	}
	xr, yr := ownedPod("x-2", "ux", "", "500m"), ownedPod("y-2", "uy", "", "500m")
	wr1, wr2, wrBatch := ownedPod("w-3", "uw", "", "500m"), ownedPod("w-4", "uw", "", "500m"), ownedPod("w-5", "uw", "", "500m")
	wrBatch.Spec.Tolerations = []corev1.Toleration{{Key: api.TaintReserved, Operator: corev1.TolerationOpEqual, Value: "l-new", Effect: corev1.TaintEffectNoSchedule}}
	add(xr, yr, wr1, wr2, wrBatch)
	pass()
	got := tolerationPatches(d)
	want := map[string]string{"x-2": "l-a", "y-2": "l-b"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("replica %s given %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// uw's two pending replicas (w-5 holds a batch's reservation): one to each replacement.
	if ws := []string{got["w-3"], got["w-4"]}; !slices.Contains(ws, "l-a") || !slices.Contains(ws, "l-b") {
		t.Errorf("uw's replicas given %v, want one l-a and one l-b (all: %v)", ws, got)
	}
	for _, k := range []string{"sibling", "other", "w-5"} {
		if v, ok := got[k]; ok {
			t.Errorf("pod %s given %q, want none", k, v)
		}
	}
	if n := unsteered(); n != 0 {
		t.Errorf("%d pods still wait for their replicas' toleration, want none", n)
	}
	n := len(d.kube.Actions())
	pass() // the informer still shows the replicas without the toleration
	if again := tolerationPatches(d); len(again) != len(got) || len(d.kube.Actions()) != n {
		t.Errorf("the next pass patched again: %d actions after %d (%v)", len(d.kube.Actions()), n, again)
	}
	if ids := replacementsUnderWay(append(a.nodes, b.nodes[0], annotatedNode("idle", nil))); !slices.Equal(ids, []string{"l-a", "l-b"}) {
		t.Errorf("replacementsUnderWay %v, want [l-a l-b]", ids)
	}
	// Once an action ends, what it steered is forgotten.
	d.ctl.disruption.conclude(a.id, a.names())
	if d.ctl.disruption.steers.by[a.id] != nil {
		t.Errorf("action %s's steers kept after it concluded", a.id)
	}
}

// tolerationPatches returns, per pod patched, the reservation value of the last toleration
// patch the fake API server received.
func tolerationPatches(d *drainTest) map[string]string {
	out := map[string]string{}
	for _, a := range d.kube.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || a.GetResource().Resource != "pods" {
			continue
		}
		var ops []struct {
			Value any `json:"value"`
		}
		if err := json.Unmarshal(p.GetPatch(), &ops); err != nil || len(ops) == 0 {
			continue
		}
		switch v := ops[0].Value.(type) {
		case []any:
			if m, ok := v[0].(map[string]any); ok {
				out[p.GetName()], _ = m["value"].(string)
			}
		case map[string]any:
			out[p.GetName()], _ = v["value"].(string)
		}
	}
	return out
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
