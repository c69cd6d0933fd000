package provisioner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// upstreamOptions is a control plane serving Kubernetes' native gang API: gate GenericWorkload
// on in every component and the beta scheduling.k8s.io/v1beta1 group served.
var upstreamOptions = controlplane.Options{
	FeatureGates:  map[string]bool{"GenericWorkload": true},
	RuntimeConfig: map[string]bool{"scheduling.k8s.io/v1beta1": true},
}

// TestE2EUpstreamAPIs runs the scenarios of Kubernetes' own autoscaling APIs on one control plane
// with the GenericWorkload gate (the other suites run without it, so the controller is also shown
// to work where the PodGroup API is not served).
func TestE2EUpstreamAPIs(t *testing.T) {
	cp := cptest.Start(t, upstreamOptions)
	t.Run("NativeGangBoundWhole", func(t *testing.T) { testNativeGang(t, cp) })
	t.Run("UnplaceablePodEvent", func(t *testing.T) { testUnplaceableEvent(t, cp) })
	t.Run("CapacityBuffer", func(t *testing.T) { testCapacityBuffer(t, cp) })
	t.Run("CapacityBufferSizing", func(t *testing.T) { testCapacityBufferSizing(t, cp) })
	t.Run("ProvisioningRequestCheckCapacity", func(t *testing.T) { testProvisioningRequestCheckCapacity(t, cp) })
	t.Run("ProvisioningRequestAtomic", func(t *testing.T) { testProvisioningRequestAtomic(t, cp) })
	t.Run("ProvisioningRequestWatched", func(t *testing.T) { testProvisioningRequestWatched(t, cp) })
}

const gangPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: train
  instanceTypes: [m7i.xlarge]
`

// testNativeGang: a PodGroup of gang policy (minCount 3) whose members each take most of a node.
// With two members the scheduler holds them and nothing is bought; the third makes the gang
// complete, one batch buys the three nodes for all three, and the real kube-scheduler binds the
// whole gang on them.
func testNativeGang(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	e.applyPolicy("policy", gangPolicy)
	ctx := context.Background()
	pg := simtest.GangPodGroup("train", 3)
	pg.TypeMeta = metav1.TypeMeta{}
	if _, err := e.kube.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.SchedulingV1beta1().PodGroups("default").Delete(context.Background(), "train", metav1.DeleteOptions{})
	})
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, simtest.Pod(named("train", i)).Label("app", "train").CPU("3").Mem("4Gi").PodGroup("train").Obj())
	}
	e.create(pods[:2]...)
	e.waitBatch("a batch that sees the PodGroup and two of its members", 30*time.Second, func(b batch) bool {
		return len(b.state.PodGroups) == 1 && b.hasPod("default/train-0") && b.hasPod("default/train-1")
	})
	if got := e.launches(); got != 0 {
		t.Fatalf("%d launches for a gang short of its minCount; want none", got)
	}
	e.create(pods[2])
	bound := e.waitBound(2*time.Minute, pods...)
	nodes := map[string]bool{}
	for _, n := range bound {
		nodes[n] = true
	}
	if len(nodes) != 3 || e.launches() != 3 {
		t.Errorf("the gang is bound on %d nodes after %d launches; want 3 and 3", len(nodes), e.launches())
		e.explainPurchases()
	}
	// One batch planned and bought the whole gang.
	whole := false
	for _, b := range e.batches.since(0) {
		if b.res == nil || b.res.Decision == nil {
			continue
		}
		planned := map[string]bool{}
		for _, r := range b.res.Decision.Launch {
			for _, p := range r.Pods {
				planned[p] = true
			}
		}
		whole = whole || planned["default/train-0"] && planned["default/train-1"] && planned["default/train-2"]
	}
	if !whole {
		t.Error("no batch bought for the three members together")
		e.explainPurchases()
	}
	got, err := e.kube.SchedulingV1beta1().PodGroups("default").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
	t.Logf("PodGroup condition %s: %+v", schedulingv1beta1.PodGroupInitiallyScheduled, cond)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("PodGroup %s condition %+v; want True (the scheduler placed the gang)", schedulingv1beta1.PodGroupInitiallyScheduled, cond)
	}
	e.cleanup(pods)
}

// testUnplaceableEvent: a pod no offering can hold gets one Warning NotTriggerScaleUp Event with
// the plan's reason code and words, and no second one while later batches plan it again.
func testUnplaceableEvent(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	pod := simtest.Pod("huge-0").CPU("1000").Mem("4Gi").Obj()
	e.create(pod)
	ev := e.waitPodEvent(pod.Name, provisioner.ReasonNotTriggerScaleUp, "(NeverFits)", 30*time.Second)
	t.Logf("Event: %s %s: %s", ev.Type, ev.Reason, ev.Message)
	// The plan's own words for the pod, as tiler plan prints them.
	b := e.waitBatch("a batch that plans huge-0 again", 30*time.Second, func(b batch) bool { return unplaced(b, "default/huge-0") != "" })
	if want := unplaced(b, "default/huge-0"); !strings.Contains(ev.Message, want) || ev.Type != corev1.EventTypeWarning {
		t.Errorf("Event %s %q; want a Warning with the plan's reason %q", ev.Type, ev.Message, want)
	}
	for range 3 {
		e.waitBatch("another batch that plans huge-0", 30*time.Second, func(b batch) bool { return unplaced(b, "default/huge-0") != "" })
	}
	testwait.StaysFalse(t, testwait.Slow, "the NotTriggerScaleUp Event was repeated", 2*time.Second, func() bool {
		n := 0
		for _, ev := range e.podEvents(pod.Name, provisioner.ReasonNotTriggerScaleUp) {
			n += max(int(ev.Count), 1)
			if ev.Series != nil {
				n += int(ev.Series.Count)
			}
		}
		return n > 1
	})
	e.cleanup([]*corev1.Pod{pod})
}

// unplaced is the plan's reason for the pod in the batch, "" when the batch did not find it
// unplaceable.
func unplaced(b batch, key string) string {
	if b.res == nil || b.res.Decision == nil || b.res.Decision.Plan == nil {
		return ""
	}
	for _, u := range b.res.Decision.Plan.Unschedulable {
		if u.Pod == key {
			return string(u.Code) + "): " + u.Reason
		}
	}
	return ""
}

// podEvents lists the Events of the reason on the pod (namespace default).
func (e *env) podEvents(pod, reason string) []corev1.Event {
	evs, err := e.kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range evs.Items {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// waitPodEvent waits for an Event of the reason on the pod whose message holds substr.
func (e *env) waitPodEvent(pod, reason, substr string, timeout time.Duration) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	testwait.Until(e.t, testwait.Slow, fmt.Sprintf("a %s Event on %s saying %q", reason, pod, substr), timeout, func() bool {
		for _, ev := range e.podEvents(pod, reason) {
			if strings.Contains(ev.Message, substr) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}
