package provisioner

import (
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nominationFixture is a plan over five launches and the Nodes that exist:
//
//	n-boot     accepted by the cloud (instance ID), Node not registered    ns/a, ns/b
//	n-wait     launch call not answered yet, Node not registered           ns/c
//	n-reg      no instance ID recorded, Node registered but not Ready      ns/f
//	n-fresh    usable for 5 s (inside the grace)                           ns/d
//	n-old      usable for 1 min (past the grace)                           ns/e
//
// and existing-1, a Node Tiler did not buy.
func nominationFixture() nominationView {
	recs := []LaunchRecord{
		{LaunchID: "1", NodeName: "n-boot", InstanceID: "i-1", Pods: []string{"ns/a", "ns/b"}},
		{LaunchID: "2", NodeName: "n-wait", Pods: []string{"ns/c"}},
		{LaunchID: "3", NodeName: "n-reg", Pods: []string{"ns/f"}},
		{LaunchID: "4", NodeName: "n-fresh", InstanceID: "i-4", Pods: []string{"ns/d"}},
		{LaunchID: "5", NodeName: "n-old", InstanceID: "i-5", Pods: []string{"ns/e"}},
	}
	nodes := map[string]*corev1.Node{"n-reg": {ObjectMeta: metav1.ObjectMeta{Name: "n-reg"}}}
	for _, name := range []string{"n-fresh", "n-old", "existing-1"} {
		nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	usableFor := map[string]time.Duration{"n-fresh": 5 * time.Second, "n-old": time.Minute}
	return nominationView{
		plan: newNominationPlan(recs),
		node: func(name string) *corev1.Node { return nodes[name] },
		observe: func(n *corev1.Node, r LaunchRecord) (nodePhase, time.Duration) {
			if n == nil {
				return phaseLaunched, 0
			}
			return phaseOf(n, r, false), usableFor[n.Name]
		},
	}
}

// nominated returns a pending pod ns/name with nominatedNodeName nnn and, when by is set, Tiler's
// annotations naming the node recorded.
func nominated(name, nnn string, by bool, recorded string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{}}}
	p.Status.NominatedNodeName = nnn
	if by {
		p.Annotations[api.AnnotationNominatedBy] = nominatedByTiler
		if recorded != "" {
			p.Annotations[api.AnnotationNominatedNode] = recorded
		}
	}
	return p
}

