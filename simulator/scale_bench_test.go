package simulator_test

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
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
	runtime.GC()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go samplePeakHeap(stop, peak)
	plan, err := simulator.Simulate(in)
	close(stop)
	peakHeap := <-peak
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

// samplePeakHeap reads the heap's live objects every millisecond until stop closes, then sends
// the largest value seen.
func samplePeakHeap(stop <-chan struct{}, peak chan<- uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var max uint64
	for {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > max {
			max = v
		}
		select {
		case <-stop:
			peak <- max
			return
		case <-tick.C:
		}
	}
}
