package provisioner

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/simulator/simtest"
)

func annotatedNode(name string, ann map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

// TestActionsOf: nodes are grouped by their action; an action whose nodes disagree is at its least
// advanced step and earliest step start; the replacement makes it a Replace.
func TestActionsOf(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	nodes := []*corev1.Node{
		annotatedNode("b", map[string]string{api.AnnotationDisruptionAction: "d-1", api.AnnotationDisruptionStep: api.DisruptionStepDeleting,
			api.AnnotationDisruptionStepSince: at(time.Minute), api.AnnotationDisruptionReason: "Underutilized"}),
		annotatedNode("a", map[string]string{api.AnnotationDisruptionAction: "d-1", api.AnnotationDisruptionStep: api.DisruptionStepDraining,
			api.AnnotationDisruptionStepSince: at(0), api.AnnotationDisruptionReason: "Underutilized"}),
		annotatedNode("c", map[string]string{api.AnnotationDisruptionAction: "d-0", api.AnnotationDisruptionStep: api.DisruptionStepReplacing,
			api.AnnotationDisruptionStepSince: at(0), api.AnnotationDisruptionReplacement: "tiler-x", api.AnnotationDisruptionReason: "Underutilized"}),
		annotatedNode("d", nil),
	}
	got := actionsOf(nodes)
	if len(got) != 2 {
		t.Fatalf("%d actions, want 2", len(got))
	}
	if a := got[0]; a.id != "d-0" || a.kind() != api.ActionReplace || a.replacement != "tiler-x" || a.step != api.DisruptionStepReplacing {
		t.Errorf("first action %+v", a)
	}
	a := got[1]
	if a.id != "d-1" || a.kind() != api.ActionDelete || a.step != api.DisruptionStepDraining || !a.since.Equal(t0) ||
		len(a.names()) != 2 || a.names()[0] != "a" || a.reason != api.ReasonUnderutilized {
		t.Errorf("second action %+v %v", a, a.names())
	}
}

// TestActionGracePeriod: an action's terminationGracePeriod and its end are read from its nodes
// (the earliest end), and a pod is due for deletion once the period ends within the pod's own
// grace period (30 s when unset): at once when the pod's is the longer; never without a period.
func TestActionGracePeriod(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ann := func(force time.Duration) map[string]string {
		return map[string]string{api.AnnotationDisruptionAction: "d-1", api.AnnotationDisruptionStep: api.DisruptionStepDraining,
			api.AnnotationDisruptionGracePeriod: "10m0s", api.AnnotationDisruptionForceAfter: t0.Add(force).Format(time.RFC3339)}
	}
	got := actionsOf([]*corev1.Node{annotatedNode("a", ann(time.Minute)), annotatedNode("b", ann(0))})
	if len(got) != 1 || got[0].grace != 10*time.Minute || !got[0].forceAfter.Equal(t0) {
		t.Fatalf("actions %+v, want one with grace 10m ending at %s", got, t0)
	}
	a := got[0]
	pod := func(grace *int64) *corev1.Pod {
		p := simtest.Pod("p").Obj()
		p.Spec.TerminationGracePeriodSeconds = grace
		return p
	}
	five, hour := int64(5), int64(3600)
	for _, c := range []struct {
		name string
		p    *corev1.Pod
		at   time.Duration
		want bool
	}{
		{"default 30s, 31s before", pod(nil), -31 * time.Second, false},
		{"default 30s, 30s before", pod(nil), -30 * time.Second, true},
		{"5s, 6s before", pod(&five), -6 * time.Second, false},
		{"5s, 5s before", pod(&five), -5 * time.Second, true},
		{"5s, after", pod(&five), time.Hour, true},
		{"1h, 10m before", pod(&hour), -10 * time.Minute, true},
	} {
		if got := a.forceDue(c.p, t0.Add(c.at)); got != c.want {
			t.Errorf("%s: due %t, want %t", c.name, got, c.want)
		}
	}
	if a.forced(t0.Add(-time.Second)) || !a.forced(t0) {
		t.Error("the period ends at its forceAfter")
	}
	// A drain's period ends grace after its start, or at the reservation's bound when earlier.
	end := t0.Add(2 * time.Hour)
	block := api.DisruptionAction{Reason: api.ReasonReservationEnding, Deadline: &end}
	if by := forceBy(block); !by.Equal(end.Add(-policy.ReservationTerminationLead)) {
		t.Errorf("forceBy %s, want the end less the lead", by)
	}
	if by := forceBy(api.DisruptionAction{Reason: api.ReasonDrifted, Deadline: &end}); !by.IsZero() {
		t.Errorf("a drift has no bound, got %s", by)
	}
	if got := drainForceAfter(t0.Add(500*time.Millisecond), time.Hour, forceBy(block)); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("an hour's period bounded 90 min on: ends %s, want an hour on, to the second", got)
	}
	if got := drainForceAfter(t0, 4*time.Hour, forceBy(block)); !got.Equal(t0.Add(90 * time.Minute)) {
		t.Errorf("four hours' period bounded 90 min on: ends %s, want the bound", got)
	}
	none := actionsOf([]*corev1.Node{annotatedNode("c", map[string]string{api.AnnotationDisruptionAction: "d-2"})})[0]
	if none.grace != 0 || none.forceDue(pod(nil), t0.Add(100*time.Hour)) || none.forced(t0.Add(100*time.Hour)) {
		t.Errorf("an action without a period is never forced: %+v", none)
	}
}

