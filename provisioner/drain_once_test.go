package provisioner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
)

// TestDrainEvictsOnce: a drain pass whose informer still shows a pod it evicted, not yet
// terminating, neither evicts it again nor counts the eviction twice, but counts the pod as still
// on the node; an eviction the API refused is tried again once its backoff allows. The informer
// is filled by hand and never catches up, as a lagging one would for a moment; the API server is
// a fake clientset whose eviction reactor accepts (leaving the pod) or refuses.
func TestDrainEvictsOnce(t *testing.T) {
	d := newDrainTest(t)
	a, b := podRunning(ownedPod("a", "u1", "old", "500m")), podRunning(ownedPod("b", "u2", "old", "500m"))
	for _, p := range []*corev1.Pod{a, b} {
		if err := d.pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	node := annotatedNode("old", nil)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	// (A repair: urgent, so every pod goes at once, with no waves.)
	act := &actionState{id: "d-1", reason: api.ReasonUnhealthy, nodes: []*corev1.Node{node}, since: d.clk.Now()}
	log := zaptest.NewLogger(t)
	drain := func() int {
		left, _, _, abandon := d.ctl.drainAction(context.Background(), log, nodeIndex{}, act, d.clk.Now())
		if abandon != "" {
			t.Fatalf("abandoned: %s", abandon)
		}
		return left
	}
	if left := drain(); left != 2 || d.evictions != 2 {
		t.Fatalf("first pass: %d left, %d evictions; want both pods evicted and still terminating", left, d.evictions)
	}
	d.clk.Step(10 * time.Millisecond)
	if left := drain(); left != 2 || d.evictions != 2 {
		t.Errorf("the next pass, its informer still showing both running: %d left, %d evictions; want none again, both still on the node", left, d.evictions)
	}
	if got := counted(t, d.metrics.DisruptionEvictions); got != 2 {
		t.Errorf("tiler_disruption_evictions_total %v, want 2", got)
	}
	// A refused eviction is not remembered as done: a new pod is evicted again after its backoff.
	c := podRunning(ownedPod("c", "u3", "old", "500m"))
	if err := d.pods.Add(c); err != nil {
		t.Fatal(err)
	}
	d.refuse = true
	drain()
	if d.evictions != 3 {
		t.Fatalf("%d evictions, want c's refused one", d.evictions)
	}
	d.refuse = false
	d.clk.Step(time.Minute)
	drain()
	if d.evictions != 4 || counted(t, d.metrics.DisruptionEvictions) != 3 {
		t.Errorf("%d evictions, %v counted; want c's tried again and counted, a's and b's not again", d.evictions, counted(t, d.metrics.DisruptionEvictions))
	}
}

func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// drainTest is a controller whose informers are filled by hand (never started) and whose API
// server is a fake clientset: evictions are counted and accepted (leaving the pod), or refused
// while refuse is set; deletions are recorded.
type drainTest struct {
	ctl       *Controller
	kube      *fake.Clientset
	metrics   *Metrics
	clk       *clocktesting.FakeClock
	pods      cache.Indexer
	evictions int
	refuse    bool
}

func newDrainTest(t *testing.T) *drainTest {
	d := &drainTest{kube: fake.NewClientset(), clk: clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)),
		metrics: NewMetrics(prometheus.NewRegistry())}
	d.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		d.evictions++
		if d.refuse {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return true, nil, nil
	})
	ctl, err := New(Options{Config: DefaultConfig(), Kube: d.kube, Dynamic: FakeRecordsClient(), Provider: newEKSCloud(), Catalog: &catalog.Catalog{},
		Clock: d.clk, Logger: zaptest.NewLogger(t), Metrics: d.metrics})
	if err != nil {
		t.Fatal(err)
	}
	d.ctl = ctl
	d.pods = ctl.factory.Core().V1().Pods().Informer().GetIndexer()
	ctl.factory.Policy().V1().PodDisruptionBudgets().Informer() // (an empty lister)
	return d
}

