package provisioner

import (
	"slices"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