// TestHoldEvicted: pending pods of a controller whose pod a disruption evicted are held back for
// the grace, and the batch is told when to look again; other pods and later pods are planned.
func TestHoldEvicted(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	owned := func(name, uid string) *corev1.Pod {
		p := simtest.Pod(name).CPU("1").Obj()
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), Controller: ptrTrue()}}
		return p
	}
	pods := []*corev1.Pod{owned("a", "u1"), owned("b", "u2"), simtest.Pod("c").CPU("1").Obj()}
	evicted := map[string]time.Time{"u1": now.Add(-10 * time.Second), "u2": now.Add(-2 * time.Minute)}
	out, wait := holdEvicted(pods, evicted, now, time.Minute)
	if len(out) != 2 || out[0].Name != "b" || out[1].Name != "c" || wait != 50*time.Second {
		t.Fatalf("planned %v, wait %s; want b and c, 50s", names(out), wait)
	}
	if out, wait := holdEvicted(pods, evicted, now, 0); len(out) != 3 || wait != 0 {
		t.Errorf("without a grace: planned %v, wait %s", names(out), wait)
	}
}

func ptrTrue() *bool { b := true; return &b }

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestEvictionBackoff: a refused eviction waits the step interval, then twice as long after each
// refusal, up to evictionBackoffMax; a successful one forgets it.
func TestEvictionBackoff(t *testing.T) {
	m := newDisruptionMemory(time.Minute)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	key := "ns/p"
	if !m.mayEvict(key, now) {
		t.Fatal("a pod never refused must be evictable")
	}
	wantDelays := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for _, d := range wantDelays {
		m.refused(key, now, time.Second)
		if m.mayEvict(key, now.Add(d-time.Millisecond)) || !m.mayEvict(key, now.Add(d)) {
			t.Fatalf("after a refusal at %s the next try must be %s later", now, d)
		}
	}
	for range 10 {
		m.refused(key, now, time.Second)
	}
	if !m.mayEvict(key, now.Add(evictionBackoffMax)) {
		t.Errorf("the backoff grew beyond %s", evictionBackoffMax)
	}
	p := simtest.Pod("p").Namespace("ns").Obj()
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", UID: "u", Controller: ptrTrue()}}
	m.noteEviction(p, now)
	if !m.mayEvict(key, now) || m.evictedOwners()["u"] != now {
		t.Errorf("an eviction must clear the backoff and note the owner: %v", m.evictedOwners())
	}
}

// TestSnapshotMarksDisruptedNodes: a node under a disruption action, cordoned or not yet, is
// unschedulable in the batch's snapshot, and the State's Nodes are left alone.
func TestSnapshotMarksDisruptedNodes(t *testing.T) {
	a := annotatedNode("a", map[string]string{api.AnnotationDisruptionAction: "d-1"})
	b := annotatedNode("b", nil)
	s := State{Nodes: []*corev1.Node{a, b}}
	snap := s.snapshot(nil)
	if !snap.Nodes[0].Spec.Unschedulable || snap.Nodes[1].Spec.Unschedulable {
		t.Errorf("snapshot unschedulable: a %v, b %v; want a only", snap.Nodes[0].Spec.Unschedulable, snap.Nodes[1].Spec.Unschedulable)
	}
	if a.Spec.Unschedulable || s.Nodes[0] != a {
		t.Error("the State's node was changed")
	}
}

