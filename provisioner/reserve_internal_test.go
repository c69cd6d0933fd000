package provisioner

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestReservationValues: which reservations each planned pod is given.
//
//	n-new      bought by this plan                                      ns/a
//	l-boot     in flight (no Node), planned for ns/b ns/c               ns/d (spare room), ns/b
//	l-reg      registered as ip-1, still reserved, planned for ns/e     ns/c (shuffled there)
//	l-aws      registered as ip-2 with the AWS pending value            ns/f
//	l-done     registered as ip-3, reservation ended, planned for ns/g  ns/g
//	existing   a Node Tiler did not buy, not reserved                   ns/h
func TestReservationValues(t *testing.T) {
	taint := func(v string) []corev1.Taint {
		return []corev1.Taint{{Key: api.TaintReserved, Value: v, Effect: corev1.TaintEffectNoSchedule}}
	}
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1", Taints: taint("l-reg")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-2"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-2", Taints: taint(api.ReservationPending)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-3"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-3"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "existing"}},
	}
	recs := []LaunchRecord{
		{LaunchID: "l-boot", NodeName: "l-boot", InstanceID: "i-0", Pods: []string{"ns/b", "ns/c"}},
		{LaunchID: "l-reg", NodeName: "l-reg", InstanceID: "i-1", Pods: []string{"ns/e"}},
		{LaunchID: "l-aws", NodeName: "l-aws", InstanceID: "i-2"},
		{LaunchID: "l-done", NodeName: "l-done", InstanceID: "i-3", Pods: []string{"ns/g"}},
	}
	idx := newNodeIndex(nodes)
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	plan := &api.Plan{
		NewNodes: []api.NewNode{{Name: "n-new", Pods: []string{"ns/a"}}},
		ExistingNodes: []api.ExistingNode{
			{Name: "l-boot", Pods: []string{"ns/d", "ns/b"}},
			{Name: "ip-1", Pods: []string{"ns/c"}},
			{Name: "ip-2", Pods: []string{"ns/f"}},
			{Name: "ip-3", Pods: []string{"ns/g"}},
			{Name: "existing", Pods: []string{"ns/h"}},
		},
	}
	got := reservationValues(plan, recs, idx, func(name string) *corev1.Node { return byName[name] })
	want := map[string][]string{
		"ns/a": {"n-new"},
		"ns/d": {"l-boot"}, // spare room of an in-flight node
		"ns/b": {"l-boot"}, // its own
		// ns/c: planned into l-boot, which still stands: not given l-reg
		"ns/f": {"l-aws"}, // the launch ID the pending value becomes
		// ns/g, ns/h: nodes without a reservation
	}
	if len(got) != len(want) {
		t.Errorf("reservations %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: reservations %v, want %v", k, got[k], v)
		}
	}
}

// TestDecideReservations: which node reservations end, and why, at one moment.
func TestDecideReservations(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	ttl := 2 * time.Minute
	node := func(name, value string, readyFor time.Duration) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: api.TaintReserved, Value: value, Effect: corev1.TaintEffectNoSchedule}}}}
		if readyFor >= 0 {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}
		}
		return n
	}
	nodes := []*corev1.Node{
		node("booting", "l-boot", -1),         // held, not Ready: stays
		node("fresh", "l-fresh", time.Minute), // held, Ready for 1 min: stays 1 min more
		node("old", "l-old", 3*time.Minute),   // held, Ready past the TTL
		node("bound", "l-bound", time.Second), // no pod holds it any more
		node("aws-known", api.ReservationPending, 0),
		node("aws-unknown", api.ReservationPending, 0),
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	}
	waiting := map[string]bool{"l-boot": true, "l-fresh": true, "l-old": true}
	rekey, ends, next := decideReservations(nodes, waiting, map[string]string{"aws-known": "l-aws"}, now, ttl)
	if len(rekey) != 1 || rekey["aws-known"] != "l-aws" {
		t.Errorf("rekey %v, want aws-known → l-aws", rekey)
	}
	got := map[string]string{}
	for _, e := range ends {
		got[e.node.Name] = e.reason
	}
	want := map[string]string{"old": "ttl", "bound": "planned-pods-bound", "aws-unknown": "unknown-launch"}
	if !maps.Equal(got, want) {
		t.Errorf("ends %v, want %v", got, want)
	}
	if next != time.Minute {
		t.Errorf("next %s, want 1m (fresh's TTL)", next)
	}
	// The launch records could not be read: pending reservations are left for later.
	if rekey, ends, _ := decideReservations(nodes[4:6], nil, nil, now, ttl); len(rekey) != 0 || len(ends) != 0 {
		t.Errorf("records unread: rekey %v, ends %+v; want nothing", rekey, ends)
	}
}

