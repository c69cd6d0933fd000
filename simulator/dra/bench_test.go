package dra

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
)

// BenchmarkFit measures one Fit of a pod's claims on a hypothetical 8-GPU node (p4d.24xlarge,
// 8 × A100-40GB) built from Slices, the call the simulator makes per candidate instance type.
// Cases: a CEL-selected GPU with 7 of 8 GPUs committed (the allocator has to skip the used
// ones), two GPUs in one claim, and a 1g.5gb partition among the 200 dynamic MIG devices with
// 6 partitions of each GPU committed. ns/op is the figure; devices/node reports the node size.
func BenchmarkFit(b *testing.B) {
	cases := []struct {
		name      string
		mode      Mode
		template  string
		committed int // pods of the same template placed before timing
	}{
		{"full/a100-selector/7-of-8-used", Full, "a100-40gi-ampere", 7},
		{"full/two-gpus/empty", Full, "two-gpus", 0},
		{"dynamic-mig/1g.5gb/48-of-56-used", DynamicMIG, "mig-1g5gb", 48},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, nil)
			n := node("bench")
			slices := Slices(n.Name, instanceType(b, p4d.catalog, p4d.name), tc.mode, false)
			for i := range tc.committed {
				if _, reason := e.place(newPod("pre-"+itoa(i)).template("c", tc.template).obj(), n, slices); reason != nil {
					b.Fatalf("placing pod %d before timing: %v", i, reason)
				}
			}
			claims := e.podClaims(newPod("timed").template("c", tc.template).obj(), n)
			fit := func() {
				if _, reason, err := e.alloc.Fit(n, slices, claims); err != nil || reason != nil {
					b.Fatalf("Fit: %v %v", reason, err)
				}
			}
			fit()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				fit()
			}
			b.ReportMetric(float64(deviceCount(slices)), "devices/node")
		})
	}
}

func deviceCount(slices []*resourcev1.ResourceSlice) int {
	n := 0
	for _, s := range slices {
		n += len(s.Spec.Devices)
	}
	return n
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }
