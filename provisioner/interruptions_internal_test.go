package provisioner

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator/simtest"
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

// ackQueue is a cloudprovider.InterruptionAcker that, as an SQS queue, delivers a polled notice
// again when it was not acknowledged within visibility (on clk). It records the receipts acked.
type ackQueue struct {
	mu         sync.Mutex
	clk        *clocktesting.FakePassiveClock
	visibility time.Duration
	notices    []cloudprovider.Interruption
	visibleAt  map[string]time.Time // receipt → when a polled notice comes again
	acked      []string
}

func newAckQueue(notices ...cloudprovider.Interruption) *ackQueue {
	return &ackQueue{clk: clocktesting.NewFakePassiveClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)),
		visibility: 20 * time.Second, notices: notices, visibleAt: map[string]time.Time{}}
}

func (q *ackQueue) Poll(context.Context) ([]cloudprovider.Interruption, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []cloudprovider.Interruption
	for _, n := range q.notices {
		if q.clk.Now().Before(q.visibleAt[n.Receipt]) {
			continue
		}
		q.visibleAt[n.Receipt] = q.clk.Now().Add(q.visibility)
		out = append(out, n)
	}
	return out, nil
}

func (q *ackQueue) Ack(_ context.Context, notices []cloudprovider.Interruption) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, a := range notices {
		q.acked = append(q.acked, a.Receipt)
		q.notices = slices.DeleteFunc(q.notices, func(n cloudprovider.Interruption) bool { return n.Receipt == a.Receipt })
	}
	return nil
}

func (q *ackQueue) ackedReceipts() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.acked)
}

// newInterruptedEKSEnv is an env whose spot instance i-00000000000000001 (m7i.large spot in
// us-east-1a) registered as eksName, with the interruption source src and the cloud's insts.
func newInterruptedEKSEnv(t *testing.T, src cloudprovider.InterruptionSource, insts ...*cloudprovider.Instance) *eksEnv {
	cfg := DefaultConfig()
	cfg.Nominate = false
	rec := LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.Spot}, PricePerHour: 0.05},
		LaunchID:       "tiler-default-1", NodeName: "tiler-default-1", Pool: "default", InstanceID: "i-00000000000000001",
		CreatedAt: time.Date(2026, 3, 4, 4, 0, 0, 0, time.UTC),
	}
	n := simtest.Node(eksName, "m7i.large", "us-east-1a", simtest.Resources("cpu", "1930m", "memory", "7Gi", "pods", "29"))
	n.Spec.ProviderID = awsProviderID("us-east-1a", rec.InstanceID)
	return newEKSEnvWith(t, Options{Config: cfg, Interruptions: src}, newEKSCloud(insts...), recordsConfigMap(cfg, rec), n)
}

// interruptedNode reports whether eksName carries the interruption annotation and is cordoned.
func (e *eksEnv) interruptedNode() bool {
	n, err := e.kube.CoreV1().Nodes().Get(context.Background(), eksName, metav1.GetOptions{})
	return err == nil && n.Spec.Unschedulable && n.Annotations[api.AnnotationInterruption] == string(cloudprovider.SpotInterruption)
}

// TestInterruptionAckedOnlyOnceAnnotated: a notice whose node could not be annotated is not
// acknowledged; when the controller's backlog is lost, the source delivers it again after its
// visibility timeout, and it is acknowledged once the node is annotated, never before.
func TestInterruptionAckedOnlyOnceAnnotated(t *testing.T) {
	spot := cloudprovider.Interruption{InstanceID: "i-00000000000000001", Kind: cloudprovider.SpotInterruption, Receipt: "r1",
		At: time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)}
	q := newAckQueue(spot)
	e := newInterruptedEKSEnv(t, q)
	var failing atomic.Bool
	failing.Store(true)
	e.kube.(*fake.Clientset).PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		if failing.Load() {
			return true, nil, errors.New("injected: the API server is unavailable")
		}
		return false, nil, nil
	})
	ctx := context.Background()

	if left := e.ctrl.pollInterruptions(ctx, nil); len(left) != 1 {
		t.Fatalf("notices left after a failed annotation: %+v, want the notice", left)
	}
	if acked := q.ackedReceipts(); len(acked) != 0 || e.interruptedNode() {
		t.Fatalf("acked %v with the node not annotated; want nothing acked", acked)
	}
	// Delivered again while the node still cannot be annotated: it replaces its backlog copy.
	q.clk.SetTime(q.clk.Now().Add(q.visibility))
	if left := e.ctrl.pollInterruptions(ctx, []cloudprovider.Interruption{spot}); len(left) != 1 || len(q.ackedReceipts()) != 0 {
		t.Fatalf("after a redelivery that failed again: left %+v, acked %v; want the notice once, nothing acked", left, q.ackedReceipts())
	}
	failing.Store(false)
	// The backlog is lost (as by a restart): the notice is invisible until the visibility timeout.
	e.ctrl.pollInterruptions(ctx, nil)
	if e.interruptedNode() {
		t.Fatal("node annotated before the notice was delivered again")
	}
	q.clk.SetTime(q.clk.Now().Add(q.visibility))
	if left := e.ctrl.pollInterruptions(ctx, nil); len(left) != 0 || !e.interruptedNode() {
		t.Fatalf("after redelivery: left %+v, node interrupted %v; want it annotated", left, e.interruptedNode())
	}
	if acked := q.ackedReceipts(); !slices.Equal(acked, []string{"r1"}) {
		t.Errorf("acked %v after the node was annotated, want [r1]", acked)
	}
	// Handling the notice again (a duplicate delivery) is harmless: the node stays as it is.
	before, _ := e.kube.CoreV1().Nodes().Get(ctx, eksName, metav1.GetOptions{})
	q.notices = append(q.notices, cloudprovider.Interruption{InstanceID: spot.InstanceID, Kind: spot.Kind, At: spot.At, Receipt: "r2"})
	e.ctrl.pollInterruptions(ctx, nil)
	after, _ := e.kube.CoreV1().Nodes().Get(ctx, eksName, metav1.GetOptions{})
	if !maps.Equal(before.Annotations, after.Annotations) || !after.Spec.Unschedulable {
		t.Errorf("a duplicate notice changed the node: annotations %v, want %v", after.Annotations, before.Annotations)
	}
	if acked := q.ackedReceipts(); !slices.Equal(acked, []string{"r1", "r2"}) {
		t.Errorf("acked %v after the duplicate, want [r1 r2]", acked)
	}
}

