package dra

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestNodeSlices: each pool configuration publishes Slices in its mode, static MIG and types
// without GPUs publish nothing, and the same arguments give equal slices.
func TestNodeSlices(t *testing.T) {
	a100 := instanceType(t, a2.catalog, a2.name)
	for _, tc := range []struct {
		sharing    api.Sharing
		consumable bool
		mode       Mode
		wantCons   bool
		publishes  bool
	}{
		{sharing: "", mode: Full, publishes: true},
		{sharing: api.Exclusive, mode: Full, publishes: true},
		{sharing: api.Exclusive, consumable: true, mode: Full, wantCons: true, publishes: true},
		{sharing: api.TimeSlicing, mode: Full, publishes: true},
		{sharing: api.DynamicMIG, mode: DynamicMIG, publishes: true},
		{sharing: api.DynamicMIG, consumable: true, mode: DynamicMIG, wantCons: true, publishes: true},
		{sharing: api.MIG, consumable: true, mode: Full, publishes: false},
	} {
		mode, cons, pub := PublishMode(tc.sharing, tc.consumable)
		if mode != tc.mode || cons != tc.wantCons || pub != tc.publishes {
			t.Errorf("PublishMode(%q, %t) = %s, %t, %t; want %s, %t, %t", tc.sharing, tc.consumable,
				mode, cons, pub, tc.mode, tc.wantCons, tc.publishes)
		}
		got := NodeSlices("n1", a100, tc.sharing, tc.consumable)
		if !tc.publishes {
			if got != nil {
				t.Errorf("NodeSlices(%q): %d slices, want none", tc.sharing, len(got))
			}
			continue
		}
		if want := Slices("n1", a100, tc.mode, tc.wantCons); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("NodeSlices(%q, %t) differs from Slices(%s, %t)", tc.sharing, tc.consumable, tc.mode, tc.wantCons)
		}
		if again := NodeSlices("n1", a100, tc.sharing, tc.consumable); !equality.Semantic.DeepEqual(got, again) {
			t.Errorf("NodeSlices(%q, %t) is not deterministic", tc.sharing, tc.consumable)
		}
	}
	if got := NodeSlices("n1", instanceType(t, m6i.catalog, m6i.name), api.Exclusive, false); got != nil {
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
