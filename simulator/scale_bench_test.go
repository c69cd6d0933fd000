package simulator_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/internal/benchmeasure"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkSimulateAtScale is the purchase plan of issue 19's ten-times cluster: 5,000 running
// nodes of simtest.LargeFleet (CPU, whole-GPU and time-sliced GPU nodes) holding 10,000 pods, and
// 20,000 pending pods of the mixed workload (CPU-heavy, memory-heavy, zone-spread, whole-GPU).
// It reports seconds per plan and the peak heap in use during one plan (peak_heap_MB, sampled
// every millisecond; the input snapshot is included, as in `tiler plan`). Targets: ≤ 8 s, ≤ 450 MB.
func BenchmarkSimulateAtScale(b *testing.B) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte(simtest.LargeFleetPolicy))
	if err != nil {
		b.Fatal(err)
	}
	snap := simtest.TenTimesCluster(cat, 1, dOld)
	in := simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol}
	var plan *api.Plan
	peakHeap := benchmeasure.PeakHeap(func() { plan, err = simulator.Simulate(in) })
	if err != nil {
		b.Fatal(err)
	}
	if len(plan.NewNodes) == 0 {
		b.Fatal("the plan buys nothing for 20,000 pending pods")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := simulator.Simulate(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
	b.ReportMetric(float64(peakHeap)/1e6, "peak_heap_MB")
	b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
	b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
}