// TestConcludedActions: a node the informer still shows under an action this process ended there
// is left out of the next pass, and counted; once it is shown without the action, or not shown,
// it is forgotten, so a later action of the same ID on it is carried out.
func TestConcludedActions(t *testing.T) {
	m := newDisruptionMemory(time.Minute)
	under := func(name, id string) *corev1.Node {
		return annotatedNode(name, map[string]string{api.AnnotationDisruptionAction: id})
	}
	names := func(nodes []*corev1.Node) []string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	all := []*corev1.Node{under("a", "d-1"), under("b", "d-1"), under("c", "d-2"), annotatedNode("d", nil)}
	if got, left := m.withoutConcluded(all); len(got) != 4 || left != 0 {
		t.Fatalf("nothing concluded: %v, %d left out; want all 4, none", names(got), left)
	}
	m.conclude("d-1", []string{"a", "b"})
	got, left := m.withoutConcluded(all)
	if left != 2 || !slices.Equal(names(got), []string{"c", "d"}) {
		t.Errorf("d-1 concluded on a and b, still shown: %v, %d left out; want [c d], 2", names(got), left)
	}
	// a is shown without the action, b is gone: both are forgotten.
	if got, left := m.withoutConcluded([]*corev1.Node{annotatedNode("a", nil), under("c", "d-2")}); left != 0 || len(got) != 2 {
		t.Errorf("caught up: %v, %d left out; want both, none", names(got), left)
	}
	if got, left := m.withoutConcluded([]*corev1.Node{under("a", "d-1"), under("b", "d-1")}); left != 0 || len(got) != 2 {
		t.Errorf("d-1 started again on a and b: %v, %d left out; want both carried out", names(got), left)
	}
	// Another action on a concluded node is not left out.
	m.conclude("d-1", []string{"a"})
	if got, left := m.withoutConcluded([]*corev1.Node{under("a", "d-3")}); left != 0 || len(got) != 1 {
		t.Errorf("d-3 on a after d-1 ended there: %v, %d left out; want it carried out", names(got), left)
	}
}

// TestStuckTerminating: a pod is stuck terminating StuckTerminatingAfter past its deletion
// timestamp, not before; a pod not terminating never is.
func TestStuckTerminating(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := simtest.Pod("a").Obj()
	if stuckTerminating(p, t0.Add(time.Hour)) {
		t.Error("a pod not terminating is stuck")
	}
	p.DeletionTimestamp = &metav1.Time{Time: t0}
	if stuckTerminating(p, t0.Add(StuckTerminatingAfter)) {
		t.Errorf("stuck at %s past its deletion timestamp, want only after", StuckTerminatingAfter)
	}
	if !stuckTerminating(p, t0.Add(StuckTerminatingAfter+time.Second)) {
		t.Errorf("not stuck a second after %s past its deletion timestamp", StuckTerminatingAfter)
	}
}

// ownedPod is a pod of a ReplicaSet (controller UID uid) on node, requesting cpu and 1Gi; its
// UID is its name.
func ownedPod(name, uid, node, cpu string) *corev1.Pod {
	p := simtest.Pod(name).CPU(cpu).Mem("1Gi").Obj()
	p.UID = types.UID(name)
	p.Spec.NodeName = node
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), Controller: ptrTrue()}}
	return p
}