// podRunning marks p Running and Ready.
func podRunning(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// deletions returns the pods the fake API server was asked to delete, sorted.
func (d *drainTest) deletions() []string {
	var out []string
	for _, a := range d.kube.Actions() {
		if del, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, del.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// TestDrainDeadNode: on a repair of a node not Ready, a do-not-disrupt pod goes with the node —
// deleted (not evicted) once it is not Ready, or once StuckTerminatingAfter has passed while it
// is still shown Ready — and a pod not Ready whose eviction the API refuses (its budget
// unhealthy) is deleted instead of retried; on a node that is Ready (lost GPUs) neither happens:
// the do-not-disrupt pod stays, the refused pod is retried. Each deletion is counted in
// tiler_disruption_forced_deletions_total{reason=Unhealthy}.
func TestDrainDeadNode(t *testing.T) {
	for _, ready := range []bool{false, true} {
		d := newDrainTest(t)
		node := annotatedNode("old", nil)
		status := corev1.ConditionUnknown
		if ready {
			status = corev1.ConditionTrue
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		notReady := func(p *corev1.Pod) *corev1.Pod {
			p = podRunning(p)
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			return p
		}
		keepReady := podRunning(ownedPod("keep-ready", "u1", "old", "100m"))
		keepDown := notReady(ownedPod("keep-down", "u2", "old", "100m"))
		for _, p := range []*corev1.Pod{keepReady, keepDown} {
			p.Annotations = map[string]string{api.AnnotationDoNotDisrupt: "true"}
		}
		refused := notReady(ownedPod("refused", "u3", "old", "500m"))
		for _, p := range []*corev1.Pod{keepReady, keepDown, refused} {
			// (In the API server too, so that a deletion finds it.)
			if err := d.pods.Add(p); err != nil {
				t.Fatal(err)
			}
			if err := d.kube.Tracker().Add(p); err != nil {
				t.Fatal(err)
			}
		}
		act := &actionState{id: "d-1", reason: api.ReasonUnhealthy, nodes: []*corev1.Node{node}, since: d.clk.Now()}
		d.refuse = true
		drain := func() (int, int) {
			left, stay, _, abandon := d.ctl.drainAction(context.Background(), zaptest.NewLogger(t), nodeIndex{}, act, d.clk.Now())
			if abandon != "" {
				t.Fatalf("abandoned: %s", abandon)
			}
			return left, stay
		}
		left, stay := drain()
		forced := counted(t, d.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonUnhealthy)))
		if ready {
			if left != 1 || stay != 2 || len(d.deletions()) != 0 || d.evictions != 1 || forced != 0 {
				t.Errorf("node Ready: %d left, %d stay, deleted %v, %d evictions, %v forced; want the refused pod left to retry, the do-not-disrupt pods staying, nothing deleted",
					left, stay, d.deletions(), d.evictions, forced)
			}
			continue
		}
		if got := d.deletions(); !slices.Equal(got, []string{"keep-down", "refused"}) || left != 3 || stay != 0 || forced != 2 {
			t.Errorf("node not Ready: deleted %v, %d left, %d stay, %v forced; want keep-down and refused deleted (both still terminating), keep-ready waiting to be marked not Ready",
				got, left, stay, forced)
		}
		d.clk.Step(StuckTerminatingAfter + time.Second)
		drain()
		if got := d.deletions(); !slices.Equal(got, []string{"keep-down", "keep-ready", "refused"}) {
			t.Errorf("past StuckTerminatingAfter: deleted %v; want keep-ready deleted too, the others not again", got)
		}
	}
}

// TestDrainRepairGracePeriod: a repair of a node still Ready (lost GPUs) that carries the pool's
// terminationGracePeriod leaves its do-not-disrupt pod and retries its refused eviction until the
// period is about to end, then deletes both (each early enough that its own
// terminationGracePeriodSeconds ends by the period's end), counted in
// tiler_disruption_forced_deletions_total{reason=Unhealthy}; without the period it never does.
func TestDrainRepairGracePeriod(t *testing.T) {
	for _, grace := range []time.Duration{0, 20 * time.Second} {
		d := newDrainTest(t)
		node, own := d.heldOnReadyNode(t)
		act := &actionState{id: "d-1", reason: api.ReasonUnhealthy, nodes: []*corev1.Node{node}, since: d.clk.Now(), grace: grace}
		if grace > 0 {
			act.forceAfter = d.clk.Now().Add(grace)
		}
		d.refuse = true
		drain := func() (int, int, string) {
			left, stay, msg, abandon := d.ctl.drainAction(context.Background(), zaptest.NewLogger(t), nodeIndex{}, act, d.clk.Now())
			if abandon != "" {
				t.Fatalf("grace %s: abandoned: %s", grace, abandon)
			}
			return left, stay, msg
		}
		forced := func() float64 {
			return counted(t, d.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonUnhealthy)))
		}
		if left, stay, _ := drain(); left != 1 || stay != 1 || len(d.deletions()) != 0 {
			t.Errorf("grace %s, at the drain's start: %d left, %d stay, deleted %v; want the refused pod left, the do-not-disrupt one staying, nothing deleted",
				grace, left, stay, d.deletions())
		}
		// Just before the pods' own 5 s before the period's end: still nothing deleted.
		if grace > 0 {
			d.clk.Step(grace - own - time.Second)
		} else {
			d.clk.Step(time.Hour)
		}
		if drain(); len(d.deletions()) != 0 {
			t.Errorf("grace %s, before the pods are due: deleted %v", grace, d.deletions())
		}
		d.clk.Step(time.Second)
		_, _, msg := drain()
		switch got := d.deletions(); {
		case grace == 0 && (len(got) != 0 || forced() != 0):
			t.Errorf("without a terminationGracePeriod: deleted %v, %v forced; want nothing deleted (%s)", got, forced(), msg)
		case grace > 0 && (!slices.Equal(got, []string{"keep", "refused"}) || forced() != 2):
			t.Errorf("grace %s, as the pods are due: deleted %v, %v forced; want both deleted (%s)", grace, got, forced(), msg)
		}
	}
}

