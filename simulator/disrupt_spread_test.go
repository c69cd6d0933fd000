package simulator_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// narrowSpreadPolicy has a CPU pool that buys in us-east-1b and 1c only and an on-demand GPU pool
// that buys in every zone: a GPU node in 1a is a zone-spread domain for pods with no node
// affinity (kube-scheduler counts tainted nodes, nodeTaintsPolicy Ignore) that they can never
// use.
const narrowSpreadPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceFamilies: [m7i]
  zones: [us-east-1b, us-east-1c]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
  disruption: {budgets: [{nodes: "100%"}]}
- name: gpu
  instanceFamilies: [g6]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {budgets: [{nodes: "100%"}]}
`

// TestDisruptionKeepsSpreadDomains: a replacement node must not open a zone-spread domain that
// the spread pods cannot use. Four web pods spread by zone (maxSkew 1, no node affinity) run two
// in 1b and two in 1c, the only zones their pool buys in. A GPU node in 1a would be a domain with
// none of them: each later web pod, and each of these rescheduled, would find every zone two
// above 1a's zero, and stay pending. The oversized GPU node in 1b is replaced by a cheaper one,
// at the same price in every zone, so the replacement goes to 1b or 1c.
func TestDisruptionKeepsSpreadDomains(t *testing.T) {
	setup := func(t *testing.T) *fleet {
		f := newFleet(t)
		f.pol = narrowSpreadPolicy
		for _, z := range []string{"b", "c"} {
			n := simtest.ManagedNode(f.cat, "web-"+z, "general", "m7i.large", "us-east-1"+z, api.OnDemand, dOld)
			f.snap.Nodes = append(f.snap.Nodes, n)
			for i := 0; i < 2; i++ {
				f.snap.Pods = append(f.snap.Pods, simtest.Pod("web-"+z+itoa(i)).Label("app", "web").Controlled("ReplicaSet", "web").
					CPU("500m").Mem("2Gi").Spread(corev1.LabelTopologyZone, 1, true).On(n.Name).Obj())
			}
		}
		return f
	}
	gpuNode := func(f *fleet, name, typ, zone string) {
		n := simtest.ManagedNode(f.cat, name, "gpu", api.InstanceTypeName(typ), zone, api.OnDemand, dOld)
		n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
		f.snap.Nodes = append(f.snap.Nodes, n)
	}
	replacementZone := func(t *testing.T, p *api.DisruptionPlan, node string) string {
		t.Helper()
		a := actionOf(p, node)
		if a == nil || a.Kind != api.ActionReplace || a.Replacement == nil {
			t.Fatalf("%s: want a replacement, got %+v (kept as %q)", node, a, keptAs(p, node))
		}
		return a.Replacement.Zone
	}
	t.Run("zone-agnostic pod", func(t *testing.T) {
		f := setup(t)
		gpuNode(f, "gpu-b", "g6.12xlarge", "us-east-1b")
		f.snap.Pods = append(f.snap.Pods, simtest.Pod("infer").Label("app", "infer").Controlled("ReplicaSet", "infer").
			CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").On("gpu-b").Obj())
		if z := replacementZone(t, f.plan(), "gpu-b"); z == "us-east-1a" {
			t.Errorf("gpu-b replaced in %s: a zone-spread domain the web pods cannot use", z)
		}
	})
	t.Run("spread pods on nodes that are no candidates", func(t *testing.T) {
		// The web nodes may not be disrupted: their pods do not move and are not pending, and
		// their spread counts all the same.
		f := setup(t)
		for _, n := range f.snap.Nodes {
			n.Annotations = map[string]string{api.AnnotationDoNotDisrupt: "true"}
		}
		gpuNode(f, "gpu-b", "g6.12xlarge", "us-east-1b")
		f.snap.Pods = append(f.snap.Pods, simtest.Pod("infer").Label("app", "infer").Controlled("ReplicaSet", "infer").
			CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").On("gpu-b").Obj())
		p := f.plan()
		if keptAs(p, "web-b") != api.KeepDoNotDisrupt {
			t.Fatalf("web-b kept as %q, want DoNotDisrupt", keptAs(p, "web-b"))
		}
		if z := replacementZone(t, p, "gpu-b"); z == "us-east-1a" {
			t.Errorf("gpu-b replaced in %s: a zone-spread domain the web pods cannot use", z)
		}
	})
	t.Run("pod spread by zone", func(t *testing.T) {
		// The GPU pods are spread by zone themselves, so the replacement's zone is chosen as
		// infer-0 is placed (1a and 1b tie at no pod each) and cannot be moved afterwards.
		f := setup(t)
		gpuNode(f, "gpu-b", "g6.12xlarge", "us-east-1b")
		gpuNode(f, "gpu-c", "g6.xlarge", "us-east-1c")
		for i, n := range []string{"gpu-b", "gpu-c"} {
			f.snap.Pods = append(f.snap.Pods, simtest.Pod("infer-"+itoa(i)).Label("app", "infer").Controlled("ReplicaSet", "infer").
				CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 1, true).On(n).Obj())
		}
		if z := replacementZone(t, f.plan(), "gpu-b"); z == "us-east-1a" {
			t.Errorf("gpu-b replaced in %s: a zone-spread domain the web pods cannot use", z)
		}
	})
	t.Run("pod spread by zone, fewest of its pods in the new zone", func(t *testing.T) {
		// The GPU pods are spread with maxSkew 2, one each in 1b and 1c besides infer-0: moved,
		// infer-0 goes where its spread has the fewest pods, 1a, and the replacement's zone is
		// chosen so, not by a tie. Placed again with 1a closed, it goes to 1b or 1c (two above
		// 1a's zero is within maxSkew 2).
		f := setup(t)
		gpuNode(f, "gpu-b", "g6.12xlarge", "us-east-1b")
		gpuNode(f, "gpu-b2", "g6.xlarge", "us-east-1b")
		gpuNode(f, "gpu-c", "g6.xlarge", "us-east-1c")
		for i, n := range []string{"gpu-b", "gpu-b2", "gpu-c"} {
			b := simtest.Pod("infer-"+itoa(i)).Label("app", "infer").Controlled("ReplicaSet", "infer").
				CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 2, true).On(n)
			if i > 0 {
				b.Annotate(api.AnnotationDoNotDisrupt, "true") // only infer-0 moves
			}
			f.snap.Pods = append(f.snap.Pods, b.Obj())
		}
		if z := replacementZone(t, f.plan(), "gpu-b"); z == "us-east-1a" {
			t.Errorf("gpu-b replaced in %s: a zone-spread domain the web pods cannot use", z)
		}
	})
	// skewed puts infer-0 on an oversized node in 1b beside infer-1 (1b) and infer-2 (1c), spread
	// by zone over the GPU pool's three zones: moved, infer-0 may only go to 1a (1b and 1c are
	// one above 1a's zero), where a new node opens a domain the web pods cannot use.
	skewed := func(t *testing.T, pol string) *fleet {
		f := setup(t)
		f.pol = pol
		gpuNode(f, "gpu-b", "g6.12xlarge", "us-east-1b")
		gpuNode(f, "gpu-b2", "g6.xlarge", "us-east-1b")
		gpuNode(f, "gpu-c", "g6.xlarge", "us-east-1c")
		for i, n := range []string{"gpu-b", "gpu-b2", "gpu-c"} {
			f.snap.Pods = append(f.snap.Pods, simtest.Pod("infer-"+itoa(i)).Label("app", "infer").Controlled("ReplicaSet", "infer").
				CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 1, true).On(n).Obj())
		}
		return f
	}
	t.Run("only in a new domain: kept", func(t *testing.T) {
		p := skewed(t, narrowSpreadPolicy).plan()
		if a := actionOf(p, "gpu-b"); a != nil {
			t.Fatalf("gpu-b: %+v; want it kept (its pod fits only on a new node in us-east-1a)", a)
		}
		var msg string
		for _, k := range p.Kept {
			if k.Name == "gpu-b" {
				msg = k.Message
			}
		}
		if keptAs(p, "gpu-b") != api.KeepNoCheaperFit || !strings.Contains(msg, "in us-east-1a, a zone-spread domain that pod default/web-") {
			t.Errorf("gpu-b kept as %q: %s", keptAs(p, "gpu-b"), msg)
		}
	})
	t.Run("only in a new domain: an expired node goes", func(t *testing.T) {
		// A node that must go is replaced whatever it costs, here the spread's future.
		pol := strings.Replace(narrowSpreadPolicy, `taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {budgets: [{nodes: "100%"}]}`, `taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption: {budgets: [{nodes: "100%"}], expireAfter: 12h}`, 1)
		if pol == narrowSpreadPolicy {
			t.Fatal("policy not changed")
		}
		p := skewed(t, pol).plan()
		a := actionOf(p, "gpu-b")
		if a == nil || a.Reason != api.ReasonExpired || a.Replacement == nil || a.Replacement.Zone != "us-east-1a" {
			t.Errorf("gpu-b: %+v; want it replaced in us-east-1a as Expired", a)
		}
	})
}
