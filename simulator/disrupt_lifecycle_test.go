package simulator_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/simulator"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// lifecyclePolicy has pools that never consolidate, so that every action a test sees is a
// node-lifecycle one; the budgets allow everything unless a test narrows them.
const lifecyclePolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceFamilies: [m7i]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
  disruption: {consolidation: never, budgets: [{nodes: "100%"}]}
- name: gpu
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {consolidation: never, budgets: [{nodes: "100%"}]}
`

func newLifecycleFleet(t *testing.T) *fleet {
	f := newFleet(t)
	f.pol = lifecyclePolicy
	return f
}

// poolHash is policy.PoolHash of the named pool of the fleet's policy.
func (f *fleet) poolHash(name string) string {
	f.t.Helper()
	pol, err := policy.Parse([]byte(f.pol))
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range pol.Pools {
		if pol.Pools[i].Name == name {
			return policy.PoolHash(&pol.Pools[i])
		}
	}
	f.t.Fatalf("no pool %s", name)
	return ""
}

func annotate(n *corev1.Node, k, v string) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
}

// forcedAction returns the node's action, failing unless it has the reason.
func forcedAction(t *testing.T, p *api.DisruptionPlan, node string, reason api.DisruptionReason) *api.DisruptionAction {
	t.Helper()
	a := actionOf(p, node)
	if a == nil {
		t.Fatalf("node %s: no action (kept as %q)", node, keptAs(p, node))
	}
	if a.Reason != reason {
		t.Fatalf("node %s: reason %s, want %s", node, a.Reason, reason)
	}
	return a
}

// TestLifecycleDriftPoolHash: a node whose tiler.dev/pool-hash is not its pool's current hash has
// drifted and moves to the room the cluster has; a node with the current hash, or none, has not.
// The drift is no consolidation: the node is no candidate.
func TestLifecycleDriftPoolHash(t *testing.T) {
	f := newLifecycleFleet(t)
	annotate(f.node("stale", "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, "v1-0000000000000000")
	annotate(f.node("current", "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, f.poolHash("general"))
	f.node("unmarked", "general", "m7i.2xlarge", api.OnDemand)
	f.pod("s", "stale").CPU("1").Mem("2Gi")
	f.pod("c", "current").CPU("1").Mem("2Gi")
	f.pod("u", "unmarked").CPU("1").Mem("2Gi")
	p := f.plan()
	a := forcedAction(t, p, "stale", api.ReasonDrifted)
	if a.Kind != api.ActionDelete || destination(p, "s") == "" || destination(p, "s") == "stale" {
		t.Errorf("stale: %+v", a)
	}
	if !strings.Contains(a.Message, api.AnnotationPoolHash) || a.SavingsPerHour != a.CostPerHourBefore {
		t.Errorf("stale's message %q, savings %v", a.Message, a.SavingsPerHour)
	}
	if len(p.Actions) != 1 || keptAs(p, "current") != api.KeepConsolidationDisabled || keptAs(p, "unmarked") != api.KeepConsolidationDisabled {
		t.Errorf("actions %+v, kept %+v", p.Actions, p.Kept)
	}
	if len(p.Candidates) != 0 {
		t.Errorf("candidates %v: a drifted node needs no candidate wait", p.Candidates)
	}
}

// TestLifecycleImageDrift: a node whose image (Options.Images, as the caller asks the cloud) is
// not the one its provider launches now is Drifted, under the pool's budgets for drift; a node on
// the current image, or whose provider does not say, is not; a name no node has changes nothing.
func TestLifecycleImageDrift(t *testing.T) {
	f := newLifecycleFleet(t)
	f.node("old-image", "general", "m7i.xlarge", api.OnDemand)
	f.node("new-image", "general", "m7i.2xlarge", api.OnDemand)
	f.pod("o", "old-image").CPU("1").Mem("2Gi")
	f.pod("n", "new-image").CPU("1").Mem("2Gi")
	f.opts.Images = map[string]simulator.NodeImage{"old-image": {Booted: "ami-1", Now: "ami-2"}, "new-image": {Booted: "ami-2", Now: "ami-2"},
		"no-such-node": {Booted: "ami-0", Now: "ami-2"}}
	p := f.plan()
	a := forcedAction(t, p, "old-image", api.ReasonDrifted)
	if !strings.Contains(a.Message, "booted from image ami-1; its nodes now boot from ami-2") || destination(p, "o") != "new-image" {
		t.Errorf("old-image's action %+v, its pod to %q", a, destination(p, "o"))
	}
	if len(p.Actions) != 1 || keptAs(p, "new-image") != api.KeepConsolidationDisabled {
		t.Errorf("actions %+v, kept %+v", p.Actions, p.Kept)
	}
	// The pool's budget for drift holds it.
	f.pol = strings.Replace(lifecyclePolicy, `budgets: [{nodes: "100%"}]}
