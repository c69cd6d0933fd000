package simulator_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestNewNodesKeepSpreadDomains (fidelity regression spread-domain-of-tainted-gpu-node):
// kube-scheduler counts every node matching a spread pod's node affinity as a domain, tainted or
// not, so the GPU nodes bought for other pods must not open a zone the zone-spread pods cannot
// use (their pool buys in 1b and 1c only): with maxSkew 1, that empty domain would leave room for
// one spread pod per zone. An existing tainted node in another zone counts as a domain too.
func TestNewNodesKeepSpreadDomains(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceFamilies: [m6i]
  zones: [us-east-1b, us-east-1c]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
- name: gpu
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`))
	if err != nil {
		t.Fatal(err)
	}
	spreadPods := func(snap *snapshot.Snapshot) {
		for i := 0; i < 4; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("web-"+itoa(i)).Label("app", "web").CPU("100m").Mem("2Gi").
				Spread(corev1.LabelTopologyZone, 1, true).Obj())
		}
	}
	t.Run("new GPU nodes", func(t *testing.T) {
		snap := &snapshot.Snapshot{}
		spreadPods(snap)
		for i := 0; i < 2; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("infer-"+itoa(i)).CPU("4").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range plan.NewNodes {
			if n.Zone != "us-east-1b" && n.Zone != "us-east-1c" {
				t.Errorf("node %s (%s) bought in %s: a zone-spread domain the web pods cannot use", n.Name, n.Pool, n.Zone)
			}
		}
		if len(plan.Unschedulable) != 0 {
			t.Errorf("unschedulable: %v", plan.Unschedulable)
		}
	})
	t.Run("GPU node pinned to another zone", func(t *testing.T) {
		// Fidelity regression spread-domain-of-zone-pinned-node: the GPU pods select us-east-1a,
		// so their node cannot move to 1b or 1c, and its zone is a domain with no web pod: one
		// web pod per zone fits, as on an existing tainted node below. Before, all four were
		// planned and two never bound.
		snap := &snapshot.Snapshot{}
		spreadPods(snap)
		for i := 0; i < 2; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("infer-"+itoa(i)).CPU("4").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").
				NodeSelector(corev1.LabelTopologyZone, "us-east-1a").Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		web := 0
		for _, n := range plan.NewNodes {
			for _, p := range n.Pods {
				if strings.Contains(p, "/web-") {
					web++
				}
			}
		}
		unplaced := []string{}
		for _, u := range plan.Unschedulable {
			unplaced = append(unplaced, u.Pod)
		}
		if web != 2 || len(unplaced) != 2 {
			t.Errorf("%d web pods placed, unschedulable %v; want 2 placed and 2 web pods unschedulable (1a is a domain)", web, unplaced)
		}
	})
	// count tallies the plan's placed pods whose names start with prefix and its unschedulable ones.
	count := func(plan *api.Plan, prefix string) (placed, unplaced int) {
		for _, n := range plan.NewNodes {
			for _, p := range n.Pods {
				if strings.HasPrefix(p, "default/"+prefix) {
					placed++
				}
			}
		}
		for _, u := range plan.Unschedulable {
			if strings.HasPrefix(u.Pod, "default/"+prefix) {
				unplaced++
			}
		}
		return placed, unplaced
	}
	t.Run("GPU nodes spread by zone", func(t *testing.T) {
		// Fidelity regression gpu-spread-opens-a-domain (generated seed 144, narrow zones): the
		// GPU pods are spread by zone themselves, so their nodes' zones are chosen as they are
		// placed and keepSpreadDomains cannot move them. A GPU node in 1a opens a domain with no
		// web pod, and kube-scheduler bound two web pods of four. Now the plan buys the GPU nodes
		// in 1b and 1c only, where both spreads hold whole.
		snap := &snapshot.Snapshot{}
		spreadPods(snap)
		for i := 0; i < 4; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("infer-"+itoa(i)).Label("app", "infer").CPU("2").Mem("8Gi").GPU(1).
				Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 1, true).Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range plan.NewNodes {
			if n.Zone == "us-east-1a" {
				t.Errorf("node %s (%s) bought in us-east-1a: a zone-spread domain the web pods cannot use", n.Name, n.Pool)
			}
		}
		if len(plan.Unschedulable) != 0 {
			t.Errorf("unschedulable: %v", plan.Unschedulable)
		}
	})
	t.Run("GPU nodes anti-affine by zone", func(t *testing.T) {
		// Three GPU pods anti-affine by zone need all three zones. Kept out of 1a, one of them
		// has no place; in 1a, its node is a domain with no web pod, and two of the three web
		// pods fit. Both leave one pod out; the plan keeps the GPU pods and plans the web pods the
		// scheduler will bind (before, all three were planned and one never bound).
		snap := &snapshot.Snapshot{}
		for i := 0; i < 3; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("web-"+itoa(i)).Label("app", "web").CPU("100m").Mem("2Gi").
				Spread(corev1.LabelTopologyZone, 1, true).Obj())
		}
		for i := 0; i < 3; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("infer-"+itoa(i)).Label("app", "infer").CPU("2").Mem("8Gi").GPU(1).
				Tolerate("nvidia.com/gpu").AntiAffinity(corev1.LabelTopologyZone, "infer").Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		web, webOut := count(plan, "web-")
		infer, _ := count(plan, "infer-")
		if infer != 3 || web != 2 || webOut != 1 {
			t.Errorf("%d GPU pods and %d web pods placed, %d web pods unschedulable; want 3, 2 and 1", infer, web, webOut)
		}
	})
	// runningWeb is a snapshot with four web pods spread by zone running, two on an unmanaged
	// node in 1b and two on one in 1c.
	runningWeb := func() *snapshot.Snapshot {
		snap := &snapshot.Snapshot{}
		for _, z := range []string{"b", "c"} {
			n := simtest.Node("web-"+z, "m6i.xlarge", "us-east-1"+z, simtest.Resources("cpu", "4", "memory", "16Gi", "pods", "110"))
			snap.Nodes = append(snap.Nodes, n)
			for i := 0; i < 2; i++ {
				snap.Pods = append(snap.Pods, simtest.Pod("web-"+z+itoa(i)).Label("app", "web").CPU("100m").Mem("2Gi").
					Spread(corev1.LabelTopologyZone, 1, true).On(n.Name).Obj())
			}
		}
		return snap
	}
	t.Run("running spread pods", func(t *testing.T) {
		// The web pods run, two in 1b and two in 1c: none is pending, and a GPU node in 1a would
		// still be a domain with none of them, where the web Deployment's next replicas could
		// not go. At the same price elsewhere, the GPU node is bought in 1b or 1c.
		snap := runningWeb()
		snap.Pods = append(snap.Pods, simtest.Pod("infer").CPU("4").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Obj())
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.NewNodes) != 1 || len(plan.Unschedulable) != 0 {
			t.Fatalf("new nodes %+v, unschedulable %v; want one GPU node", plan.NewNodes, plan.Unschedulable)
		}
		n := plan.NewNodes[0]
		if n.Zone == "us-east-1a" {
			t.Errorf("node %s (%s, $%.4f/h) bought in us-east-1a: a zone-spread domain the running web pods cannot use", n.Name, n.InstanceType, n.PricePerHour)
		}
		// Nor may a launch fall back there; it may to the other zone the web pods use.
		other := false
		for _, f := range n.Fallbacks {
			if f.Zone == "us-east-1a" {
				t.Errorf("node %s falls back to %s/%s", n.Name, f.InstanceType, f.Zone)
			}
			other = other || f.Zone != n.Zone
		}
		if !other {
			t.Errorf("node %s in %s has no fallback in another zone: %+v", n.Name, n.Zone, n.Fallbacks)
		}
	})
	t.Run("running spread pods, GPU pods spread by zone", func(t *testing.T) {
		// The GPU pods' own spread chooses their nodes' zones as they are placed (no pod in any
		// zone yet, the same price everywhere): 1b and 1c, not 1a, where a node would be a domain
		// the running web pods cannot use.
		snap := runningWeb()
		for i := 0; i < 2; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod("infer-"+itoa(i)).Label("app", "infer").CPU("4").Mem("8Gi").GPU(1).
				Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 1, true).Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.NewNodes) != 2 || len(plan.Unschedulable) != 0 {
			t.Fatalf("new nodes %+v, unschedulable %v; want two GPU nodes", plan.NewNodes, plan.Unschedulable)
		}
		for _, n := range plan.NewNodes {
			if n.Zone == "us-east-1a" {
				t.Errorf("node %s (%s, $%.4f/h) bought in us-east-1a: a zone-spread domain the running web pods cannot use", n.Name, n.InstanceType, n.PricePerHour)
			}
		}
	})
	t.Run("existing tainted node", func(t *testing.T) {
		snap := &snapshot.Snapshot{}
		n := simtest.Node("infra-0", "m7i.2xlarge", "us-east-1a", simtest.Resources("cpu", "8", "memory", "32Gi", "pods", "110"))
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
		snap.Nodes = append(snap.Nodes, n)
		spreadPods(snap)
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		// Domains 1a (0 pods, tainted), 1b, 1c: one web pod per zone fits, the others do not.
		placed := 0
		for _, n := range plan.NewNodes {
			placed += len(n.Pods)
		}
		if placed != 2 || len(plan.Unschedulable) != 2 {
			t.Errorf("%d web pods placed, %d unschedulable; want 2 and 2 (the tainted node's zone is a domain)", placed, len(plan.Unschedulable))
		}
		// The reason names the zone that holds the spread down, the node that makes it a
		// domain, and the ways out.
		for _, u := range plan.Unschedulable {
			for _, want := range []string{"zone us-east-1a counts as a domain of its zone spread (node infra-0 matches", "with 0 of its pods in us-east-1a, a zone takes one more only while it holds fewer than 1", "nodeTaintsPolicy: Honor"} {
				if !strings.Contains(u.Reason, want) {
					t.Errorf("%s: reason %q lacks %q", u.Pod, u.Reason, want)
				}
			}
		}
	})
}