// TestEvictionWaves: a Replace action's nodes list the pods it moves to its replacement
// (replacementPods), and actionsOf reads them back; a drain's waves put the other pods first, by
// GPUs, CPU and memory, largest first, pods of one size in one wave, and the replacement's last;
// replicasPending holds the next wave while a pod of a controller evicted from is pending, and
// not for another controller's pending pod.
func TestEvictionWaves(t *testing.T) {
	a, b, c := ownedPod("a", "u1", "old", "500m"), ownedPod("b", "u2", "old", "2"), ownedPod("c", "u3", "old", "500m")
	gpu := ownedPod("g", "u4", "old", "1")
	gpu.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	b2 := ownedPod("b2", "u2", "old", "2")
	// A small pod a zone spread holds goes before larger free ones.
	z := ownedPod("z", "u5", "old", "250m")
	z.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "z"}}}}
	act := api.DisruptionAction{Kind: api.ActionReplace, Nodes: []string{"old"}, Replacement: &api.NewNode{Name: "repl"},
		Moves: []api.PodMove{{Pod: "default/c", From: "old", To: "repl"}, {Pod: "default/b", From: "old", To: "other"}, {Pod: "default/a", From: "old", To: "repl"}}}
	val := replacementPods(act)
	if val != "default/a,default/c" {
		t.Fatalf("replacement pods %q", val)
	}
	got := actionsOf([]*corev1.Node{annotatedNode("old", map[string]string{api.AnnotationDisruptionAction: "d-1",
		api.AnnotationDisruptionStep: api.DisruptionStepDraining, api.AnnotationDisruptionReplacement: "repl",
		api.AnnotationDisruptionReplacementPods: val})})
	if len(got) != 1 || len(got[0].toReplacement) != 2 || !got[0].toReplacement["default/c"] {
		t.Fatalf("actions %+v", got)
	}
	to := got[0].toReplacement
	pods := []*corev1.Pod{b, a, gpu, z, b2, c}
	slices.SortStableFunc(pods, func(x, y *corev1.Pod) int {
		switch wx, wy := waveOf(x, to), waveOf(y, to); {
		case wx.before(wy):
			return -1
		case wy.before(wx):
			return 1
		}
		return 0
	})
	if got := names(pods); !slices.Equal(got, []string{"g", "z", "b", "b2", "a", "c"}) {
		t.Errorf("eviction order %v, want the GPU pod, the zone-spread pod, then the 2-CPU pods, then the replacement's pods", got)
	}
	if z.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = corev1.ScheduleAnyway; waveOf(z, to).before(waveOf(b, to)) {
		t.Error("a spread that schedules anyway holds nothing: the pod goes by its size")
	}
	if waveOf(b, to) != waveOf(b2, to) || waveOf(a, to) != waveOf(c, to) {
		t.Error("pods of one size are not in one wave")
	}
	owners := map[string]bool{"u1": true, "u3": true}
	replica := ownedPod("a-2", "u1", "", "500m")
	other := ownedPod("x", "u9", "", "1")
	if !replicasPending(owners, []*corev1.Pod{b, replica}) {
		t.Error("a's replica is pending: the next wave must wait")
	}
	replica.Spec.NodeName = "repl"
	if replicasPending(owners, []*corev1.Pod{b, replica, other}) {
		t.Error("a's replica is bound (another controller's pod pending): the next wave may go")
	}
	if v := replacementPods(api.DisruptionAction{Kind: api.ActionDelete, Nodes: []string{"old"}, Moves: act.Moves}); v != "" {
		t.Errorf("a Delete action lists %q", v)
	}
}

