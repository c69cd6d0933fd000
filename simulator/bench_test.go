package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkSimulate reproduces the shape of Karpenter's scheduling benchmark (see
// simtest.KarpenterCatalog and KarpenterPods) and reports pods/s, the number of nodes, $/h and
// the gap to the plan's lower bound. Karpenter v1.15 on this 2-core machine: 258 pods/s at 1,000
// pods, 230 at 5,000, 218 at 10,000, ending with n/5 nodes.
func BenchmarkSimulate(b *testing.B) {
	cat := simtest.KarpenterCatalog()
	for _, n := range []int{100, 1000, 5000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			snap := simtest.KarpenterPods(n, 42)
			in := simulator.Input{Snapshot: snap, Catalog: cat}
			plan, err := simulator.Simulate(in)
			if err != nil {
				b.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				b.Fatalf("%d pods unschedulable, first: %+v", len(plan.Unschedulable), plan.Unschedulable[0])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := simulator.Simulate(in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
			b.ReportMetric(plan.CostPerHour, "$/h")
			b.ReportMetric(100*(plan.CostPerHour/plan.LowerBoundPerHour-1), "gap_%")
			b.ReportMetric(float64(n)/float64(len(plan.NewNodes)), "pods/node")
		})
	}
}

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

// BenchmarkSimulateTeams times Simulate on Karpenter's benchmark pods dealt to four teams, each
// limited to a fifth of the unlimited plan's $/h (so every team is over and pods are dropped and
// re-simulated), against the same pods without limits; it reports pods/s, the pods reported
// TeamLimitExceeded and the plan's $/h.
func BenchmarkSimulateTeams(b *testing.B) {
	cat := simtest.KarpenterCatalog()
	for _, n := range []int{100, 1000} {
		snap := simtest.KarpenterPods(n, 42)
		for i, p := range snap.Pods {
			p.Namespace = fmt.Sprintf("team-%d", i%4)
		}
		free, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
		if err != nil {
			b.Fatal(err)
		}
		pol := policy.Default()
		for t := 0; t < 4; t++ {
			name := fmt.Sprintf("team-%d", t)
			pol.Teams = append(pol.Teams, policy.Team{Name: name, Namespaces: []string{name},
				Limits: policy.TeamLimits{MaxPricePerHour: free.CostPerHour / 5}})
		}
		for _, limited := range []bool{false, true} {
			in := simulator.Input{Snapshot: snap, Catalog: cat}
			if limited {
				in.Policy = pol
			}
			b.Run(fmt.Sprintf("pods=%d/limited=%v", n, limited), func(b *testing.B) {
				var plan *api.Plan
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if plan, err = simulator.Simulate(in); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reported := 0
				for _, u := range plan.Unschedulable {
					if u.Code == api.TeamLimitExceeded {
						reported++
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
				b.ReportMetric(float64(reported), "over_limit_pods")
				b.ReportMetric(plan.CostPerHour, "$/h")
			})
		}
	}
}
