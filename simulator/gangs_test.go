package simulator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestGangCountsBoundMembers: members the scheduler already bound count towards the gang's size,
// and with topology node the pending members join them on their node.
func TestGangCountsBoundMembers(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	node := simtest.Node("existing-0", "m7i.4xlarge", "us-east-1a", simtest.Resources("cpu", "15", "memory", "60Gi", "pods", "50"))
	for _, c := range []struct {
		name, topology string
		size, pending  int
		wantOnExisting int  // pending members planned on existing-0
		wantIncomplete bool // GangIncomplete for the pending members
	}{
		{"three, one bound", "", 3, 2, 0, false},
		{"three, one bound, node topology", "node", 3, 2, 2, false},
		{"four, one bound, two pending", "", 4, 2, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{Nodes: []*corev1.Node{node}}
			snap.Pods = append(snap.Pods, simtest.Pod("train-0").CPU("4").Mem("8Gi").Gang("train", c.size, c.topology).On("existing-0").Obj())
			for i := 1; i <= c.pending; i++ {
				snap.Pods = append(snap.Pods, simtest.Pod("train-"+string(rune('0'+i))).CPU("4").Mem("8Gi").Gang("train", c.size, c.topology).Obj())
			}
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if c.wantIncomplete {
				if len(plan.Unschedulable) != c.pending || plan.Unschedulable[0].Code != api.GangIncomplete ||
					!strings.Contains(plan.Unschedulable[0].Reason, "1 bound") {
					t.Fatalf("unschedulable %+v; want GangIncomplete counting the bound member", plan.Unschedulable)
				}
				return
			}
			if len(plan.Unschedulable) != 0 {
				t.Fatalf("unschedulable %+v", plan.Unschedulable)
			}
			on := 0
			for _, e := range plan.ExistingNodes {
				on += len(e.Pods)
			}
			if c.wantOnExisting > 0 && on != c.wantOnExisting {
				t.Errorf("%d members on existing-0, want %d (with their bound member)", on, c.wantOnExisting)
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Error(v)
			}
		})
	}
}

// TestAffinityToLowerPriorityPending: a high-priority pod with required pod affinity (zone) to a
// lower-priority workload that is pending too is placed next to it, not reported Unschedulable.
func TestAffinityToLowerPriorityPending(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{
		simtest.Pod("sidecar-0").CPU("1").Mem("1Gi").Priority(1000).Affinity("topology.kubernetes.io/zone", "web").Obj(),
		simtest.Pod("web-0").Label("app", "web").CPU("2").Mem("4Gi").Obj(),
		simtest.Pod("web-1").Label("app", "web").CPU("2").Mem("4Gi").Obj(),
	}}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable %+v; want sidecar-0 in the zone of web", plan.Unschedulable)
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Error(v)
	}
}

// TestGangAffinityToLaterPods: a high-priority gang (topology node) with required pod affinity
// (zone) to a pending workload placed after it is tried again once that workload is placed, and
// lands whole in its zone instead of GangIncomplete (fidelity regression
// gang-affinity-to-later-pods).
func TestGangAffinityToLaterPods(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{
		simtest.Pod("web-0").Label("app", "web").CPU("1").Mem("2Gi").Obj(),
		simtest.Pod("web-1").Label("app", "web").CPU("1").Mem("2Gi").Obj(),
	}}
	for i := range 2 {
		snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprintf("g-%d", i)).CPU("500m").Mem("1Gi").Priority(1000).
			Affinity("topology.kubernetes.io/zone", "web").Gang("g", 2, "node").Obj())
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable %+v; want the gang on one node in the zone of web", plan.Unschedulable)
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Error(v)
	}
}