- name: gpu`, `budgets: [{nodes: "0", reasons: [Drifted]}]}
- name: gpu`, 1)
	// Kept, it is still said to be due (Drifted), and what holds it; the other node is not due.
	if p := f.plan(); len(p.Actions) != 0 || keptAs(p, "old-image") != api.KeepBudget || dueOf(p, "old-image") != api.ReasonDrifted || dueOf(p, "new-image") != "" {
		t.Errorf("under a drift budget of 0: actions %+v, old-image kept as %q due %q, new-image due %q", p.Actions,
			keptAs(p, "old-image"), dueOf(p, "old-image"), dueOf(p, "new-image"))
	}
}

// TestLifecycleSettingsDrift: a node launched with other launch settings than a launch in its
// zone gets now is Drifted, naming both, as by its image; a node with the same settings, or whose
// provider does not record them, is not. A canary launched with the new settings that shows a
// health signal pauses the roll onto them (BootName: image and settings), though the image is the
// same; one of the old settings does not, and the memory of a failure is by image and settings.
func TestLifecycleSettingsDrift(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`+"\n", `budgets: [{nodes: "100%"}], repair: {budget: "0"}}`+"\n", 2)
	f.gpuNode("old-1")
	f.gpuNode("old-2")
	canary := f.gpuNode("canary")
	unrecorded := f.gpuNode("unrecorded")
	f.pod("a", "old-1").CPU("1").Mem("4Gi").GPU(1)
	f.pod("b", "old-2").CPU("1").Mem("4Gi").GPU(1)
	f.opts.Images = map[string]simulator.NodeImage{
		"old-1":      {Booted: "ami-1", Now: "ami-1", Settings: "sg-a:subnet-1", SettingsNow: "sg-b:subnet-1"},
		"old-2":      {Booted: "ami-1", Now: "ami-1", Settings: "sg-a:subnet-1", SettingsNow: "sg-b:subnet-1"},
		"canary":     {Booted: "ami-1", Now: "ami-1", Settings: "sg-b:subnet-1", SettingsNow: "sg-b:subnet-1"},
		"unrecorded": {Booted: "ami-1", Now: "ami-1", SettingsNow: "sg-b:subnet-1"},
	}
	p := f.plan()
	a := forcedAction(t, p, "old-1", api.ReasonDrifted)
	if !strings.Contains(a.Message, "launched with settings sg-a:subnet-1; its nodes now launch with sg-b:subnet-1") || strings.Contains(a.Message, "image") {
		t.Errorf("old-1's drift message %q", a.Message)
	}
	if dueOf(p, "canary") != "" || dueOf(p, "unrecorded") != "" {
		t.Errorf("canary due %q, unrecorded due %q; want neither due", dueOf(p, "canary"), dueOf(p, "unrecorded"))
	}
	canary.Status.Conditions = append(canary.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
		Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	p = f.plan()
	wantKept(t, p, api.KeepRollPaused, api.ReasonDrifted, "the roll onto image ami-1 with launch settings sg-b:subnet-1 is paused: node canary", "old-1", "old-2")
	// A sick node of the old settings says nothing of the new ones.
	canary.Status.Conditions = canary.Status.Conditions[:len(canary.Status.Conditions)-1]
	f.opts.Images["canary"] = simulator.NodeImage{Booted: "ami-1", Now: "ami-1", Settings: "sg-a:subnet-1", SettingsNow: "sg-a:subnet-1"}
	f.opts.Images["unrecorded"] = simulator.NodeImage{Booted: "ami-1", Now: "ami-1", Settings: "sg-a:subnet-1", SettingsNow: "sg-a:subnet-1"}
	sick := unrecorded
	sick.Status.Conditions = append(sick.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
		Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	if p := f.plan(); keptAs(p, "old-1") == api.KeepRollPaused || countReason(p, api.ReasonDrifted) == 0 {
		t.Errorf("a sick node of the old settings: old-1 kept as %q, %d drift actions; want the roll going", keptAs(p, "old-1"), countReason(p, api.ReasonDrifted))
	}
	sick.Status.Conditions = sick.Status.Conditions[:len(sick.Status.Conditions)-1]
	// Remembered failures are by image and settings.
	f.opts.FailedImages = map[string]string{"ami-1": "an image failure"}
	if p := f.plan(); keptAs(p, "old-1") == api.KeepRollPaused || countReason(p, api.ReasonDrifted) == 0 {
		t.Errorf("a failure of ami-1 alone paused the roll onto new settings: %+v", p.Kept)
	}
	f.opts.FailedImages = map[string]string{simulator.BootName("ami-1", "sg-b:subnet-1"): "launch l-1 did not register within 10m0s"}
	wantKept(t, f.plan(), api.KeepRollPaused, api.ReasonDrifted, "it failed before: launch l-1", "old-1", "old-2")
}

// countReason counts the nodes of the plan's actions of reason r.
func countReason(p *api.DisruptionPlan, r api.DisruptionReason) int {
	n := 0
	for _, a := range p.Actions {
		if a.Reason == r {
			n += len(a.Nodes)
		}
	}
	return n
}

// TestLifecycleImageRollPaused: while a node booted from the image the others drift onto shows a
// health signal (a driver throwing XIDs: AcceleratedHardwareReady=False), the drifted nodes are
// kept (RollPaused, still due: Drifted), naming it; nodes drifting onto another image are not;
// once the signal is gone, the roll goes on.
func TestLifecycleImageRollPaused(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`+"\n", `budgets: [{nodes: "100%"}], repair: {budget: "0"}}`+"\n", 2)
	f.gpuNode("old-1")
	f.gpuNode("old-2")
	canary := f.gpuNode("canary")
	canary.Status.Conditions = append(canary.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
		Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	f.node("cpu-old", "general", "m7i.xlarge", api.OnDemand)
	f.node("cpu-new", "general", "m7i.xlarge", api.OnDemand)
	f.pod("a", "old-1").CPU("1").Mem("4Gi").GPU(1)
	f.pod("b", "old-2").CPU("1").Mem("4Gi").GPU(1)
	f.pod("c", "cpu-old").CPU("1").Mem("2Gi")
	f.opts.Images = map[string]simulator.NodeImage{
		"old-1": {Booted: "ami-gpu-1", Now: "ami-gpu-2"}, "old-2": {Booted: "ami-gpu-1", Now: "ami-gpu-2"},
		"canary":  {Booted: "ami-gpu-2", Now: "ami-gpu-2"},
		"cpu-old": {Booted: "ami-cpu-1", Now: "ami-cpu-2"}, "cpu-new": {Booted: "ami-cpu-2", Now: "ami-cpu-2"},
	}
	p := f.plan()
	wantKept(t, p, api.KeepRollPaused, api.ReasonDrifted, "the roll onto image ami-gpu-2 is paused: node canary", "old-1", "old-2")
	forcedAction(t, p, "cpu-old", api.ReasonDrifted)
	// Expired nodes would be replaced onto the same image: paused too.
	pol := f.pol
	f.pol = strings.Replace(pol, `- name: gpu
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {consolidation: never,`, `- name: gpu
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {consolidation: never, expireAfter: 1h,`, 1)
	if f.pol == pol {
		t.Fatal("the policy has no gpu pool to expire")
	}
	p = f.plan()
	for _, n := range []string{"old-1", "old-2"} {
		if keptAs(p, n) != api.KeepRollPaused || dueOf(p, n) != api.ReasonExpired {
			t.Errorf("expired: %s kept as %q due %q, want RollPaused and Expired", n, keptAs(p, n), dueOf(p, n))
		}
	}
	f.pol = pol
	// The canary healthy again: both GPU nodes roll.
	canary.Status.Conditions = canary.Status.Conditions[:len(canary.Status.Conditions)-1]
	if p := f.plan(); countReason(p, api.ReasonDrifted) != 3 {
		t.Errorf("%d drift actions once the canary is healthy, want 3 (old-1, old-2, cpu-old); kept %+v", countReason(p, api.ReasonDrifted), p.Kept)
	}
	// An image remembered as failed pauses the roll though no node shows it now; the CPU image,
	// not remembered, still rolls.
	f.opts.FailedImages = map[string]string{"ami-gpu-2": "launch l-1 did not register within 10m0s"}
	p = f.plan()
	wantKept(t, p, api.KeepRollPaused, api.ReasonDrifted, "the roll onto image ami-gpu-2 is paused: it failed before: launch l-1 did not register", "old-2", "old-1")
	forcedAction(t, p, "cpu-old", api.ReasonDrifted)
	f.opts.FailedImages = nil
}

// wantKept fails unless each node is kept for reason while due, and unless the first one's message
// holds msg.
func wantKept(t *testing.T, p *api.DisruptionPlan, reason api.KeepReason, due api.DisruptionReason, msg string, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if keptAs(p, n) != reason || dueOf(p, n) != due {
			t.Errorf("%s kept as %q due %q, want %s and %s", n, keptAs(p, n), dueOf(p, n), reason, due)
		}
	}
	for _, k := range p.Kept {
		if k.Name == nodes[0] && !strings.Contains(k.Message, msg) {
			t.Errorf("%s's message %q does not hold %q", k.Name, k.Message, msg)
		}
	}
}

// TestLifecycleFailedImages: a node with a health signal younger than the image probation
// reports the image it booted from; an older one, or one without an image, does not.
func TestLifecycleFailedImages(t *testing.T) {
	f := newLifecycleFleet(t)
	young := f.gpuNode("young")
	young.CreationTimestamp = metav1.NewTime(dNow.Add(-20 * time.Minute))
	old := f.gpuNode("old")
	noImage := f.gpuNode("no-image")
	noImage.CreationTimestamp = young.CreationTimestamp
	for _, n := range []*corev1.Node{young, old, noImage} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
			Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	}
	f.gpuNode("healthy").CreationTimestamp = young.CreationTimestamp
	f.opts.Images = map[string]simulator.NodeImage{
		"young": {Booted: "ami-2", Now: "ami-2"}, "old": {Booted: "ami-1", Now: "ami-2"}, "healthy": {Booted: "ami-3", Now: "ami-2"},
	}
	if p := f.plan(); len(p.FailedImages) != 0 {
		t.Errorf("without a probation: failed images %+v, want none", p.FailedImages)
	}
	f.opts.ImageProbation = time.Hour
	p := f.plan()
	if len(p.FailedImages) != 1 || p.FailedImages[0].Image != "ami-2" || p.FailedImages[0].Node != "young" ||
		!strings.Contains(p.FailedImages[0].Message, "booted from it 20m0s before, shows Condition") {
		t.Errorf("failed images %+v, want ami-2 on young (20m old, XID) only", p.FailedImages)
	}
	f.opts.ImageProbation = 10 * time.Minute
	if p := f.plan(); len(p.FailedImages) != 0 {
		t.Errorf("probation 10m: failed images %+v, want none (young is 20m old)", p.FailedImages)
	}
}

// TestLifecycleDriftReplaceFirst: a drifted node whose pods fit nowhere else is replaced by a node
// of its pool — here a dearer one, since the pool no longer has the cheap family — and the
// replacement takes the pods.
func TestLifecycleDriftReplaceFirst(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, "instanceFamilies: [m7i]", "instanceFamilies: [m7i]\n  zones: [us-east-1b]", 1)
	f.node("old-zone", "general", "m7i.xlarge", api.OnDemand)
	f.pod("w", "old-zone").CPU("3").Mem("8Gi")
	p := f.plan()
	a := forcedAction(t, p, "old-zone", api.ReasonDrifted)
	if a.Kind != api.ActionReplace || a.Replacement == nil || destination(p, "w") != a.Replacement.Name {
		t.Fatalf("old-zone: %+v", a)
	}
	if a.Replacement.Zone != "us-east-1b" || a.Replacement.Pool != "general" || !strings.Contains(a.Message, "zone us-east-1a") {
		t.Errorf("replacement %+v, message %q", a.Replacement, a.Message)
	}
}

// TestLifecycleDriftMovesOffDueNodes: a drifted node's pods move onto nodes that do not have to go
// themselves, so that a pool rolled a node at a time moves each pod once. d1 and d2 have drifted
// and the budget takes one at a time. d1's pod goes to "room", which has not drifted, although
// d2 is fuller; with no such room d1 is replaced rather than emptied onto d2; and only when one
// new node cannot take d1's pods (the pool now buys m7i.large only) does a pod go onto d2.
func TestLifecycleDriftMovesOffDueNodes(t *testing.T) {
	build := func(room bool) *fleet {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`, `budgets: [{nodes: "1", reasons: [Drifted]}]}`, 1)
		for _, n := range []string{"d1", "d2"} {
			annotate(f.node(n, "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, "v1-stale")
		}
		f.pod("a", "d1").CPU("1").Mem("1Gi")
		f.pod("b", "d2").CPU("2").Mem("1Gi")
		if room {
			annotate(f.node("room", "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, f.poolHash("general"))
			f.pod("c", "room").CPU("1").Mem("1Gi")
		}
		return f
	}
	p := build(true).plan()
	if a := forcedAction(t, p, "d1", api.ReasonDrifted); a.Kind != api.ActionDelete || destination(p, "a") != "room" {
		t.Errorf("with room on a node that has not drifted: %+v, pod a to %s; want a Delete moving it to room", a, destination(p, "a"))
	}
	p = build(false).plan()
	if a := forcedAction(t, p, "d1", api.ReasonDrifted); a.Kind != api.ActionReplace || destination(p, "a") != a.Replacement.Name {
		t.Errorf("with room only on d2: %+v, pod a to %s; want a replacement taking it", a, destination(p, "a"))
	}
}

// TestLifecycleDriftSeveralReplacements: the pool now buys m7i.large only, and drifted d1
// (m7i.xlarge) runs two pods that one m7i.large cannot hold together: d1 is replaced by two new
// nodes, one pod each, rather than kept for ever; d2, drifted too, takes nothing. A pod no new
// node can hold keeps its node, and the message says how many new nodes were tried.
func TestLifecycleDriftSeveralReplacements(t *testing.T) {
	build := func(big string) *fleet {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`, `budgets: [{nodes: "1", reasons: [Drifted]}]}`, 1)
		f.pol = strings.Replace(f.pol, "instanceFamilies: [m7i]", "instanceTypes: [m7i.large]", 1)
		for _, n := range []string{"d1", "d2"} {
			f.node(n, "general", "m7i.xlarge", api.OnDemand)
		}
		f.pod("a", "d1").CPU("1").Mem("1Gi")
		f.pod("a2", "d1").CPU(big).Mem("1Gi")
		f.pod("b", "d2").CPU("1").Mem("1Gi")
		return f
	}
	p := build("1500m").plan()
	a := forcedAction(t, p, "d1", api.ReasonDrifted)
	repl := a.Replacements()
	if a.Kind != api.ActionReplace || len(repl) != 2 || destination(p, "a") == destination(p, "a2") ||
		!a.IsReplacement(destination(p, "a")) || !a.IsReplacement(destination(p, "a2")) {
		t.Fatalf("d1: %+v; want two replacements, one pod each", a)
	}
	for _, r := range repl {
		if r.Offering.InstanceType != "m7i.large" || r.Pool != "general" {
			t.Errorf("replacement %+v, want an m7i.large of pool general", r)
		}
	}
	if want := repl[0].PricePerHour + repl[1].PricePerHour; math.Abs(a.CostPerHourAfter-want) > 1e-6 || math.Abs(a.SavingsPerHour-(a.CostPerHourBefore-want)) > 1e-6 {
		t.Errorf("prices: before %v, after %v, saves %v; want after the two replacements' %v", a.CostPerHourBefore, a.CostPerHourAfter, a.SavingsPerHour, want)
	}
	if keptAs(p, "d2") != api.KeepBudget {
		t.Errorf("d2 kept as %q, want Budget", keptAs(p, "d2"))
	}
	p = build("2500m").plan()
	if k := keptAs(p, "d1"); k != api.KeepNoReplacement {
		t.Fatalf("a pod of 2.5 CPUs no m7i.large holds: d1 kept as %q, want NoReplacement", k)
	}
	for _, k := range p.Kept {
		if k.Name == "d1" && !strings.Contains(k.Message, "on up to 2 new nodes") {
			t.Errorf("d1's message %q does not say how many new nodes were tried", k.Message)
		}
	}
}

// TestLifecycleDriftRemovedPool: a node of a pool the policy no longer has is managed and drifted;
// its pods go to the pools that remain.
func TestLifecycleDriftRemovedPool(t *testing.T) {
	f := newLifecycleFleet(t)
	f.node("orphan", "retired", "m7i.xlarge", api.OnDemand)
	f.node("room", "general", "m7i.2xlarge", api.OnDemand)
	f.pod("o", "orphan").CPU("1").Mem("2Gi")
	p := f.plan()
	a := forcedAction(t, p, "orphan", api.ReasonDrifted)
	if destination(p, "o") != "room" || a.Pool != "retired" || !strings.Contains(a.Message, "no longer in the policy") {
		t.Errorf("orphan: %+v", a)
	}
}

// TestLifecycleDriftGPUSharing: a GPU node bought with time-slicing in a pool that now hands out
// whole GPUs has drifted.
func TestLifecycleDriftGPUSharing(t *testing.T) {
	f := newLifecycleFleet(t)
	n := f.node("sliced", "gpu", "g6.xlarge", api.OnDemand)
	n.Labels[api.LabelGPUReplicas] = "4"
	n.Status.Allocatable = n.Status.Allocatable.DeepCopy()
	n.Status.Allocatable[api.ResourceGPU] = resource.MustParse("4")
	n.Status.Capacity = n.Status.Allocatable
	f.node("whole", "gpu", "g6.xlarge", api.OnDemand)
	p := f.plan()
	a := forcedAction(t, p, "sliced", api.ReasonDrifted)
	if !strings.Contains(a.Message, "exposed as replicas") || actionOf(p, "whole") != nil {
		t.Errorf("sliced: %+v; whole: %+v", a, actionOf(p, "whole"))
	}
}

// TestLifecycleDriftGPUDriver: a pool without gpu.driver keeps whole-GPU nodes of the device
// plugin and of the DRA driver alone (it buys both); one that pins a driver drifts the other's.
func TestLifecycleDriftGPUDriver(t *testing.T) {
	for _, tc := range []struct{ driver, drifted string }{{"", ""}, {"device-plugin", "dra"}, {"dra", "whole"}} {
		t.Run("driver "+tc.driver, func(t *testing.T) {
			f := newLifecycleFleet(t)
			if tc.driver != "" {
				f.pol = strings.Replace(f.pol, "  instanceFamilies: [g6]\n", "  instanceFamilies: [g6]\n  gpu: {driver: "+tc.driver+"}\n", 1)
			}
			n := f.node("dra", "gpu", "g6.xlarge", api.OnDemand)
			n.Labels[api.LabelDeployDevicePlugin], n.Labels[api.LabelDeployDRADriver] = "false", "true"
			n.Status.Allocatable = n.Status.Allocatable.DeepCopy()
			delete(n.Status.Allocatable, api.ResourceGPU)
			n.Status.Capacity = n.Status.Allocatable
			f.node("whole", "gpu", "g6.xlarge", api.OnDemand)
			p := f.plan()
			for _, name := range []string{"dra", "whole"} {
				a := actionOf(p, name)
				switch {
				case name == tc.drifted && (a == nil || a.Reason != api.ReasonDrifted || !strings.Contains(a.Message, "exposed as "+name)):
					t.Errorf("%s: %+v, want drifted for its GPU exposure", name, a)
				case name != tc.drifted && a != nil:
					t.Errorf("%s: %+v, want kept", name, a)
				}
			}
		})
	}
}

// TestLifecycleExpired: a node older than its pool's expireAfter is replaced; a younger one stays,
// and so does an old one annotated do-not-disrupt.
func TestLifecycleExpired(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, "disruption: {consolidation: never, budgets: [{nodes: \"100%\"}]}",
		"disruption: {consolidation: never, expireAfter: 12h, budgets: [{nodes: \"100%\"}]}", 1)
	f.node("old", "general", "m7i.xlarge", api.OnDemand)
	young := f.node("young", "general", "m7i.2xlarge", api.OnDemand)
	young.CreationTimestamp = metav1.NewTime(dNow.Add(-2 * time.Hour))
	annotate(f.node("old-dnd", "general", "m7i.xlarge", api.OnDemand), api.AnnotationKarpenterDoNotDisrupt, "true")
	f.pod("a", "old").CPU("1").Mem("2Gi")
	p := f.plan()
	if keptAs(p, "old-dnd") != api.KeepDoNotDisrupt {
		t.Errorf("old-dnd kept as %q", keptAs(p, "old-dnd"))
	}
	a := forcedAction(t, p, "old", api.ReasonExpired)
	if destination(p, "a") != "young" || !strings.Contains(a.Message, "created 24h0m0s ago") || !strings.Contains(a.Message, "expireAfter is 12h0m0s") {
		t.Errorf("old: %+v", a)
	}
	if actionOf(p, "young") != nil {
		t.Errorf("young removed: %+v", actionOf(p, "young"))
	}
}

// TestLifecycleBudgets: drift and expiry are bounded by the pool's budgets for their reason, less
// the nodes already disrupting; what is left waits with reason Budget.
func TestLifecycleBudgets(t *testing.T) {
	build := func(budgets string) *fleet {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`, "budgets: "+budgets+"}", 1)
		for _, n := range []string{"d1", "d2", "d3"} {
			annotate(f.node(n, "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, "v1-stale")
		}
		annotate(f.node("room", "general", "m7i.4xlarge", api.OnDemand), api.AnnotationPoolHash, f.poolHash("general"))
		return f
	}
	// One Drifted at a time; the Empty-only budget of 0 does not apply to drift.
	f := build(`[{nodes: "1", reasons: [Drifted]}, {nodes: "0", reasons: [Empty]}]`)
	p := f.plan()
	if countReason(p, api.ReasonDrifted) != 1 || keptAs(p, "d2") != api.KeepBudget || keptAs(p, "d3") != api.KeepBudget {
		t.Errorf("budget 1: actions %+v, kept %+v", p.Actions, p.Kept)
	}
	// A node already being disrupted uses the one disruption.
	f = build(`[{nodes: "1", reasons: [Drifted]}]`)
	f.opts.Disrupting = []string{"room"}
	if p := f.plan(); countReason(p, api.ReasonDrifted) != 0 || keptAs(p, "d1") != api.KeepBudget {
		t.Errorf("one disrupting: actions %+v, kept %+v", p.Actions, p.Kept)
	}
	// A budget of zero for Drifted stops it.
	f = build(`[{nodes: "0", reasons: [Drifted]}]`)
	if p := f.plan(); countReason(p, api.ReasonDrifted) != 0 {
		t.Errorf("budget 0: actions %+v", p.Actions)
	}
	// maxActions bounds drift too.
	f = build(`[{nodes: "100%"}]`)
	f.opts.MaxActions = 2
	if p := f.plan(); countReason(p, api.ReasonDrifted) != 2 || keptAs(p, "d3") != api.KeepBudget {
		t.Errorf("maxActions 2: actions %+v, kept %+v", p.Actions, p.Kept)
	}
}

// TestLifecycleDoNotDisrupt: drift and expiry honour do-not-disrupt on the node and on its pods,
// and a PodDisruptionBudget that allows no disruption now; a cordoned node waits. With the pool's
// terminationGracePeriod, the pod's annotation and the budget no longer keep their nodes: their
// actions carry the period and name what holds them; the node's annotation and the cordon still
// keep theirs, and an action no pod holds carries the period too.
func TestLifecycleDoNotDisrupt(t *testing.T) {
	build := func(grace string) *fleet {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `disruption: {consolidation: never,`, `disruption: {consolidation: never,`+grace, 1)
		for _, n := range []string{"node-dnd", "pod-dnd", "pdb", "cordoned", "free"} {
			annotate(f.node(n, "general", "m7i.xlarge", api.OnDemand), api.AnnotationPoolHash, "v1-stale")
		}
		f.node("room", "general", "m7i.4xlarge", api.OnDemand)
		annotate(f.snap.Nodes[0], api.AnnotationDoNotDisrupt, "true")
		f.snap.Nodes[3].Spec.Unschedulable = true
		f.pod("a", "node-dnd").CPU("500m").Mem("1Gi")
		f.pod("b", "pod-dnd").CPU("500m").Mem("1Gi").Annotate(api.AnnotationKarpenterDoNotDisrupt, "true")
		f.pod("c", "pdb").CPU("500m").Mem("1Gi").Label("app", "guarded")
		f.pod("d", "free").CPU("500m").Mem("1Gi")
		b := &policyv1.PodDisruptionBudget{}
		b.Name, b.Namespace = "guarded", "default"
		b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}
		f.snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{b}
		return f
	}
	p := build("").plan()
	want := map[string]api.KeepReason{"node-dnd": api.KeepDoNotDisrupt, "pod-dnd": api.KeepPodDoNotDisrupt, "pdb": api.KeepPDB,
		"cordoned": api.KeepDisrupting}
	for n, r := range want {
		if keptAs(p, n) != r {
			t.Errorf("%s kept as %q, want %s", n, keptAs(p, n), r)
		}
	}
	if a := forcedAction(t, p, "free", api.ReasonDrifted); a.TerminationGracePeriodSeconds != 0 {
		t.Errorf("free: grace %ds without the pool's terminationGracePeriod", a.TerminationGracePeriodSeconds)
	}
	if len(p.Actions) != 1 {
		t.Errorf("actions %+v", p.Actions)
	}

	p = build(" terminationGracePeriod: 90m,").plan()
	for n, r := range map[string]api.KeepReason{"node-dnd": api.KeepDoNotDisrupt, "cordoned": api.KeepDisrupting} {
		if keptAs(p, n) != r {
			t.Errorf("with terminationGracePeriod: %s kept as %q, want %s", n, keptAs(p, n), r)
		}
	}
	for n, held := range map[string]string{"pod-dnd": "pod default/b is annotated not to be disrupted",
		"pdb": "PodDisruptionBudget default/guarded allows no disruption of pod default/c", "free": ""} {
		a := forcedAction(t, p, n, api.ReasonDrifted)
		if a.TerminationGracePeriodSeconds != 5400 {
			t.Errorf("%s: grace %ds, want 5400", n, a.TerminationGracePeriodSeconds)
		}
		if held != "" && !strings.Contains(a.Message, held+": its drain waits for them at most pool general's terminationGracePeriod (1h30m0s)") {
			t.Errorf("%s: message %q does not name what holds it (%s)", n, a.Message, held)
		}
		if len(a.Moves) != 1 || a.Moves[0].To != "room" {
			t.Errorf("%s: moves %+v, want its pod to room", n, a.Moves)
		}
	}
	if len(p.Actions) != 3 {
		t.Errorf("with terminationGracePeriod: actions %+v", p.Actions)
	}
}

// TestLifecycleReservationEnding: the nodes on a capacity block are left alone until its
// drainBefore, then replaced (ReservationEnding, deadline the block's end) under no budget — even
// a budget of 0 for everything — onto capacity off the block; a PodDisruptionBudget that allows
// nothing and do-not-disrupt still hold; a node on a reservation without an end is not touched.
func TestLifecycleReservationEnding(t *testing.T) {
	end := dNow.Add(90 * time.Minute)
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `  disruption: {consolidation: never, budgets: [{nodes: "100%"}]}
- name: gpu`, `  disruption: {consolidation: never, budgets: [{nodes: "0"}]}
  reservations:
  - {id: cr-0block, instanceType: m7i.xlarge, zone: us-east-1a, count: 4, pricePerHour: 0,
     endsAt: "`+end.Format(time.RFC3339)+`", drainBefore: 1h}
  - {id: cr-0odcr, instanceType: m7i.xlarge, zone: us-east-1a, count: 1, pricePerHour: 0}
- name: gpu`, 1)
	if f.pol == lifecyclePolicy {
		t.Fatal("the policy has no general pool to give reservations")
	}
	for _, n := range []string{"b1", "b2", "b-pdb", "b-dnd"} {
		f.node(n, "general", "m7i.xlarge", api.OnDemand).Labels[api.LabelCapacityReservation] = "cr-0block"
	}
	f.node("odcr", "general", "m7i.xlarge", api.OnDemand).Labels[api.LabelCapacityReservation] = "cr-0odcr"
	annotate(f.snap.Nodes[3], api.AnnotationDoNotDisrupt, "true")
	for _, n := range []string{"b1", "b2", "odcr"} {
		f.pod("p-"+n, n).CPU("2").Mem("4Gi")
	}
	f.pod("p-pdb", "b-pdb").CPU("2").Mem("4Gi").Label("app", "guarded")
	b := &policyv1.PodDisruptionBudget{}
	b.Name, b.Namespace = "guarded", "default"
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}
	f.snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{b}

	// 31 minutes before the drain: nothing is due.
	f.opts.Now = end.Add(-time.Hour - time.Minute)
	if p := f.plan(); len(p.Actions) != 0 || dueOf(p, "b1") != "" {
		t.Fatalf("before the drain: actions %+v, b1 due %q", p.Actions, dueOf(p, "b1"))
	}
	f.opts.Now = end.Add(-time.Hour)
	p := f.plan()
	for _, n := range []string{"b1", "b2"} {
		a := forcedAction(t, p, n, api.ReasonReservationEnding)
		if a.Deadline == nil || !a.Deadline.Equal(end) || !strings.Contains(a.Message, "capacity reservation cr-0block ends at") {
			t.Errorf("%s's action: deadline %v, message %q", n, a.Deadline, a.Message)
		}
		if a.Replacement != nil && a.Replacement.CapacityReservation == "cr-0block" {
			t.Errorf("%s replaced onto the ending reservation: %+v", n, a.Replacement)
		}
	}
	wantKept(t, p, api.KeepPDB, api.ReasonReservationEnding, "capacity reservation cr-0block ends", "b-pdb")
	wantKept(t, p, api.KeepDoNotDisrupt, api.ReasonReservationEnding, "capacity reservation cr-0block ends", "b-dnd")
	if actionOf(p, "odcr") != nil || dueOf(p, "odcr") != "" {
		t.Errorf("the node on the reservation without an end: action %+v, due %q", actionOf(p, "odcr"), dueOf(p, "odcr"))
	}
	// Where the pods go, the nodes still on the block take none.
	for _, a := range p.Actions {
		for _, m := range a.Moves {
			if strings.HasPrefix(m.To, "b") {
				t.Errorf("pod %s moved onto %s, a node of the ending block", m.Pod, m.To)
			}
		}
	}
}

