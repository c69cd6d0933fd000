package provisioner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// TestNoticeDeadline: each kind of notice gets the deadline its cloud gives.
func TestNoticeDeadline(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		n    cloudprovider.Interruption
		want time.Time
	}{
		{"the notice's own deadline", cloudprovider.Interruption{Kind: cloudprovider.SpotInterruption, At: at, Deadline: at.Add(time.Minute)}, at.Add(time.Minute)},
		{"EC2 spot interruption without one: two minutes", cloudprovider.Interruption{Kind: cloudprovider.SpotInterruption, At: at}, at.Add(2 * time.Minute)},
		{"GCP preemption: now", cloudprovider.Interruption{Kind: cloudprovider.Preemption, At: at}, at},
		{"state change: now", cloudprovider.Interruption{Kind: cloudprovider.StateChange, State: "stopping", At: at}, at},
		{"rebalance recommendation: none", cloudprovider.Interruption{Kind: cloudprovider.RebalanceRecommendation, At: at}, time.Time{}},
	} {
		if got := noticeDeadline(tc.n); !got.Equal(tc.want) {
			t.Errorf("%s: deadline %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestInterruptedActionState: the earliest deadline of an action's nodes counts; an action whose
// nodes carry no notice, or a notice without deadline, is never near its deadline; interrupted
// actions are urgent.
func TestInterruptedActionState(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	node := func(name string, ann map[string]string) *corev1.Node {
		ann[api.AnnotationDisruptionAction] = "a1"
		ann[api.AnnotationDisruptionStep] = api.DisruptionStepReplacing
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
	}
	late, early := now.Add(time.Minute).Format(time.RFC3339), now.Add(30*time.Second).Format(time.RFC3339)
	as := actionsOf([]*corev1.Node{
		node("a", map[string]string{api.AnnotationInterruption: "spot-interruption", api.AnnotationInterruptionDeadline: late}),
		node("b", map[string]string{api.AnnotationInterruption: "spot-interruption", api.AnnotationInterruptionDeadline: early}),
	})
	if len(as) != 1 || !as[0].interrupted || !as[0].deadline.Equal(now.Add(30*time.Second)) || !as[0].urgent() {
		t.Fatalf("action %+v, want interrupted, urgent, deadline the earliest (%s)", as[0], early)
	}
	if as[0].deadlineNear(now, 20*time.Second) || !as[0].deadlineNear(now, 30*time.Second) {
		t.Errorf("deadline near with margin 20s / 30s at 30s before it: want false / true")
	}
	rebalance := actionsOf([]*corev1.Node{node("c", map[string]string{api.AnnotationInterruption: "rebalance-recommendation"})})[0]
	plain := actionsOf([]*corev1.Node{node("d", map[string]string{})})[0]
	if rebalance.deadlineNear(now.Add(time.Hour), time.Hour) || plain.deadlineNear(now, time.Hour) || plain.urgent() {
		t.Errorf("a notice without deadline or no notice at all is never near a deadline; a consolidation action is not urgent")
	}
	if in := interruptedNodes([]*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{api.AnnotationInterruption: "preemption", api.AnnotationInterruptionDeadline: early}}},
		node("y", map[string]string{api.AnnotationInterruption: "preemption"}),
	}); len(in) != 1 || !in["x"].Equal(now.Add(30*time.Second)) {
		t.Errorf("interruptedNodes = %v, want x alone (y carries an action already)", in)
	}
}