func TestDecideNomination(t *testing.T) {
	bound := nominated("a", "", false, "")
	bound.Spec.NodeName = "n-boot"
	cases := []struct {
		name string
		pod  *corev1.Pod
		want nominationChange
	}{
		{"accepted launch: nominated before its Node registers", nominated("a", "", false, ""),
			nominationChange{op: NominationSet, node: "n-boot"}},
		{"launch not accepted yet: wait", nominated("c", "", false, ""), nominationChange{}},
		{"registered Node without instance ID: nominated", nominated("f", "", false, ""),
			nominationChange{op: NominationSet, node: "n-reg"}},
		{"already nominated for its node", nominated("a", "n-boot", true, "n-boot"), nominationChange{}},
		{"cleared by the scheduler while the node boots: set again (after the retry delay)", nominated("b", "", true, "n-boot"),
			nominationChange{op: NominationSet, node: "n-boot", again: true}},
		{"cleared 5 s after the node became usable (grace 15 s): set again", nominated("d", "", true, "n-fresh"),
			nominationChange{op: NominationSet, node: "n-fresh", again: true}},
		{"cleared 1 min after the node became usable: left to the scheduler", nominated("e", "", true, "n-old"),
			nominationChange{}},
		{"ours, node usable past the grace: kept", nominated("e", "n-old", true, "n-old"), nominationChange{}},
		{"the scheduler's preemption nomination: never overwritten", nominated("a", "existing-1", false, ""),
			nominationChange{}},
		{"tagged, then nominated elsewhere by the scheduler: annotations dropped", nominated("a", "existing-1", true, "n-boot"),
			nominationChange{op: NominationRelease}},
		{"tagged, the scheduler nominated another bought node: annotations dropped", nominated("a", "n-fresh", true, "n-boot"),
			nominationChange{op: NominationRelease}},
		{"ours for a launch that is gone, pod planned again: moved", nominated("a", "n-gone", true, "n-gone"),
			nominationChange{op: NominationSet, node: "n-boot"}},
		{"ours for a launch that is gone, pod not planned: cleared", nominated("z", "n-gone", true, "n-gone"),
			nominationChange{op: NominationClear}},
		{"ours (older Tiler, no node annotation) for a launch that is gone: cleared", nominated("z", "n-gone", true, ""),
			nominationChange{op: NominationClear}},
		{"not planned, not nominated", nominated("z", "", false, ""), nominationChange{}},
		{"bound pod", bound, nominationChange{}},
	}
	v := nominationFixture()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := v.decide(tc.pod)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(nominationChange{})); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPhaseOf(t *testing.T) {
	readyNode := func(taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}, Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}
	}
	notReady := readyNode()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	noGPUs := readyNode()
	noGPUs.Status.Allocatable = nil
	gpusLost := readyNode()
	gpusLost.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	gpusLost.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}
	gpu := LaunchRecord{GPUs: 2}
	cases := []struct {
		name   string
		node   *corev1.Node
		rec    LaunchRecord
		sliced bool
		want   nodePhase
	}{
		{"no Node yet", nil, gpu, false, phaseLaunched},
		{"not Ready", notReady, gpu, false, phaseRegistered},
		{"Ready, still tainted not-ready", readyNode(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}), gpu, false, phaseRegistered},
		{"Ready, GPUs not advertised yet", noGPUs, gpu, false, phaseReady},
		{"Ready with its GPUs", readyNode(), gpu, false, phaseUsable},
		{"Ready, GPUs in DRA ResourceSlices, its pool's consumable memory publishes them there alone", noGPUs,
			LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.Exclusive, ConsumableMemory: true}}, true, phaseUsable},
		{"Ready, GPUs in DRA ResourceSlices, under dynamic MIG", noGPUs, LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.DynamicMIG}}, true, phaseUsable},
		{"Ready, whole GPUs of the DRA driver in ResourceSlices", noGPUs,
			LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.Exclusive, DRA: true}}, true, phaseUsable},
		{"Ready, whole GPUs of the DRA driver not published yet", noGPUs,
			LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.Exclusive, DRA: true}}, false, phaseReady},
		{"Ready, dynamic MIG slices not published yet", readyNode(), LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.DynamicMIG}}, false, phaseReady},
		// The DRA driver published before the device plugin did: the plan counted device-plugin
		// GPUs, which the node does not show yet.
		{"Ready, GPUs in DRA ResourceSlices only, device plugin still to come", noGPUs, gpu, true, phaseReady},
		{"Ready, GPUs failed: in capacity, not in allocatable", gpusLost, gpu, true, phaseUsable},
		{"Ready, time-sliced GPUs in DRA ResourceSlices only", noGPUs, LaunchRecord{GPUs: 2, GPU: &api.GPUConfig{Sharing: api.TimeSlicing, Replicas: 6}}, true, phaseReady},
		{"Ready CPU node", noGPUs, LaunchRecord{}, false, phaseUsable},
	}
	for _, tc := range cases {
		if got := phaseOf(tc.node, tc.rec, tc.sliced); got != tc.want {
			t.Errorf("%s: phase = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNominationRetryAt(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		clears int
		want   time.Duration
	}{
		{1, 250 * time.Millisecond}, // nominationRetryMin
		{2, 500 * time.Millisecond},
		{3, time.Second},
		{6, 8 * time.Second},
		{7, 10 * time.Second}, // 16 s, capped at nominationRetryMax
		{40, 10 * time.Second},
	} {
		if got := (nominationLoss{count: tc.clears, at: at}).retryAt().Sub(at); got != tc.want {
			t.Errorf("%d clears: retry after %s, want %s", tc.clears, got, tc.want)
		}
	}
	if !(nominationLoss{}).retryAt().IsZero() {
		t.Error("no clear: want no wait")
	}
}

func TestNominationPatch(t *testing.T) {
	p := nominated("a", "", true, "n-boot")
	p.ResourceVersion = "42"
	cases := []struct {
		ch   nominationChange
		want string
	}{
		{nominationChange{op: NominationSet, node: "n-boot"},
			`{"metadata":{"annotations":{"tiler.dev/nominated-by":"tiler","tiler.dev/nominated-node":"n-boot"},"resourceVersion":"42"},"status":{"nominatedNodeName":"n-boot"}}`},
		{nominationChange{op: NominationClear},
			`{"metadata":{"annotations":{"tiler.dev/nominated-by":null,"tiler.dev/nominated-node":null},"resourceVersion":"42"},"status":{"nominatedNodeName":null}}`},
		{nominationChange{op: NominationRelease},
			`{"metadata":{"annotations":{"tiler.dev/nominated-by":null,"tiler.dev/nominated-node":null},"resourceVersion":"42"}}`},
	}
	for _, tc := range cases {
		got, err := nominationPatch(p, tc.ch)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: patch\n got %s\nwant %s", tc.ch.op, got, tc.want)
		}
	}
	if _, err := nominationPatch(p, nominationChange{}); err == nil {
		t.Error("keep: want an error, there is nothing to write")
	}
}