// gpuNode adds a GPU node of the gpu pool whose capacity is its own copy of allocatable, so that
// a test can take GPUs out of allocatable alone.
func (f *fleet) gpuNode(name string) *corev1.Node {
	n := f.node(name, "gpu", "g6.xlarge", api.OnDemand)
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return n
}

// TestLifecycleRepair: a node with the repair condition (AcceleratedHardwareReady=False) is
// repaired at once, even annotated do-not-disrupt; GPUs missing from allocatable are repaired
// once tiler.dev/unhealthy-since is older than the grace period, and listed as not yet due
// before; the pods of a repaired node move, to a replacement when the rest of the cluster has no
// GPU free. The actions carry no terminationGracePeriod unless the pool sets one; with one, they
// carry it and name the do-not-disrupt pod and the PodDisruptionBudget their drain waits for.
func TestLifecycleRepair(t *testing.T) {
	f := repairFleet(t, "")
	p := f.plan()
	a := forcedAction(t, p, "xid", api.ReasonUnhealthy)
	if !strings.Contains(a.Message, "AcceleratedHardwareReady=False") {
		t.Errorf("xid's message %q", a.Message)
	}
	forcedAction(t, p, "lost", api.ReasonUnhealthy)
	// One pod takes the spare GPU, the other a replacement.
	dests := map[string]bool{destination(p, "train"): true, destination(p, "infer"): true}
	var repl *api.NewNode
	for _, a := range p.Actions {
		if a.Replacement != nil {
			repl = a.Replacement
		}
		if a.TerminationGracePeriodSeconds != 0 {
			t.Errorf("%v: grace %ds without the pool's terminationGracePeriod", a.Nodes, a.TerminationGracePeriodSeconds)
		}
	}
	if !dests["spare"] || repl == nil || !dests[repl.Name] || repl.Pool != "gpu" {
		t.Errorf("destinations %v, replacement %+v", dests, repl)
	}
	for _, n := range []string{"flaky", "fresh"} {
		if actionOf(p, n) != nil {
			t.Errorf("%s repaired in its grace period", n)
		}
	}
	due := map[string]bool{}
	for _, u := range p.Unhealthy {
		due[u.Name] = u.Due
	}
	if len(due) != 4 || !due["xid"] || !due["lost"] || due["flaky"] || due["fresh"] {
		t.Errorf("unhealthy %+v", p.Unhealthy)
	}

	p = repairFleet(t, ", terminationGracePeriod: 20m").plan()
	for n, held := range map[string]string{"xid": "pod default/train is annotated not to be disrupted",
		"lost": "PodDisruptionBudget default/serving allows no disruption of pod default/infer"} {
		a := forcedAction(t, p, n, api.ReasonUnhealthy)
		if a.TerminationGracePeriodSeconds != 1200 {
			t.Errorf("with terminationGracePeriod: %s: grace %ds, want 1200", n, a.TerminationGracePeriodSeconds)
		}
		if !strings.Contains(a.Message, held+": its drain waits for them at most pool gpu's terminationGracePeriod (20m0s)") {
			t.Errorf("with terminationGracePeriod: %s: message %q does not name what holds it (%s)", n, a.Message, held)
		}
	}
}