// TestKeptRoom: an action's nodes list where it moves the pods that do not go to its replacement
// (movedPods), and actionsOf reads them back. While the drain evicts big (to d), the nodes only
// later waves move to (b, the replacement) keep their room; while big's replica is placed, d
// stays free whatever wave is next; the wave is placed once big's controller has a new pod bound
// (a pending one, or one it had before, does not count; a Job's pod is not waited for); then
// mid's wave frees b, and the last
// wave the replacement. roomKept compares with the nodes' taints.
func TestKeptRoom(t *testing.T) {
	act := api.DisruptionAction{Kind: api.ActionReplace, Nodes: []string{"old"}, Replacement: &api.NewNode{Name: "tiler-r"},
		Moves: []api.PodMove{{Pod: "default/mid", To: "b"}, {Pod: "default/big", To: "d"}, {Pod: "default/c", To: "tiler-r"}, {Pod: "default/mid2", To: "b"}}}
	moves := movedPods(act)
	if moves != "default/big=d,default/mid2=b,default/mid=b" {
		t.Fatalf("moves %q", moves)
	}
	acts := actionsOf([]*corev1.Node{annotatedNode("old", map[string]string{api.AnnotationDisruptionAction: "d-1",
		api.AnnotationDisruptionStep: api.DisruptionStepDraining, api.AnnotationDisruptionReplacement: "tiler-r",
		api.AnnotationDisruptionReplacementPods: replacementPods(act), api.AnnotationDisruptionMoves: moves})})
	if len(acts) != 1 || len(acts[0].moves) != 3 || acts[0].moves["default/mid2"] != "b" {
		t.Fatalf("actions %+v", acts)
	}
	a := acts[0]
	a.replacementNodes = []string{"r"}
	big, mid, mid2, c := ownedPod("big", "u1", "old", "1500m"), ownedPod("mid", "u2", "old", "1100m"), ownedPod("mid2", "u3", "old", "1100m"), ownedPod("c", "u4", "old", "500m")
	sibling := ownedPod("big-0", "u1", "d", "1500m") // big's controller had it before the wave
	waves := func(pods ...*corev1.Pod) (map[*corev1.Pod]evictionWave, evictionWave) {
		out := map[*corev1.Pod]evictionWave{}
		var first *evictionWave
		for _, p := range pods {
			w := waveOf(p, a.toReplacement)
			out[p] = w
			if first == nil || w.before(*first) {
				first = &w
			}
		}
		return out, *first
	}
	ctl := &Controller{disruption: newDisruptionMemory(time.Minute)}
	waiting, wave := waves(big, mid, mid2, c)
	if got := ctl.keptRoom(a, waiting, wave, false); !maps.Equal(got, map[string]bool{"d": false, "b": true, "r": true}) {
		t.Errorf("big's wave: room %v, want d free, b and the replacement kept", got)
	}
	all := []*corev1.Pod{sibling, big, mid, mid2, c}
	ctl.disruption.waveEvicted(a.id, big, all)
	ctl.disruption.waveEvicted(a.id, big, all) // a pass the informer lags evicts it again: one replica still
	waiting, wave = waves(mid, mid2, c)
	if got := ctl.keptRoom(a, waiting, wave, true); !maps.Equal(got, map[string]bool{"d": false, "b": true, "r": true}) {
		t.Errorf("big's replica being placed: room %v, want d free, b and the replacement kept", got)
	}
	replica := ownedPod("big-1", "u1", "", "1500m")
	all = []*corev1.Pod{sibling, mid, mid2, c, replica}
	if ctl.disruption.wavePlaced(a.id, all) {
		t.Error("big's replica is pending (its sibling was there before): the wave is not placed")
	}
	replica.Spec.NodeName = "d"
	if !ctl.disruption.wavePlaced(a.id, all) {
		t.Error("big's replica is bound: the wave is placed")
	}
	if got := ctl.keptRoom(a, waiting, wave, false); !maps.Equal(got, map[string]bool{"b": false, "r": true}) {
		t.Errorf("mid's wave: room %v, want b free, the replacement kept", got)
	}
	if !ctl.disruption.wavePlaced(a.id, all) {
		t.Error("a new wave evicted nothing yet: it is placed")
	}
	job := ownedPod("j", "u8", "old", "1")
	job.OwnerReferences[0].Kind = "Job"
	if ctl.disruption.waveEvicted(a.id, job, append(all, job)); !ctl.disruption.wavePlaced(a.id, all) {
		t.Error("a Job may not replace an evicted pod: the next wave does not wait for it")
	}
	waiting, wave = waves(c)
	room := ctl.keptRoom(a, waiting, wave, false)
	if !maps.Equal(room, map[string]bool{"r": false}) {
		t.Errorf("the replacement's wave: room %v, want it free", room)
	}
	taint := []corev1.Taint{{Key: api.TaintReplacementFilling, Effect: corev1.TaintEffectPreferNoSchedule}}
	r := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: corev1.NodeSpec{Taints: taint}}
	if roomKept(room, newNodeIndex([]*corev1.Node{r})) {
		t.Error("the replacement still carries the taint: its room is not as wanted")
	}
	if !roomKept(map[string]bool{"r": true, "gone": true}, newNodeIndex([]*corev1.Node{r})) {
		t.Error("the replacement carries the taint (and a node not shown is left out): the room is kept")
	}
	ctl.disruption.conclude(a.id, []string{"old"})
	if ctl.disruption.waveRoomOf(a.id) != nil || !ctl.disruption.wavePlaced(a.id, []*corev1.Pod{ownedPod("x", "u4", "", "1")}) {
		t.Error("a concluded action's wave is forgotten")
	}
}

// TestEndOnce: a pod evicted, or deleted past its action's terminationGracePeriod, is not
// evicted or deleted (and counted) again by a pass whose informer still shows it running, unless
// the eviction was refused or the deletion failed; the memory is pruned after endedMemory.
func TestEndOnce(t *testing.T) {
	m := newDisruptionMemory(time.Minute)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if m.hasEnded("u1", t0) {
		t.Fatal("a pod nothing evicted or deleted has not ended")
	}
	if !m.endOnce("u1", t0) || m.endOnce("u1", t0.Add(10*time.Millisecond)) || !m.hasEnded("u1", t0.Add(10*time.Millisecond)) {
		t.Fatal("the first eviction or forced deletion goes, the next pass's does not: the pod has ended")
	}
	m.forgetEnded("u1")
	if m.hasEnded("u1", t0.Add(time.Second)) || !m.endOnce("u1", t0.Add(time.Second)) {
		t.Error("an eviction refused, or a deletion that failed, is tried again")
	}
	if m.hasEnded("u1", t0.Add(endedMemory+2*time.Second)) {
		t.Errorf("u1 is forgotten after %s", endedMemory)
	}
	if !m.endOnce("u2", t0.Add(endedMemory+2*time.Second)) || len(m.ended) != 1 {
		t.Errorf("ended %v: u1 is dropped after %s", m.ended, endedMemory)
	}
}