// TestInterruptionSurvivesControllerDeath: a controller that dies after polling a notice, before
// annotating the node, leaves it unacknowledged; a new controller on the same source handles it
// once the source delivers it again.
func TestInterruptionSurvivesControllerDeath(t *testing.T) {
	q := newAckQueue(cloudprovider.Interruption{InstanceID: "i-00000000000000001", Kind: cloudprovider.SpotInterruption, Receipt: "r1",
		At: time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)})
	ctx := context.Background()
	dead := newInterruptedEKSEnv(t, q)
	if polled := dead.ctrl.pollNotices(ctx, nil); len(polled) != 1 {
		t.Fatalf("the first controller polled %+v, want the notice", polled)
	}
	// It dies here, with the notice in memory only.

	e := newInterruptedEKSEnv(t, q)
	q.clk.SetTime(q.clk.Now().Add(q.visibility))
	if left := e.ctrl.pollInterruptions(ctx, nil); len(left) != 0 || !e.interruptedNode() {
		t.Fatalf("the new controller: left %+v, node interrupted %v; want it annotated", left, e.interruptedNode())
	}
	if acked := q.ackedReceipts(); !slices.Equal(acked, []string{"r1"}) {
		t.Errorf("acked %v, want [r1]", acked)
	}
}

// TestStateChangeMarksOnlyCapacityLoss: a state-change notice does not say why the instance
// stopped; the instance does. The offering is marked unavailable only when the cloud ended it for
// want of capacity, not when a person terminated it, and a state change of an instance Tiler is
// removing is no interruption at all. A spot interruption marks its offering as before.
func TestStateChangeMarksOnlyCapacityLoss(t *testing.T) {
	const id = "i-00000000000000001"
	offering := api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.Spot}
	at := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	change := cloudprovider.Interruption{InstanceID: id, Kind: cloudprovider.StateChange, State: "shutting-down", Receipt: "r1", At: at}
	ending := func(code string, capacity bool) *cloudprovider.Instance {
		return &cloudprovider.Instance{ID: id, LaunchID: "tiler-default-1", Offering: offering, State: cloudprovider.StateTerminating,
			EndCode: code, CapacityLost: capacity}
	}
	tests := []struct {
		name       string
		notice     cloudprovider.Interruption
		inst       *cloudprovider.Instance
		removing   bool
		wantMarked bool
		// wantKind is the node's interruption annotation; "" for none.
		wantKind string
	}{
		{"terminated by a person", change, ending("Client.UserInitiatedShutdown", false), false, false, string(cloudprovider.StateChange)},
		{"capacity lost", change, ending("Server.SpotInstanceTermination", true), false, true, string(cloudprovider.StateChange)},
		{"the cloud does not answer for it", change, nil, false, false, string(cloudprovider.StateChange)},
		{"Tiler removing it", change, ending("Server.SpotInstanceTermination", true), true, false, ""},
		{"spot interruption", cloudprovider.Interruption{InstanceID: id, Kind: cloudprovider.SpotInterruption, Receipt: "r1", At: at},
			nil, false, true, string(cloudprovider.SpotInterruption)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var insts []*cloudprovider.Instance
			if tt.inst != nil {
				insts = append(insts, tt.inst)
			}
			q := newAckQueue(tt.notice)
			e := newInterruptedEKSEnv(t, q, insts...)
			if tt.removing && !e.ctrl.launches.begin("tiler-default-1", callRemove) {
				t.Fatal("the removal could not be marked as under way")
			}
			if left := e.ctrl.pollInterruptions(context.Background(), nil); len(left) != 0 {
				t.Fatalf("notices left %+v, want none", left)
			}
			if got := e.ctrl.unavailable.IsUnavailable(offering); got != tt.wantMarked {
				t.Errorf("offering marked unavailable: %t, want %t (entries %+v)", got, tt.wantMarked, e.ctrl.unavailable.List())
			}
			n, err := e.kube.CoreV1().Nodes().Get(context.Background(), eksName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Annotations[api.AnnotationInterruption]; got != tt.wantKind {
				t.Errorf("interruption annotation %q, want %q", got, tt.wantKind)
			}
			if acked := q.ackedReceipts(); !slices.Equal(acked, []string{"r1"}) {
				t.Errorf("acked %v, want [r1]", acked)
			}
		})
	}
}
