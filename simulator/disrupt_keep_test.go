package simulator_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// change edits the keep-reasons fleet: the fleet, its nodes a and b, and the pod on a.
type change func(f *fleet, a, b *corev1.Node, pa *corev1.Pod)

// setPolicy replaces the general pool's disruption line.
func setPolicy(line string) change {
	return func(f *fleet, _, _ *corev1.Node, _ *corev1.Pod) {
		f.pol = strings.Replace(f.pol, `disruption: {budgets: [{nodes: "100%"}]}`, line, 1)
	}
}

func annotateNode(k, v string) change {
	return func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) { a.Annotations = map[string]string{k: v} }
}

func annotatePod(kv ...string) change {
	return func(_ *fleet, _, _ *corev1.Node, p *corev1.Pod) {
		p.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// volume gives the pod a volume, and annotations.
func volume(v corev1.VolumeSource, kv ...string) change {
	return func(f *fleet, a, b *corev1.Node, p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: v}}
		annotatePod(kv...)(f, a, b, p)
	}
}

// pdb adds a PodDisruptionBudget selecting the pod on a, allowing that many disruptions.
func pdb(allowed int32) change {
	return func(f *fleet, _, _ *corev1.Node, _ *corev1.Pod) {
		b := &policyv1.PodDisruptionBudget{}
		b.Name, b.Namespace = "pa", "default"
		b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pa"}}
		b.Status.DisruptionsAllowed = allowed
		f.snap.PodDisruptionBudgets = append(f.snap.PodDisruptionBudgets, b)
	}
}

// since makes a a candidate for the duration, and honours the candidate wait.
func since(ago time.Duration) change {
	return func(f *fleet, a, _ *corev1.Node, _ *corev1.Pod) {
		f.opts.IgnoreCandidateWait = false
		a.Annotations = map[string]string{api.AnnotationCandidateSince: dNow.Add(-ago).Format(time.RFC3339)}
	}
}

var emptyDir = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}

