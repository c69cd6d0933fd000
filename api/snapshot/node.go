package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// IsNodeReady reports whether the Node's Ready condition is True. The controller, the simulated
// cloud and the fidelity harness all ask this one question of a Node; the condition is kubelet's.
func IsNodeReady(n *corev1.Node) bool {
	_, ready := NodeReadySince(n)
	return ready
}

// NodeReadySince returns when the Node's Ready condition last changed, and whether it is True.
// A Node without the condition (not yet posted by kubelet) is not Ready.
func NodeReadySince(n *corev1.Node) (time.Time, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}
