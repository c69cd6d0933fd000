package simulator_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestTopologyKeyNoNodeCarries: a required spread or pod affinity on a key no node carries was
// planned onto a new node without the label, which the scheduler does not use; such a pod is
// Unschedulable with the field and key named, and nodes without the key are not used for it.
func TestTopologyKeyNoNodeCarries(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	const rack = "example.com/rack"
	spread := simtest.Pod("spread").Label("app", "db").CPU("100m").Spread(rack, 1, true).Obj()
	affine := simtest.Pod("affine").Label("app", "db").CPU("100m").Affinity(rack, "db").Obj()
	soft := simtest.Pod("soft").Label("app", "web").CPU("100m").Spread(rack, 1, false).Obj()

	t.Run("no node or offering", func(t *testing.T) {
		snap := &snapshot.Snapshot{Pods: []*corev1.Pod{spread.DeepCopy(), affine.DeepCopy(), soft.DeepCopy()}}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"default/spread": `topologySpreadConstraints[0].topologyKey "example.com/rack": no node or offering it may use carries that label`,
			"default/affine": `affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey "example.com/rack"`,
		}
		if len(plan.Unschedulable) != 2 {
			t.Fatalf("unschedulable %+v, want spread and affine", plan.Unschedulable)
		}
		for _, u := range plan.Unschedulable {
			if !strings.Contains(u.Reason, want[u.Pod]) || u.Code != "Unschedulable" {
				t.Errorf("%s: %s %q", u.Pod, u.Code, u.Reason)
			}
		}
		if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Pods) != 1 || plan.NewNodes[0].Pods[0] != "default/soft" {
			t.Errorf("new nodes %+v, want one for the soft spread pod", plan.NewNodes)
		}
	})
	t.Run("existing node carries it, new ones do not", func(t *testing.T) {
		labelled := simtest.Node("rack-a-0", "m7i.large", "us-east-1a", simtest.Resources("cpu", "2", "memory", "8Gi", "pods", "110"))
		labelled.Labels[rack] = "a"
		bare := simtest.Node("bare-0", "m7i.large", "us-east-1a", simtest.Resources("cpu", "2", "memory", "8Gi", "pods", "110"))
		snap := &snapshot.Snapshot{Nodes: []*corev1.Node{bare, labelled}}
		for i := 0; i < 3; i++ {
			p := spread.DeepCopy()
			p.Name = "spread-" + itoa(i)
			p.Spec.Containers[0].Resources.Requests["cpu"] = simtest.Resources("cpu", "1500m")["cpu"]
			snap.Pods = append(snap.Pods, p)
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.ExistingNodes) != 1 || plan.ExistingNodes[0].Name != "rack-a-0" || len(plan.ExistingNodes[0].Pods) != 1 {
			t.Errorf("existing nodes %+v, want one pod on rack-a-0 (bare-0 has no rack label)", plan.ExistingNodes)
		}
		if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 2 {
			t.Errorf("%d new nodes, %d unschedulable; want 0 and 2 (no offering carries the rack)", len(plan.NewNodes), len(plan.Unschedulable))
		}
	})
	t.Run("a pool labels its nodes with the key", func(t *testing.T) {
		pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: plain\n- name: racked\n  labels: {example.com/rack: b}\n"))
		if err != nil {
			t.Fatal(err)
		}
		snap := &snapshot.Snapshot{Pods: []*corev1.Pod{spread.DeepCopy()}}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.NewNodes) != 1 || plan.NewNodes[0].Pool != "racked" || plan.NewNodes[0].Labels[rack] != "b" {
			t.Errorf("new nodes %+v, want one of pool racked", plan.NewNodes)
		}
	})
}
