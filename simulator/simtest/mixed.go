package simtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// MixedWorkload is n pending pods of a large mixed workload on the real catalog, the same for
// the same seed: CPU-heavy (40 %), memory-heavy (30 %), balanced zone-spread (20 %) pods
// (100m–8 CPU, 256Mi–32Gi) and single-GPU inference pods (10 %).
func MixedWorkload(n int, seed uint64) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &snapshot.Snapshot{}
	for i := 0; i < n; i++ {
		var b *PodBuilder
		switch k := r.IntN(10); {
		case k < 4: // CPU-heavy
			b = Pod(fmt.Sprintf("cpu-%04d", i)).Label("app", "cpu").CPU(fmt.Sprintf("%dm", 500+r.IntN(7500))).Mem(fmt.Sprintf("%dMi", 256+r.IntN(4096)))
		case k < 7: // memory-heavy
			b = Pod(fmt.Sprintf("mem-%04d", i)).Label("app", "mem").CPU(fmt.Sprintf("%dm", 100+r.IntN(1900))).Mem(fmt.Sprintf("%dMi", 2048+r.IntN(30720)))
		case k < 9: // balanced, zone-spread
			b = Pod(fmt.Sprintf("web-%04d", i)).Label("app", "web").CPU(fmt.Sprintf("%dm", 250+r.IntN(2000))).Mem(fmt.Sprintf("%dMi", 512+r.IntN(8192))).
				Spread("topology.kubernetes.io/zone", 1, true)
		default: // GPU inference
			b = Pod(fmt.Sprintf("gpu-%04d", i)).Label("app", "gpu").CPU("3").Mem("12Gi").GPU(1)
		}
		s.Pods = append(s.Pods, b.Obj())
	}
	return s
}

// TenTimesCluster is issue 19's ten-times cluster, the same for the same seed: LargeFleet's
// 5,000 running nodes (CPU, whole-GPU and time-sliced GPU) holding 10,000 pods, and 20,000
// pending pods of MixedWorkload that tolerate the GPU taint. Its pools are LargeFleetPolicy's.
func TenTimesCluster(cat *catalog.Catalog, seed uint64, created time.Time) *snapshot.Snapshot {
	snap := LargeFleet(cat, 5000, 10000, seed, created)
	pending := MixedWorkload(20000, seed+2)
	gpuToleration := Pod("x").Tolerate(policy.DefaultGPUTaint.Key).Obj().Spec.Tolerations
	for _, p := range pending.Pods {
		p.Spec.Tolerations = append(p.Spec.Tolerations, gpuToleration...)
	}
	snap.Pods = append(snap.Pods, pending.Pods...)
	return snap
}