// TestHoldForPlanned: a reserved node no waiting pod tolerates yet is held for the unbound pods
// its launch record lists, and the launch records are read only when such a node exists (the
// release loop runs at every bind of a burst; reading every record each time cost a tenth of the
// controller's CPU at 1,000 pods).
func TestHoldForPlanned(t *testing.T) {
	reserved := func(name, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: api.TaintReserved, Value: v, Effect: corev1.TaintEffectNoSchedule}}}}
	}
	pods := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	if err := pods.GetStore().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	reads := 0
	recs := []LaunchRecord{{LaunchID: "l-1", Pods: []string{"ns/a"}}, {LaunchID: "l-2", Pods: []string{"ns/gone"}}}
	w := &reservationWatch{reservationDeps: reservationDeps{pods: pods, log: zap.NewNop(),
		records: func(context.Context) ([]LaunchRecord, error) { reads++; return recs, nil }}}
	nodes := []*corev1.Node{reserved("n-1", "l-1"), reserved("n-2", "l-2"), {ObjectMeta: metav1.ObjectMeta{Name: "plain"}}}

	waiting := map[string]bool{"l-1": true, "l-2": true}
	w.holdForPlanned(context.Background(), nodes, waiting)
	if reads != 0 {
		t.Errorf("every reserved node is held by a tolerating pod: the records were read %d times, want 0", reads)
	}
	waiting = map[string]bool{}
	w.holdForPlanned(context.Background(), nodes, waiting)
	if reads != 1 {
		t.Errorf("records read %d times, want 1", reads)
	}
	if want := map[string]bool{"l-1": true}; !maps.Equal(waiting, want) {
		t.Errorf("held %v, want %v (l-1 lists the unbound ns/a; l-2 only a pod that is gone)", waiting, want)
	}

	// The nodes of one batch are held while any pod of the batch waits, whether or not it tolerates
	// its own node yet: l-3's pods are bound, but l-4 of the same batch still has ns/a to bind, which
	// would take l-3's room if it were released (and bind out of its planned zone). l-5, of another
	// batch, is released.
	recs = []LaunchRecord{{LaunchID: "l-3", Batch: "b-1", Pods: []string{"ns/gone"}}, {LaunchID: "l-4", Batch: "b-1", Pods: []string{"ns/a"}},
		{LaunchID: "l-5", Batch: "b-2", Pods: []string{"ns/gone"}}, {LaunchID: "l-6", Pods: []string{"ns/gone"}}}
	nodes = []*corev1.Node{reserved("n-3", "l-3"), reserved("n-4", "l-4"), reserved("n-5", "l-5"), reserved("n-6", "l-6")}
	waiting = map[string]bool{}
	w.holdForPlanned(context.Background(), nodes, waiting)
	if want := map[string]bool{"l-3": true, "l-4": true}; !maps.Equal(waiting, want) {
		t.Errorf("held %v, want %v (batch b-1 has ns/a unbound; b-2 and the record of no batch have none)", waiting, want)
	}
	// A pod that already tolerates its node holds its batch as well.
	recs[1].Pods = nil
	waiting = map[string]bool{"l-4": true}
	w.holdForPlanned(context.Background(), nodes, waiting)
	if want := map[string]bool{"l-3": true, "l-4": true}; !maps.Equal(waiting, want) {
		t.Errorf("held %v, want %v (a pod tolerating l-4 waits)", waiting, want)
	}
}
