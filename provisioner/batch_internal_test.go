package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestPodChangedSignals: a pod opens a batch (trigger) when the scheduler marks it unschedulable,
// and holds an open batch (arrival) when it joins what the batch plans: created unjudged, or
// marked without having been plannable. Later updates of the same pod (the scheduler's retries,
// Tiler's own tolerations) signal nothing, and a placeholder never arrives.
func TestPodChangedSignals(t *testing.T) {
	unjudgedPod := simtest.Pod("p").CPU("1").Obj()
	marked := unjudgedPod.DeepCopy()
	marked.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	retried := marked.DeepCopy()
	retried.Status.Conditions[0].Message = "0/3 nodes are available"
	tolerated := marked.DeepCopy()
	tolerated.Spec.Tolerations = []corev1.Toleration{{Key: "tiler.dev/reserved", Operator: corev1.TolerationOpExists}}
	bound := marked.DeepCopy()
	bound.Spec.NodeName = "n"
	placeholder := marked.DeepCopy()
	placeholder.Labels = map[string]string{"tiler.dev/placeholder": "web"}

	cases := []struct {
		name             string
		within           bool
		old, new         *corev1.Pod
		trigger, arrival bool
	}{
		{"created unjudged", true, nil, unjudgedPod, false, true},
		{"created unjudged, unjudged not planned", false, nil, unjudgedPod, false, false},
		{"marked after arriving unjudged", true, unjudgedPod, marked, true, false},
		{"marked, unjudged not planned", false, unjudgedPod, marked, true, true},
		{"scheduler retried", true, marked, retried, false, false},
		{"toleration added", true, marked, tolerated, false, false},
		{"bound", true, marked, bound, false, false},
		{"placeholder marked", true, nil, placeholder, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{trigger: make(chan struct{}, 1), arrival: make(chan struct{}, 1), cfg: DefaultConfig()}
			if !tc.within {
				c.cfg.PlanUnjudgedWithin = 0
			}
			if !isPlaceholder(placeholder) {
				t.Fatal("the placeholder fixture is not a placeholder")
			}
			var old any
			if tc.old != nil {
				old = tc.old
			}
			c.podChanged(old, tc.new)
			if got := len(c.trigger) == 1; got != tc.trigger {
				t.Errorf("trigger %v, want %v", got, tc.trigger)
			}
			if got := len(c.arrival) == 1; got != tc.arrival {
				t.Errorf("arrival %v, want %v", got, tc.arrival)
			}
		})
	}
}
