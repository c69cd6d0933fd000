package snapshot

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeReady(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		ready bool
		since time.Time
	}{
		{"no condition yet", node(), false, time.Time{}},
		{"Ready", node(corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}), true, at},
		{"not Ready", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)}), false, at},
		{"unknown", node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}), false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			since, ready := NodeReadySince(tc.node)
			if ready != tc.ready || !since.Equal(tc.since) || IsNodeReady(tc.node) != tc.ready {
				t.Errorf("NodeReadySince = %v, %v; IsNodeReady = %v; want %v, %v", since, ready, IsNodeReady(tc.node), tc.since, tc.ready)
			}
		})
	}
}
