package simulator_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/catalog"
	"github.com/tiler-dev/tiler/simulator/simtest"
	"github.com/tiler-dev/tiler/simulator/snapshot"
)

// mixedWorkload is a large mixed workload on the real catalog: services of CPU-heavy,
// memory-heavy and balanced pods (100m–8 CPU, 128Mi–32Gi), a tenth with zone spread, a few
// single-GPU inference pods.
func mixedWorkload(n int, seed uint64) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &snapshot.Snapshot{}
	for i := 0; i < n; i++ {
		var b *simtest.PodBuilder
		switch k := r.IntN(10); {
		case k < 4: // CPU-heavy
			b = simtest.Pod(fmt.Sprintf("cpu-%04d", i)).Label("app", "cpu").CPU(fmt.Sprintf("%dm", 500+r.IntN(7500))).Mem(fmt.Sprintf("%dMi", 256+r.IntN(4096)))
		case k < 7: // memory-heavy
			b = simtest.Pod(fmt.Sprintf("mem-%04d", i)).Label("app", "mem").CPU(fmt.Sprintf("%dm", 100+r.IntN(1900))).Mem(fmt.Sprintf("%dMi", 2048+r.IntN(30720)))
		case k < 9: // balanced, zone-spread
			b = simtest.Pod(fmt.Sprintf("web-%04d", i)).Label("app", "web").CPU(fmt.Sprintf("%dm", 250+r.IntN(2000))).Mem(fmt.Sprintf("%dMi", 512+r.IntN(8192))).
				Spread("topology.kubernetes.io/zone", 1, true)
		default: // GPU inference
			b = simtest.Pod(fmt.Sprintf("gpu-%04d", i)).Label("app", "gpu").CPU("3").Mem("12Gi").GPU(1)
		}
		s.Pods = append(s.Pods, b.Obj())
	}
	return s
}

// TestMixedWorkloadGap: on large mixed workloads plans stay close to their lower bound. The target
// is 3 %; the heuristic reaches about 7 % today (the bound ignores zone spread and instance size
// steps), so the test guards against regressions at 8 % until a better packer lands.
func TestMixedWorkloadGap(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1000, 3000} {
		snap := mixedWorkload(n, 3)
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("unschedulable: %+v", plan.Unschedulable[0])
		}
		gap := plan.CostPerHour/plan.LowerBoundPerHour - 1
		t.Logf("%d pods: %d nodes, $%.2f/h, lower bound $%.2f/h, gap %.2f%%", n, len(plan.NewNodes), plan.CostPerHour, plan.LowerBoundPerHour, 100*gap)
		if gap > 0.08 {
			t.Errorf("%d pods: gap %.2f%% > 8%%", n, 100*gap)
		}
	}
}

// BenchmarkMixedWorkload reports pods/s and the gap to the lower bound on the mixed workload.
func BenchmarkMixedWorkload(b *testing.B) {
	cat, _ := catalog.Embedded("aws-us-east-1")
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			in := simulator.Input{Snapshot: mixedWorkload(n, 3), Catalog: cat}
			plan, err := simulator.Simulate(in)
			if err != nil {
				b.Fatal(err)
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
		})
	}
}
