package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestPlacementsHold checks random scenarios with the independent checker: every pod the plan
// places really fits its node under all constraints, and every pending pod is accounted for.
func TestPlacementsHold(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			snap := simtest.RandomSnapshot(uint64(seed), 5+seed%40)
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Error(v)
			}
			if plan.CostPerHour+1e-9 < plan.LowerBoundPerHour {
				t.Errorf("cost %.4f below lower bound %.4f", plan.CostPerHour, plan.LowerBoundPerHour)
			}
		})
	}
}