// repairFleet is TestLifecycleRepair's fleet, its pools' disruption settings extended by more: a
// node with the repair condition (annotated do-not-disrupt, its pod too), one whose GPUs went
// missing 20 minutes ago (its pod under a PodDisruptionBudget that allows no disruption), two in
// their grace period and a spare.
func repairFleet(t *testing.T, more string) *fleet {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`+"\n", `budgets: [{nodes: "100%"}], repair: {budget: "100%", maxUnhealthy: "100%"}`+more+"}\n", 2)
	f.opts.IgnoreCandidateWait = false
	xid := f.gpuNode("xid")
	xid.Status.Conditions = append(xid.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
		Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	annotate(xid, api.AnnotationDoNotDisrupt, "true")
	lost := f.gpuNode("lost")
	lost.Status.Allocatable[api.ResourceGPU] = resource.MustParse("0")
	annotate(lost, api.AnnotationUnhealthySince, dNow.Add(-20*time.Minute).Format(time.RFC3339))
	flaky := f.gpuNode("flaky")
	flaky.Status.Allocatable[api.ResourceGPU] = resource.MustParse("0")
	annotate(flaky, api.AnnotationUnhealthySince, dNow.Add(-2*time.Minute).Format(time.RFC3339))
	fresh := f.gpuNode("fresh")
	fresh.Status.Allocatable[api.ResourceGPU] = resource.MustParse("0")
	f.gpuNode("spare")
	f.pod("train", "xid").CPU("1").Mem("4Gi").GPU(1).Annotate(api.AnnotationDoNotDisrupt, "true")
	f.pod("infer", "lost").CPU("1").Mem("4Gi").GPU(1).Label("app", "serving")
	b := &policyv1.PodDisruptionBudget{}
	b.Name, b.Namespace = "serving", "default"
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serving"}}
	f.snap.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{b}
	return f
}

// TestLifecycleRepairBudget: the repair budget bounds the repairs of a pool, counting the nodes
// already under repair; consolidation budgets do not apply to repair.
func TestLifecycleRepairBudget(t *testing.T) {
	build := func() *fleet {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `disruption: {consolidation: never, budgets: [{nodes: "100%"}]}`+"\n",
			`disruption: {consolidation: never, budgets: [{nodes: "0"}], repair: {budget: "1", maxUnhealthy: "2"}}`+"\n", 2)
		for _, name := range []string{"bad-1", "bad-2"} {
			n := f.gpuNode(name)
			n.Status.Conditions = []corev1.NodeCondition{{Type: policy.ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse}}
		}
		f.gpuNode("spare-1")
		f.gpuNode("spare-2")
		return f
	}
	p := build().plan()
	if len(p.Actions) != 1 || p.Actions[0].Reason != api.ReasonUnhealthy || keptAs(p, "bad-2") != api.KeepBudget {
		t.Fatalf("actions %+v, kept %+v", p.Actions, p.Kept)
	}
	for _, k := range p.Kept {
		if k.Name == "bad-2" && !strings.Contains(k.Message, "repair budget") {
			t.Errorf("bad-2: %q", k.Message)
		}
	}
	// bad-1 under repair already (listed as disrupting): bad-2 waits.
	f := build()
	f.opts.Disrupting = []string{"bad-1"}
	if p := f.plan(); len(p.Actions) != 0 || keptAs(p, "bad-2") != api.KeepBudget {
		t.Errorf("one under repair: actions %+v, kept %+v", p.Actions, p.Kept)
	}
}

// TestLifecycleRepairHeldWhenWide: when more of a pool's nodes show a health signal than its
// repair.maxUnhealthy allows (default 20 %, rounded up), none is repaired: a fault that wide is
// not the nodes'. Nodes still in their grace period count; other pools are judged apart.
func TestLifecycleRepairHeldWhenWide(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`+"\n", `budgets: [{nodes: "100%"}], repair: {budget: "100%"}}`+"\n", 2)
	broken := func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady,
			Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "GPU has fallen off the bus"})
	}
	for _, name := range []string{"gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6"} {
		f.gpuNode(name)
	}
	broken(f.snap.Nodes[0])
	p := f.plan()
	forcedAction(t, p, "gpu-1", api.ReasonUnhealthy) // 1 of 6 ≤ ⌈20 % × 6⌉ = 2
	broken(f.snap.Nodes[1])
	p = f.plan()
	forcedAction(t, p, "gpu-1", api.ReasonUnhealthy) // 2 of 6
	forcedAction(t, p, "gpu-2", api.ReasonUnhealthy)
	// A third, still in its grace period (GPUs missing for a minute), counts: none is repaired.
	lost := f.snap.Nodes[2]
	lost.Status.Allocatable = lost.Status.Allocatable.DeepCopy()
	lost.Status.Allocatable[api.ResourceGPU] = resource.MustParse("0")
	annotate(lost, api.AnnotationUnhealthySince, dNow.Add(-time.Minute).Format(time.RFC3339))
	f.opts.IgnoreCandidateWait = false
	p = f.plan()
	wantKept(t, p, api.KeepTooManyUnhealthy, api.ReasonUnhealthy, "3 of pool gpu's 6 nodes show a health signal, more than its repair.maxUnhealthy (20%: 2)", "gpu-1", "gpu-2")
	// A CPU pool's broken node is judged on its own pool.
	cpu := f.node("cpu-1", "general", "m7i.xlarge", api.OnDemand)
	cpu.Status.Conditions = append(cpu.Status.Conditions, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionTrue})
	f.pol = strings.Replace(f.pol, `repair: {budget: "100%"}}`, `repair: {budget: "100%", conditions: [{type: KernelDeadlock, status: "True"}]}}`, 1)
	p = f.plan()
	forcedAction(t, p, "cpu-1", api.ReasonUnhealthy)
	// maxUnhealthy "100%" turns the check off.
	f.pol = strings.Replace(f.pol, `repair: {budget: "100%"}}`, `repair: {budget: "100%", maxUnhealthy: "100%"}}`, 1)
	p = f.plan()
	forcedAction(t, p, "gpu-1", api.ReasonUnhealthy)
	forcedAction(t, p, "gpu-2", api.ReasonUnhealthy)
}