func TestChangedPods(t *testing.T) {
	before := newNominationPlan([]LaunchRecord{
		{NodeName: "n1", Pods: []string{"ns/a", "ns/b"}},
		{NodeName: "n2", InstanceID: "i-2", Pods: []string{"ns/c"}},
		{NodeName: "n3", InstanceID: "i-3", Pods: []string{"ns/d"}},
	})
	after := newNominationPlan([]LaunchRecord{
		{NodeName: "n1", InstanceID: "i-1", Pods: []string{"ns/a", "ns/b"}}, // the cloud accepted n1
		{NodeName: "n2", InstanceID: "i-2", Pods: []string{"ns/c"}},         // unchanged
		{NodeName: "n4", Pods: []string{"ns/e"}},                            // n3 failed; n4 planned
	})
	want := map[string]bool{"ns/a": true, "ns/b": true, "ns/d": true, "ns/e": true}
	if diff := cmp.Diff(want, changedPods(before, after)); diff != "" {
		t.Errorf("changedPods (-want +got):\n%s", diff)
	}
}

// TestNominationSpreadPairs: pods planned onto one node that a hard topology spread constraint of
// another pod there counts (equal or higher priority) are not nominated — the scheduler would count
// them on that node only and refuse the other pod — while pods the constraint does not count, or
// counts from another node, are.
func TestNominationSpreadPairs(t *testing.T) {
	spread := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a1"}}}
	pod := func(name, app string, prio int32, spreads bool) *corev1.Pod {
		p := nominated(name, "", false, "")
		p.Labels = map[string]string{"app": app}
		p.Spec.Priority = &prio
		if spreads {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread}
		}
		return p
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []*corev1.Pod{
		pod("pair-0", "a1", 100, true), pod("pair-1", "a1", 100, true), // one node: block each other
		pod("alone", "a1", 100, true),                         // its node holds no other a1 pod
		pod("hi", "a1", 100, true), pod("lo", "a1", 0, false), // lo is not counted for hi (lower priority)
		pod("soft", "a1", 0, false), pod("other", "web", 0, false), // no constraint on that node counts them
	} {
		pods["ns/"+p.Name] = p
	}
	recs := []LaunchRecord{
		{LaunchID: "1", NodeName: "n-pair", InstanceID: "i-1", Pods: []string{"ns/pair-0", "ns/pair-1"}},
		{LaunchID: "2", NodeName: "n-alone", InstanceID: "i-2", Pods: []string{"ns/alone"}},
		{LaunchID: "3", NodeName: "n-prio", InstanceID: "i-3", Pods: []string{"ns/hi", "ns/lo"}},
		{LaunchID: "4", NodeName: "n-plain", InstanceID: "i-4", Pods: []string{"ns/soft", "ns/other"}},
	}
	v := nominationView{plan: newNominationPlan(recs), node: func(string) *corev1.Node { return nil },
		observe: func(*corev1.Node, LaunchRecord) (nodePhase, time.Duration) { return phaseLaunched, 0 },
		pod:     func(key string) *corev1.Pod { return pods[key] }}
	want := map[string]string{"pair-0": "", "pair-1": "", "alone": "n-alone", "hi": "n-prio", "lo": "n-prio",
		"soft": "n-plain", "other": "n-plain"}
	for name, node := range want {
		if got := v.target("ns/" + name); got != node {
			t.Errorf("%s: nominated for %q, want %q", name, got, node)
		}
	}
}
