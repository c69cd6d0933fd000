package simulator_test

import (
	"fmt"
	"testing"

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