// TestLifecycleInterrupted: an interrupted node gets the first action, with the deadline, whatever
// the budgets and do-not-disrupt say; its pods that fit nowhere get a replacement, and a pod no
// controller recreates is left behind (named, not moved).
func TestLifecycleInterrupted(t *testing.T) {
	f := newLifecycleFleet(t)
	f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`, `budgets: [{nodes: "0"}], expireAfter: 1h}`, 1)
	deadline := dNow.Add(2 * time.Minute)
	spot := f.node("spot", "general", "m7i.xlarge", api.Spot)
	annotate(spot, api.AnnotationDoNotDisrupt, "true")
	f.node("old", "general", "m7i.large", api.OnDemand)
	f.opts.Interrupted = map[string]time.Time{"spot": deadline}
	f.pod("w", "spot").CPU("3").Mem("4Gi").Annotate(api.AnnotationDoNotDisrupt, "true")
	f.snap.Pods = append(f.snap.Pods, simtest.Pod("bare").CPU("100m").On("spot").Obj())
	p := f.plan()
	if len(p.Actions) != 1 {
		t.Fatalf("actions %+v", p.Actions)
	}
	a := forcedAction(t, p, "spot", api.ReasonInterrupted)
	if a.Kind != api.ActionReplace || destination(p, "w") != a.Replacement.Name || a.Deadline == nil || !a.Deadline.Equal(deadline) {
		t.Errorf("spot: %+v", a)
	}
	if strings.Join(a.LeftBehind, ",") != "default/bare" || destination(p, "bare") != "" || !strings.Contains(a.Message, "(in 2m0s)") {
		t.Errorf("left behind %v, bare to %q, message %q", a.LeftBehind, destination(p, "bare"), a.Message)
	}
	if keptAs(p, "old") != api.KeepBudget {
		t.Errorf("old (expired, budget 0) kept as %q", keptAs(p, "old"))
	}
}

// TestLifecycleOrder: forced actions come before consolidation and in urgency order —
// interrupted, unhealthy, expired, drifted — and a node that must go takes no moved pods.
func TestLifecycleOrder(t *testing.T) {
	f := newFleet(t)
	f.pol = strings.Replace(f.pol, `disruption: {budgets: [{nodes: "100%"}]}`, `disruption: {expireAfter: 20h, budgets: [{nodes: "100%"}]}`, 1)
	young := func(n *corev1.Node) *corev1.Node {
		n.CreationTimestamp = metav1.NewTime(dNow.Add(-time.Hour))
		return n
	}
	annotate(young(f.node("drifted", "general", "m7i.xlarge", api.OnDemand)), api.AnnotationPoolHash, "v1-stale")
	f.node("expired", "general", "m7i.xlarge", api.OnDemand)
	sick := young(f.node("sick", "general", "m7i.xlarge", api.OnDemand))
	sick.Status.Conditions = []corev1.NodeCondition{{Type: policy.ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse}}
	young(f.node("reclaimed", "general", "m7i.xlarge", api.Spot))
	young(f.node("room", "general", "m7i.8xlarge", api.OnDemand))
	f.opts.Interrupted = map[string]time.Time{"reclaimed": dNow.Add(time.Minute)}
	for _, n := range []string{"drifted", "expired", "sick", "reclaimed", "room"} {
		f.pod("p-"+n, n).CPU("500m").Mem("1Gi")
	}
	p := f.plan()
	var order []string
	for _, a := range p.Actions {
		order = append(order, string(a.Reason)+":"+strings.Join(a.Nodes, ","))
	}
	// Consolidation may follow (room, once the others are gone, is oversized).
	if got := strings.Join(order, " "); !strings.HasPrefix(got+" ", "Interrupted:reclaimed Unhealthy:sick Expired:expired Drifted:drifted ") {
		t.Errorf("order %s", got)
	}
	for _, n := range []string{"drifted", "expired", "sick", "reclaimed"} {
		if to := destination(p, "p-"+n); to != "room" {
			t.Errorf("p-%s to %q, want room", n, to)
		}
	}
}

// TestLifecycleRandomFleets: on the shrunk random fleets (GPU, MIG, DRA, gangs, spread), half the
// nodes are given a reason to go — an interruption notice, the repair condition, a stale pool
// hash, in turn. Every plan is carried out with the independent checker and bound
// (simtest.ApplyDisruption); every marked node gets an action of its reason or is kept with one;
// with tight budgets (one drift and one repair per pool), no pool has more.
func TestLifecycleRandomFleets(t *testing.T) {
	cat := newFleet(t).cat
	reasons := []api.DisruptionReason{api.ReasonInterrupted, api.ReasonUnhealthy, api.ReasonDrifted}
	total := map[api.DisruptionReason]int{}
	kept := map[api.KeepReason]int{}
	for seed := uint64(1); seed <= 8; seed++ {
		for _, tight := range []bool{false, true} {
			f := buildShrunkFleet(t, cat, seed)
			for i := range f.pol.Pools {
				d := f.pol.Pools[i].Disruption
				d.Repair = &policy.Repair{Budget: "100%"}
				if tight {
					d.Repair.Budget = "1"
					d.Budgets = []policy.DisruptionBudget{{Nodes: "1", Reasons: []api.DisruptionReason{api.ReasonDrifted}}, {Nodes: "100%"}}
				}
			}
			opts := simulator.DisruptionOptions{Now: dNow, Seed: "lifecycle", IgnoreCandidateWait: true, Interrupted: map[string]time.Time{}}
			want := map[string]api.DisruptionReason{}
			for i, n := range f.snap.Nodes {
				if i%2 == 1 || n.Labels[api.LabelPool] == "" {
					continue
				}
				r := reasons[(i/2)%len(reasons)]
				want[n.Name] = r
				switch r {
				case api.ReasonInterrupted:
					opts.Interrupted[n.Name] = dNow.Add(2 * time.Minute)
				case api.ReasonUnhealthy:
					n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: policy.ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse})
				case api.ReasonDrifted:
					annotate(n, api.AnnotationPoolHash, "v1-stale")
				}
			}
			plan, err := simulator.PlanDisruption(simulator.DisruptionInput{Snapshot: f.snap, Catalog: cat, Policy: f.pol, Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			if _, violations, err := simtest.ApplyDisruption(f.snap, plan, cat, dOld); err != nil || len(violations) > 0 {
				t.Errorf("seed %d tight %v: %v %v", seed, tight, err, violations)
			}
			perPool := map[string]map[api.DisruptionReason]int{}
			for _, a := range plan.Actions {
				for _, n := range a.Nodes {
					if want[n] != "" && a.Reason != want[n] {
						t.Errorf("seed %d: node %s goes for %s, marked %s", seed, n, a.Reason, want[n])
					}
					if want[n] == "" && a.Reason.Forced() {
						t.Errorf("seed %d: unmarked node %s goes for %s", seed, n, a.Reason)
					}
					delete(want, n)
				}
				if perPool[a.Pool] == nil {
					perPool[a.Pool] = map[api.DisruptionReason]int{}
				}
				perPool[a.Pool][a.Reason] += len(a.Nodes)
				total[a.Reason] += len(a.Nodes)
			}
			for _, k := range plan.Kept {
				if r := want[k.Name]; r != "" {
					kept[k.Reason]++
					if r == api.ReasonInterrupted && k.Reason != api.KeepNoReplacement && k.Reason != api.KeepUnplaceablePod {
						t.Errorf("seed %d: interrupted node %s kept as %s: %s", seed, k.Name, k.Reason, k.Message)
					}
					delete(want, k.Name)
				}
			}
			if len(want) > 0 {
				t.Errorf("seed %d: marked nodes neither removed nor kept: %v", seed, want)
			}
			for pool, c := range perPool {
				if tight && (c[api.ReasonDrifted] > 1 || c[api.ReasonUnhealthy] > 1) {
					t.Errorf("seed %d: pool %s drifts %d and repairs %d nodes at once", seed, pool, c[api.ReasonDrifted], c[api.ReasonUnhealthy])
				}
			}
		}
	}
	t.Logf("nodes removed by reason %v; marked nodes kept by reason %v", total, kept)
	if total[api.ReasonInterrupted] == 0 || total[api.ReasonUnhealthy] == 0 || total[api.ReasonDrifted] == 0 {
		t.Errorf("some reason never acted: %v", total)
	}
}

// TestLifecycleGangs: a gang moves whole or not at all. A drifted node running one member of a
// gang whose other member runs on a node that stays is kept (Gang); an unhealthy one goes anyway,
// leaving its member behind (the gang's controller restarts it), and the healthy member's node
// stays.
func TestLifecycleGangs(t *testing.T) {
	for _, reason := range []api.DisruptionReason{api.ReasonDrifted, api.ReasonUnhealthy} {
		f := newLifecycleFleet(t)
		f.pol = strings.Replace(f.pol, `budgets: [{nodes: "100%"}]}`+"\n", `budgets: [{nodes: "100%"}], repair: {budget: "100%"}}`+"\n", 2)
		bad := f.gpuNode("g1")
		f.gpuNode("g2")
		f.gpuNode("spare")
		if reason == api.ReasonDrifted {
			annotate(bad, api.AnnotationPoolHash, "v1-stale")
		} else {
			bad.Status.Conditions = []corev1.NodeCondition{{Type: policy.ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse}}
		}
		f.pod("m0", "g1").CPU("1").Mem("2Gi").GPU(1).Gang("train", 2, "").Label("app", "train")
		f.pod("m1", "g2").CPU("1").Mem("2Gi").GPU(1).Gang("train", 2, "").Label("app", "train")
		p := f.plan()
		switch reason {
		case api.ReasonDrifted:
			if actionOf(p, "g1") != nil || keptAs(p, "g1") != api.KeepGang {
				t.Errorf("drifted g1: action %+v, kept as %q", actionOf(p, "g1"), keptAs(p, "g1"))
			}
		default:
			a := forcedAction(t, p, "g1", api.ReasonUnhealthy)
			if strings.Join(a.LeftBehind, ",") != "default/m0" || len(a.Moves) != 0 || actionOf(p, "g2") != nil {
				t.Errorf("unhealthy g1: %+v; g2: %+v", a, actionOf(p, "g2"))
			}
		}
	}
}
