package simulator_test

import (
	"fmt"
	"math/rand/v2"
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

// TestGangsPackLikePlainPods: a gang without topology only asks that all its members be placed,
// and one of topology zone that they share a zone, so the split, re-pack and exact passes may
// spread them over several new nodes (of one zone) as they do plain pods. Before, any gang member
// kept its node whole and gangs of 3–23 pods cost up to 35 % more than the same pods without the
// gang. Both now cost what the plain pods do, and the zone gang's nodes share one zone.
func TestGangsPackLikePlainPods(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 3 + r.IntN(5)
		if seed%2 == 0 {
			n = 12 + r.IntN(12)
		}
		cpu, mem := make([]int, n), make([]int, n)
		for i := range n {
			cpu[i], mem[i] = 500+r.IntN(7500), 512+r.IntN(30000)
		}
		plan := func(gang bool, topology string) *api.Plan {
			var pods []*corev1.Pod
			for i := range n {
				b := simtest.Pod(fmt.Sprintf("p-%02d", i)).CPU(fmt.Sprintf("%dm", cpu[i])).Mem(fmt.Sprintf("%dMi", mem[i]))
				if gang {
					b.Gang("train", 0, topology)
				}
				pods = append(pods, b.Obj())
			}
			simtest.WithControllers(pods)
			p, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: pods}, Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Unschedulable) > 0 {
				t.Fatalf("seed %d: %d pods unschedulable: %+v", seed, len(p.Unschedulable), p.Unschedulable[0])
			}
			return p
		}
		plain, free, zonal := plan(false, ""), plan(true, ""), plan(true, "zone")
		if free.CostPerHour > plain.CostPerHour+1e-6 {
			t.Errorf("seed %d (%d pods): a gang without topology costs $%.3f/h, the plain pods $%.3f/h", seed, n, free.CostPerHour, plain.CostPerHour)
		}
		if zonal.CostPerHour > plain.CostPerHour+1e-6 {
			t.Errorf("seed %d (%d pods): a gang of topology zone costs $%.3f/h, the plain pods $%.3f/h", seed, n, zonal.CostPerHour, plain.CostPerHour)
		}
		zones := map[string]bool{}
		for _, nn := range zonal.NewNodes {
			zones[nn.Zone] = true
		}
		if len(zones) != 1 {
			t.Errorf("seed %d: the zone gang's nodes are in %d zones", seed, len(zones))
		}
	}
}