// keepCases each add one thing to the fleet and expect node a's reason ("" when a goes).
var keepCases = []struct {
	name   string
	change change
	want   api.KeepReason
}{
	{"nothing keeps it", func(*fleet, *corev1.Node, *corev1.Node, *corev1.Pod) {}, ""},
	{"node do-not-disrupt", annotateNode(api.AnnotationDoNotDisrupt, "true"), api.KeepDoNotDisrupt},
	{"node karpenter do-not-disrupt", annotateNode(api.AnnotationKarpenterDoNotDisrupt, "true"), api.KeepDoNotDisrupt},
	{"node CA scale-down-disabled", annotateNode(api.AnnotationScaleDownDisabled, "true"), api.KeepDoNotDisrupt},
	{"pod do-not-disrupt", annotatePod(api.AnnotationDoNotDisrupt, "true"), api.KeepPodDoNotDisrupt},
	{"pod karpenter do-not-disrupt", annotatePod(api.AnnotationKarpenterDoNotDisrupt, "true"), api.KeepPodDoNotDisrupt},
	{"pod CA safe-to-evict false", annotatePod(api.AnnotationSafeToEvict, "false"), api.KeepPodDoNotDisrupt},
	{"bare pod", func(_ *fleet, _, _ *corev1.Node, p *corev1.Pod) { p.OwnerReferences = nil }, api.KeepPodWithoutController},
	{"bare pod safe to evict", func(f *fleet, a, b *corev1.Node, p *corev1.Pod) {
		p.OwnerReferences = nil
		annotatePod(api.AnnotationSafeToEvict, "true")(f, a, b, p)
	}, ""},
	{"emptyDir", volume(emptyDir), api.KeepLocalStorage},
	{"emptyDir safe to evict", volume(emptyDir, api.AnnotationSafeToEvict, "true"), ""},
	{"emptyDir in memory", volume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}), ""},
	{"hostPath", volume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}), api.KeepLocalStorage},
	{"PDB allows none", pdb(0), api.KeepPDB},
	{"PDB allows one", pdb(1), ""},
	{"too young", func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) {
		a.CreationTimestamp = metav1.NewTime(dNow.Add(-time.Minute))
	}, api.KeepTooYoung},
	{"candidate for a minute of 2", since(time.Minute), api.KeepNotCandidateLongEnough},
	{"candidate for an hour", since(time.Hour), ""},
	{"budget 0", setPolicy(`disruption: {budgets: [{nodes: "0"}]}`), api.KeepBudget},
	{"budget 0 in an open window", setPolicy(`disruption: {budgets: [{nodes: "0", schedule: "0 19 * * *", duration: 2h}]}`), api.KeepBudget},
	{"budget 0 in a closed window", setPolicy(`disruption: {budgets: [{nodes: "0", schedule: "0 9 * * *", duration: 2h}]}`), ""},
	{"budget 0 for another reason", setPolicy(`disruption: {budgets: [{nodes: "0", reasons: [Empty]}]}`), ""},
	{"budget 1 taken by a disrupting node", func(f *fleet, a, b *corev1.Node, p *corev1.Pod) {
		setPolicy(`disruption: {budgets: [{nodes: "1"}]}`)(f, a, b, p)
		f.node("going", "general", "m7i.xlarge", api.OnDemand)
		f.opts.Disrupting = []string{"going"}
	}, api.KeepBudget},
	{"consolidation never", setPolicy(`disruption: {consolidation: never}`), api.KeepConsolidationDisabled},
	{"consolidation whenEmpty", setPolicy(`disruption: {consolidation: whenEmpty}`), api.KeepConsolidationDisabled},
	{"pool minNodes", setPolicy("minNodes: 2"), api.KeepMinNodes},
	{"kept by the caller", func(f *fleet, _, _ *corev1.Node, _ *corev1.Pod) {
		f.opts.Keep = map[string]string{"a": "forecast default/chat wants it"}
	}, api.KeepKept},
	{"already disrupting", func(f *fleet, _, _ *corev1.Node, _ *corev1.Pod) { f.opts.Disrupting = []string{"a"} }, api.KeepDisrupting},
	{"cordoned", func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) { a.Spec.Unschedulable = true }, api.KeepDisrupting},
	{"deleting", func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) {
		ts := metav1.NewTime(dOld)
		a.DeletionTimestamp = &ts
	}, api.KeepDisrupting},
	{"unmanaged", func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) { delete(a.Labels, api.LabelPool) }, api.KeepUnmanaged},
	{"unpriced", func(_ *fleet, a, _ *corev1.Node, _ *corev1.Pod) { delete(a.Labels, api.LabelCapacityType) }, api.KeepUnpriced},
	{"pods fit nowhere cheaper", func(_ *fleet, _, _ *corev1.Node, p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resourceQty("3500m")
	}, api.KeepNoCheaperFit},
	{"gang with a member on an unmanaged node", func(f *fleet, _, _ *corev1.Node, p *corev1.Pod) {
		p.Labels[api.LabelGang] = "g"
		f.snap.Nodes = append(f.snap.Nodes, f.snap.Nodes[0].DeepCopy())
		other := f.snap.Nodes[len(f.snap.Nodes)-1]
		other.Name = "unmanaged"
		delete(other.Labels, api.LabelPool)
		f.pod("member", "unmanaged").CPU("100m").Label(api.LabelGang, "g")
	}, api.KeepGang},
}

// TestDisruptKeepReasons: in a fleet of two half-empty nodes, node a goes into node b unless
// something keeps it; each case adds one such thing and expects a's reason.
func TestDisruptKeepReasons(t *testing.T) {
	for _, c := range keepCases {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(t)
			a := f.node("a", "general", "m7i.xlarge", api.OnDemand)
			b := f.node("b", "general", "m7i.xlarge", api.OnDemand)
			pa := f.pod("pa", "a").CPU("1").Mem("2Gi").Obj()
			f.pod("pb", "b").CPU("2").Mem("4Gi")
			c.change(f, a, b, pa)
			p := f.plan()
			got := keptAs(p, "a")
			if got != c.want {
				t.Fatalf("node a kept as %q, want %q", got, c.want)
			}
			if c.want == "" && destination(p, "pa") != "b" {
				t.Errorf("pod pa moves to %q, want b", destination(p, "pa"))
			}
			if c.want == api.KeepNotCandidateLongEnough && (len(p.Actions) != 0 || !slices.Contains(p.Candidates, "a")) {
				t.Errorf("a waits: actions %v, candidates %v", p.Actions, p.Candidates)
			}
		})
	}
}
