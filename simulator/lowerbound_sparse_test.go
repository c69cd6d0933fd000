package simulator_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"

	corev1 "k8s.io/api/core/v1"
)

// TestLowerBoundSparseRequests plans pods that leave CPU, memory or both unrequested, alone
// and beside GPU pods: the integer cover must skip a resource nobody asks for (a grid cut into
// zero-sized units divided by zero and panicked the plan), and the bound stays at most the plan.
func TestLowerBoundSparseRequests(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for name, pods := range map[string][]*corev1.Pod{
		"cpu only":      {simtest.Pod("a").CPU("500m").Obj(), simtest.Pod("b").CPU("2").Obj()},
		"memory only":   {simtest.Pod("a").Mem("1Gi").Obj(), simtest.Pod("b").Mem("3Gi").Obj()},
		"no requests":   {simtest.Pod("a").Obj(), simtest.Pod("b").Obj()},
		"gpu, no cpu":   {simtest.Pod("a").GPU(1).Obj(), simtest.Pod("b").GPU(2).Obj()},
		"gpu and cpu":   {simtest.Pod("a").GPU(1).CPU("1").Obj(), simtest.Pod("b").CPU("1").Obj()},
		"gpu, mem only": {simtest.Pod("a").GPU(1).Mem("2Gi").Obj(), simtest.Pod("b").Mem("2Gi").Obj()},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: pods}, Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %+v", plan.Unschedulable)
			}
			if plan.LowerBoundPerHour > plan.CostPerHour+1e-9 {
				t.Errorf("lower bound $%.4f/h above the plan's $%.4f/h", plan.LowerBoundPerHour, plan.CostPerHour)
			}
		})
	}
}
