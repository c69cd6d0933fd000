package dra

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestNodeSlices: each pool configuration whose GPUs the DRA driver hands out publishes Slices in
// its mode; where the device plugin hands them out (whole GPUs without DRA, time-slicing, static
// MIG) and for types without GPUs nothing is published; the same arguments give equal slices.
func TestNodeSlices(t *testing.T) {
	a100 := instanceType(t, a2.catalog, a2.name)
	for _, tc := range []struct {
		gpu       api.GPUConfig
		mode      Mode
		wantCons  bool
		publishes bool
	}{
		{gpu: api.GPUConfig{}},
		{gpu: api.GPUConfig{Sharing: api.Exclusive}},
		{gpu: api.GPUConfig{Sharing: api.Exclusive, DRA: true}, mode: Full, publishes: true},
		{gpu: api.GPUConfig{Sharing: api.Exclusive, ConsumableMemory: true}, mode: Full, wantCons: true, publishes: true},
		{gpu: api.GPUConfig{Sharing: api.TimeSlicing, Replicas: 4}},
		{gpu: api.GPUConfig{Sharing: api.DynamicMIG}, mode: DynamicMIG, publishes: true},
		{gpu: api.GPUConfig{Sharing: api.DynamicMIG, ConsumableMemory: true}, mode: DynamicMIG, wantCons: true, publishes: true},
		{gpu: api.GPUConfig{Sharing: api.MIG, MIGLayout: [][]string{{"7g.40gb"}}}},
	} {
		mode, cons, pub := PublishMode(tc.gpu)
		if pub != tc.publishes || pub && (mode != tc.mode || cons != tc.wantCons) {
			t.Errorf("PublishMode(%+v) = %s, %t, %t; want %s, %t, %t", tc.gpu, mode, cons, pub, tc.mode, tc.wantCons, tc.publishes)
		}
		got := NodeSlices("n1", a100, tc.gpu)
		if !tc.publishes {
			if got != nil {
				t.Errorf("NodeSlices(%+v): %d slices, want none", tc.gpu, len(got))
			}
			continue
		}
		if want := Slices("n1", a100, tc.mode, tc.wantCons); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("NodeSlices(%+v) differs from Slices(%s, %t)", tc.gpu, tc.mode, tc.wantCons)
		}
		if again := NodeSlices("n1", a100, tc.gpu); !equality.Semantic.DeepEqual(got, again) {
			t.Errorf("NodeSlices(%+v) is not deterministic", tc.gpu)
		}
	}
	if got := NodeSlices("n1", instanceType(t, m6i.catalog, m6i.name), api.GPUConfig{Sharing: api.Exclusive, DRA: true}); got != nil {
		t.Errorf("a type without GPUs publishes %d slices", len(got))
	}
}

// TestSliceName: slice names are "<node>-gpu.nvidia.com-<i>" and stay within an object name's
// 253 characters for the longest node names.
func TestSliceName(t *testing.T) {
	if got := SliceName("tiler-gpu-abcde", 2); got != "tiler-gpu-abcde-gpu.nvidia.com-2" {
		t.Errorf("SliceName = %q", got)
	}
	long := strings.Repeat("n", 253)
	a, b := SliceName(long, 0), SliceName(long, 1)
	if len(a) > 253 || a == b || !strings.HasSuffix(a, "-gpu.nvidia.com-0") {
		t.Errorf("SliceName of a 253-character node: %q, %q", a, b)
	}
	if sl := Slices(long, instanceType(t, a2.catalog, a2.name), DynamicMIG, false); sl[0].Name != a || sl[1].Name != b {
		t.Errorf("Slices names %q, %q; want %q, %q", sl[0].Name, sl[1].Name, a, b)
	}
}
