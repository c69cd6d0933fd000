package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/internal/testwait"

	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// nominationEnv is a controller over a fake API server, with its informers and nomination workers
// running and no batch ever reconciled: every nomination it writes comes from an event.
type nominationEnv struct {
	t    *testing.T
	kube kubernetes.Interface
	dyn  dynamic.Interface
	ctrl *Controller
	clk  *clocktesting.FakeClock
	cfg  Config
}

func newNominationEnv(t *testing.T, recs []LaunchRecord, pods ...string) *nominationEnv {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Nominate = true
	e := &nominationEnv{t: t, kube: fake.NewClientset(), dyn: FakeRecordsClient(), clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), cfg: cfg}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, name := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		if _, err := e.kube.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.putRecords(recs...)
	ctrl, err := New(Options{Config: cfg, Kube: e.kube, Dynamic: e.dyn, Provider: newEKSCloud(), Catalog: &catalog.Catalog{}, Clock: e.clk,
		Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.ctrl = ctrl
	return e
}

// putRecords writes the launch records as exactly recs.
func (e *nominationEnv) putRecords(recs ...LaunchRecord) {
	e.t.Helper()
	ctx := context.Background()
	client := e.dyn.Resource(LaunchRecordsResource).Namespace(e.cfg.Namespace)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	keep := map[string]bool{}
	for _, r := range recs {
		keep[r.LaunchID] = true
		obj, err := RecordObject(r, e.cfg.Namespace)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	for _, o := range list.Items {
		if !keep[o.GetName()] {
			if err := client.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// schedulerSets writes nominatedNodeName as kube-scheduler does (a status update, annotations kept).
func (e *nominationEnv) schedulerSets(pod, node string) {
	e.t.Helper()
	p, err := e.kube.CoreV1().Pods("ns").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	p.Status.NominatedNodeName = node
	if _, err := e.kube.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitPod waits until the pod satisfies ok, and fails with what, after 5 s.
func (e *nominationEnv) waitPod(pod, what string, ok func(*corev1.Pod) bool) {
	e.t.Helper()
	var p *corev1.Pod
	if err := testwait.Poll(testwait.Fast, 5*time.Second, func() bool {
		var err error
		p, err = e.kube.CoreV1().Pods("ns").Get(context.Background(), pod, metav1.GetOptions{})
		return err == nil && ok(p)
	}); err != nil {
		e.t.Fatalf("pod %s: not %s after 5s: nominatedNodeName %q, annotations %v", pod, what, p.Status.NominatedNodeName, p.Annotations)
	}
}

func nominatedByTilerFor(node string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		return p.Status.NominatedNodeName == node && p.Annotations[api.AnnotationNominatedBy] == nominatedByTiler &&
			p.Annotations[api.AnnotationNominatedNode] == node
	}
}

// TestNominationsFollowEvents: a pod is nominated when the cloud accepts the launch of its node;
// a nomination the scheduler cleared is set again after a delay that doubles with each clear and
// restarts when the node advances, and within the grace after the node became usable; the
// scheduler's own nomination is left alone; a nomination for a launch whose record went is cleared.
func TestNominationsFollowEvents(t *testing.T) {
	e := newNominationEnv(t, []LaunchRecord{
		{LaunchID: "n1", NodeName: "n1", InstanceID: "i-1", Pods: []string{"ns/p"}},
		{LaunchID: "n2", NodeName: "n2", Pods: []string{"ns/q"}},
	}, "p", "q")
	cleared := func(p *corev1.Pod) bool { return p.Status.NominatedNodeName == "" }

	e.waitPod("p", "nominated for n1 before its Node registers", nominatedByTilerFor("n1"))
	e.schedulerClears("p") // a failed attempt while n1 boots: set again 250 ms later
	e.stays("p", "left cleared before the retry delay", cleared)
	e.clk.Step(nominationRetryMin)
	e.waitPod("p", "nominated again after 250 ms", nominatedByTilerFor("n1"))
	e.schedulerClears("p") // the second clear: 500 ms
	e.stays("p", "left cleared before the retry delay", cleared)
	e.clk.Step(nominationRetryMin)
	e.stays("p", "left cleared 250 ms after the second clear", cleared)
	e.clk.Step(nominationRetryMin)
	e.waitPod("p", "nominated again after 500 ms", nominatedByTilerFor("n1"))

	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n1, err := e.kube.CoreV1().Nodes().Create(context.Background(), n1, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitPhaseSeen("n1", phaseRegistered)
	e.schedulerClears("p") // n1 registered: the delay restarts from 250 ms
	e.stays("p", "left cleared before the retry delay", cleared)
	e.clk.Step(nominationRetryMin)
	e.waitPod("p", "nominated again 250 ms after the first clear since n1 registered", nominatedByTilerFor("n1"))

	e.schedulerSets("p", "existing-1") // the scheduler preempts for p elsewhere
	e.waitPod("p", "left to the scheduler's nomination", func(p *corev1.Pod) bool {
		return p.Status.NominatedNodeName == "existing-1" && p.Annotations[api.AnnotationNominatedBy] == ""
	})
	e.schedulerSets("p", "") // the preemption did not help
	e.waitPod("p", "nominated for n1 again after the preemption", nominatedByTilerFor("n1"))

	// n2's launch is accepted: q is nominated. Then the launch fails and its record goes.
	e.putRecords(LaunchRecord{LaunchID: "n1", NodeName: "n1", InstanceID: "i-1", Pods: []string{"ns/p"}},
		LaunchRecord{LaunchID: "n2", NodeName: "n2", InstanceID: "i-2", Pods: []string{"ns/q"}})
	e.waitPod("q", "nominated for n2 once the cloud accepted it", nominatedByTilerFor("n2"))
	e.putRecords(LaunchRecord{LaunchID: "n1", NodeName: "n1", InstanceID: "i-1", Pods: []string{"ns/p"}})
	e.waitPod("q", "cleared after n2's launch record went", func(p *corev1.Pod) bool {
		return p.Status.NominatedNodeName == "" && p.Annotations[api.AnnotationNominatedBy] == ""
	})

	// n1 turns Ready (usable: no GPUs planned): a nomination cleared inside the grace is set again,
	// one cleared past the grace is not.
	n1.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := e.kube.CoreV1().Nodes().UpdateStatus(context.Background(), n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPhaseSeen("n1", phaseUsable)
	e.schedulerClears("p")
	e.stays("p", "left cleared before the retry delay", cleared)
	e.clk.Step(nominationRetryMin)
	e.waitPod("p", "nominated again inside the grace", nominatedByTilerFor("n1"))
	e.clk.Step(nominationGrace)
	e.schedulerClears("p")
	e.stays("p", "left cleared past the grace", cleared)
	e.clk.Step(nominationRetryMax)
	e.stays("p", "left cleared past the grace, after the retry delay", cleared)
}

// schedulerClears clears the pod's nomination as kube-scheduler does and waits until the watch
// has seen the clear of Tiler's nomination.
func (e *nominationEnv) schedulerClears(pod string) {
	e.t.Helper()
	w := e.ctrl.nominations
	clears := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.cleared["ns/"+pod].count
	}
	before := clears()
	e.schedulerSets(pod, "")
	testwait.Until(e.t, testwait.Fast, "the watch to see the clear of "+pod, 5*time.Second, func() bool { return clears() > before })
}

// stays checks that the pod keeps satisfying ok for 300 ms. The watch decides to wait (or not to
// nominate at all) without a trace outside it, so nothing marks the moment a wrong nomination
// would have been written: the check looks for one for a while, as the scheduler would see it.
func (e *nominationEnv) stays(pod, what string, ok func(*corev1.Pod) bool) {
	e.t.Helper()
	var p *corev1.Pod
	testwait.StaysFalse(e.t, testwait.Fast, "pod "+pod+": not "+what, 300*time.Millisecond, func() bool {
		got, err := e.kube.CoreV1().Pods("ns").Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		p = got
		return !ok(p)
	})
}

// waitPhaseSeen waits until the nominations saw the node in the phase.
func (e *nominationEnv) waitPhaseSeen(node string, phase nodePhase) {
	e.t.Helper()
	testwait.Until(e.t, testwait.Fast, fmt.Sprintf("node %s seen in phase %d", node, phase), 5*time.Second, func() bool {
		e.ctrl.nominations.mu.Lock()
		defer e.ctrl.nominations.mu.Unlock()
		got, seen := e.ctrl.nominations.phases[node]
		return seen && got == phase
	})
}

// TestNominationsDRAOnlyNode: a Ready node whose GPUs only the DRA driver publishes (its pool's
// consumable memory) becomes usable with its ResourceSlices, not with extended resources it never
// advertises.
func TestNominationsDRAOnlyNode(t *testing.T) {
	e := newNominationEnv(t, []LaunchRecord{{LaunchID: "n1", NodeName: "n1", InstanceID: "i-1", GPUs: 2, Pods: []string{"ns/p"},
		GPU: &api.GPUConfig{Sharing: api.Exclusive, ConsumableMemory: true}}}, "p")
	e.waitPod("p", "nominated for n1", nominatedByTilerFor("n1"))
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), n1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPhaseSeen("n1", phaseReady)
	node := "n1"
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n1-gpu"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", NodeName: &node, Pool: resourcev1.ResourcePool{Name: "n1", ResourceSliceCount: 1}}}
	if _, err := e.kube.ResourceV1().ResourceSlices().Create(context.Background(), slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPhaseSeen("n1", phaseUsable)
}

// TestNominationsOff: with Config.Nominate off nothing is written.
func TestNominationsOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nominate = false
	kube := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	b, _ := json.Marshal(LaunchRecord{LaunchID: "n1", NodeName: "n1", InstanceID: "i-1", Pods: []string{"ns/p"}})
	if _, err := kube.CoreV1().ConfigMaps(cfg.Namespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: LegacyRecordsConfigMap}, Data: map[string]string{"n1": string(b)}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrl, err := New(Options{Config: cfg, Kube: kube, Dynamic: FakeRecordsClient(), Provider: newEKSCloud(), Catalog: &catalog.Catalog{},
		Clock: clocktesting.NewFakeClock(time.Now()), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// With nominations off there is no watch to write one, ever: nothing to wait for.
	if ctrl.nominations != nil {
		t.Fatal("nominations off: the controller has a nomination watch")
	}
	if _, err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("nominations off: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	p, err := kube.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.NominatedNodeName != "" || len(p.Annotations) > 0 {
		t.Errorf("nominations off: pod nominated %q, annotations %v", p.Status.NominatedNodeName, p.Annotations)
	}
}