// TestDrainReclaim: on an interrupted node, a do-not-disrupt pod stays and a pod whose eviction
// its budget refuses is retried, until each is within its own terminationGracePeriodSeconds and
// one step of the cloud's reclaim (the action's deadline); then both are deleted (not evicted), so that they
// end gracefully before the machine does and their successors are made at once, counted in
// tiler_disruption_forced_deletions_total{reason=Interrupted}. A rebalance recommendation (no
// deadline) never deletes them.
func TestDrainReclaim(t *testing.T) {
	for _, deadline := range []bool{true, false} {
		d := newDrainTest(t)
		node, own := d.heldOnReadyNode(t)
		act := &actionState{id: "d-1", reason: api.ReasonInterrupted, interrupted: true, nodes: []*corev1.Node{node}, since: d.clk.Now()}
		if deadline {
			act.deadline = d.clk.Now().Add(2 * time.Minute)
		}
		d.refuse = true
		drain := func() {
			if _, _, _, abandon := d.ctl.drainAction(context.Background(), zaptest.NewLogger(t), nodeIndex{}, act, d.clk.Now()); abandon != "" {
				t.Fatalf("abandoned: %s", abandon)
			}
		}
		// Passes every 10 s until just before the reclaim less the pods' own 5 s and one step
		// (DisruptionStepInterval, 2 s): nothing deleted, the refused eviction retried.
		step := d.ctl.cfg.DisruptionStepInterval
		for range 11 {
			drain()
			d.clk.Step(10 * time.Second)
		}
		d.clk.Step(10*time.Second - own - step - time.Second) // (the reclaim less 5 s, a step and 1 s)
		drain()
		if got := d.deletions(); len(got) != 0 || d.evictions < 2 {
			t.Errorf("deadline %v, before the pods are due: deleted %v, %d evictions tried; want nothing deleted, the refused one retried", deadline, got, d.evictions)
		}
		d.clk.Step(time.Second)
		drain()
		forced := counted(t, d.metrics.DisruptionForcedDeletions.WithLabelValues(string(api.ReasonInterrupted)))
		switch got := d.deletions(); {
		case !deadline && (len(got) != 0 || forced != 0):
			t.Errorf("no deadline: deleted %v, %v forced; want nothing deleted", got, forced)
		case deadline && (!slices.Equal(got, []string{"keep", "refused"}) || forced != 2):
			t.Errorf("within their grace of the reclaim: deleted %v, %v forced; want both deleted", got, forced)
		}
		if !deadline {
			continue
		}
		// A pod first met within its grace of the reclaim: evicted first, deleted once refused.
		d.addPods(t, own, podRunning(ownedPod("late", "u3", "old", "100m")))
		evictions := d.evictions
		drain()
		if got := d.deletions(); !slices.Contains(got, "late") || d.evictions != evictions+1 {
			t.Errorf("a pod met within its grace of the reclaim: deleted %v after %d evictions tried; want its eviction tried, then it deleted", got, d.evictions-evictions)
		}
	}
}

// heldOnReadyNode returns node old, Ready, running (in the informer and the API server) pod keep,
// annotated not to be disrupted, and pod refused, both with their own grace period own (5 s).
func (d *drainTest) heldOnReadyNode(t *testing.T) (*corev1.Node, time.Duration) {
	node := annotatedNode("old", nil)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	keep := podRunning(ownedPod("keep", "u1", "old", "100m"))
	keep.Annotations = map[string]string{api.AnnotationDoNotDisrupt: "true"}
	d.addPods(t, 5*time.Second, keep, podRunning(ownedPod("refused", "u2", "old", "500m")))
	return node, 5 * time.Second
}

// addPods puts the pods, with their own grace period own, in the informer and the API server.
func (d *drainTest) addPods(t *testing.T, own time.Duration, pods ...*corev1.Pod) {
	for _, p := range pods {
		p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(own / time.Second))
		if err := d.pods.Add(p); err != nil {
			t.Fatal(err)
		}
		if err := d.kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
}
