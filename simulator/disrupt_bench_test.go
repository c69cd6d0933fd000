package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkPlanDisruption times one consolidation decision over a running fleet of
// simtest.LargeFleet (CPU, whole-GPU and time-sliced GPU nodes, ten pods a node, 30 % of the
// nodes lightly used) under LargeFleetPolicy's default budgets (10 % of each pool at once), and
// reports seconds per decision, the actions and nodes it plans and the share of the fleet's
// $/h they save. The target at 5,000 nodes and 50,000 pods is ≤ 5 s on a 2-core machine.
func BenchmarkPlanDisruption(b *testing.B) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte(simtest.LargeFleetPolicy))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("nodes=%d,pods=%d", n, 10*n), func(b *testing.B) {
			snap := simtest.LargeFleet(cat, n, 10*n, 1, dOld)
			in := simulator.DisruptionInput{Snapshot: snap, Catalog: cat, Policy: pol,
				Options: simulator.DisruptionOptions{Now: dNow, IgnoreCandidateWait: true}}
			plan, err := simulator.PlanDisruption(in)
			if err != nil {
				b.Fatal(err)
			}
			removed := 0
			for _, a := range plan.Actions {
				removed += len(a.Nodes)
			}
			if removed == 0 {
				b.Fatal("the decision removes no node")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := simulator.PlanDisruption(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/decision")
			b.ReportMetric(float64(len(plan.Actions)), "actions")
			b.ReportMetric(float64(removed), "nodes_removed")
			b.ReportMetric(100*plan.SavingsPerHour/plan.CostPerHourBefore, "saved_%")
		})
	}
}
