package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkSimulateMix is BenchmarkSimulate's Karpenter pods, spot at 70 % of on-demand, (each kind one ReplicaSet) under one
// pool with a purchasing mix — onDemandBase 10, spotAbove 50, spotDiversity 3 — and without, and
// reports pods/s, $/h and the nodes bought on-demand and spot. The plan must pass
// simtest.CheckPurchasing.
func BenchmarkSimulateMix(b *testing.B) {
	// Spot at 70 % of on-demand (the benchmark's catalog prices both alike, so on-demand wins
	// every tie and no mix would show).
	cat := simtest.KarpenterCatalog()
	for i := range cat.Types {
		for j := range cat.Types[i].Offerings {
			if o := &cat.Types[i].Offerings[j]; o.CapacityType == api.Spot {
				o.PricePerHour *= 0.7
			}
		}
	}
	for _, n := range []int{1000, 5000} {
		for _, mix := range []string{"", "  mix: {onDemandBase: 10, spotAbove: 50, spotDiversity: 3}\n"} {
			pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: default\n" + mix))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("pods=%d/mix=%v", n, mix != ""), func(b *testing.B) {
				snap := simtest.KarpenterPods(n, 42)
				simtest.WithControllers(snap.Pods)
				in := simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol}
				var plan *api.Plan
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if plan, err = simulator.Simulate(in); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if errs := simtest.CheckPurchasing(snap, pol, plan); len(errs) > 0 {
					b.Fatalf("%d purchasing violations, first: %s", len(errs), errs[0])
				}
				od := 0
				for _, nn := range plan.NewNodes {
					if nn.CapacityType == api.OnDemand {
						od++
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
				b.ReportMetric(plan.CostPerHour, "$/h")
				b.ReportMetric(float64(od), "on-demand_nodes")
				b.ReportMetric(float64(len(plan.NewNodes)-od), "spot_nodes")
			})
		}
	}
}
