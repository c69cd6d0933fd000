package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// constructedSlices decodes the driver's constructed dynamic-MIG example. The snapshot decoder
// cannot read it: its slices only have metadata.generateName.
func constructedSlices(t *testing.T) []resourcev1.ResourceSlice {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, "resourceslice-dynamic-mig-a100-40gb.constructed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		APIVersion string                     `json:"apiVersion"`
		Kind       string                     `json:"kind"`
		Items      []resourcev1.ResourceSlice `json:"items"`
	}
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// quantities renders counters for comparison ("40192Mi" and "39.25Gi" compare by value).
func quantities(c map[string]resourcev1.Counter) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		out[k] = v.Value.Value()
	}
	return out
}

func capacities(c map[resourcev1.QualifiedName]resourcev1.DeviceCapacity) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		out[string(k)] = v.Value.Value()
	}
	return out
}

// attributes renders attributes as strings, without the ones the example invents per machine.
func attributes(a map[resourcev1.QualifiedName]resourcev1.DeviceAttribute) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		switch k {
		case "parentUUID", "uuid", "resource.kubernetes.io/pciBusID":
			continue
		}
		switch {
		case v.StringValue != nil:
			out[string(k)] = *v.StringValue
		case v.VersionValue != nil:
			out[string(k)] = "v" + *v.VersionValue
		case v.IntValue != nil:
			out[string(k)] = fmt.Sprintf("i%d", *v.IntValue)
		case v.BoolValue != nil:
			out[string(k)] = "b"
		}
	}
	return out
}

// The constructed example shows 9 of A100-40GB's 25 partitions; each must be published exactly
// like that (names, capacities, counters, attributes), next to the same counter set.
func TestSlicesDynamicMIGMatchesConstructedExample(t *testing.T) {
	want := constructedSlices(t)
	got := Slices("node-a100", instanceType(t, a2.catalog, a2.name), DynamicMIG, false)
	if len(got) != 2 {
		t.Fatalf("got %d slices, want 2 (counters, then devices)", len(got))
	}
	for i, s := range got {
		if s.Spec.Driver != DriverName || *s.Spec.NodeName != "node-a100" || s.Spec.Pool != want[i].Spec.Pool {
			t.Errorf("slice %d: driver %s node %s pool %+v, want like the example %+v", i, s.Spec.Driver, *s.Spec.NodeName, s.Spec.Pool, want[i].Spec.Pool)
		}
	}
	if diff := cmp.Diff(quantities(want[0].Spec.SharedCounters[0].Counters), quantities(got[0].Spec.SharedCounters[0].Counters)); diff != "" {
		t.Errorf("counter set (-example +got):\n%s", diff)
	}
	if got[0].Spec.SharedCounters[0].Name != want[0].Spec.SharedCounters[0].Name {
		t.Errorf("counter set %s, want %s", got[0].Spec.SharedCounters[0].Name, want[0].Spec.SharedCounters[0].Name)
	}
	devices := map[string]resourcev1.Device{}
	for _, d := range got[1].Spec.Devices {
		devices[d.Name] = d
	}
	// 7 × 1g.5gb, 7 × 1g.5gb+me, 4 × 1g.10gb, 3 × 2g.10gb, 2 × 3g.20gb, 4g.20gb, 7g.40gb; no gpu-0.
	if len(devices) != 25 {
		t.Errorf("got %d devices, want 25 partitions", len(devices))
	}
	for _, w := range want[1].Spec.Devices {
		g, ok := devices[w.Name]
		if !ok {
			t.Errorf("device %s is missing", w.Name)
			continue
		}
		if diff := cmp.Diff(capacities(w.Capacity), capacities(g.Capacity)); diff != "" {
			t.Errorf("%s capacity (-example +got):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(quantities(w.ConsumesCounters[0].Counters), quantities(g.ConsumesCounters[0].Counters)); diff != "" {
			t.Errorf("%s consumes (-example +got):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(attributes(w.Attributes), attributes(g.Attributes)); diff != "" {
			t.Errorf("%s attributes (-example +got):\n%s", w.Name, diff)
		}
		if *g.Attributes["parentUUID"].StringValue != GPUUUID("node-a100", 0) {
			t.Errorf("%s parentUUID %s", w.Name, *g.Attributes["parentUUID"].StringValue)
		}
	}
}

func TestSlicesFull(t *testing.T) {
	it := instanceType(t, p4d.catalog, p4d.name)
	got := Slices("gpu-node", it, Full, false)
	if len(got) != 1 || len(got[0].Spec.Devices) != 8 {
		t.Fatalf("got %d slices, want one with 8 devices", len(got))
	}
	uuids := map[string]bool{}
	for i, d := range got[0].Spec.Devices {
		wantAttrs := map[string]string{"type": "gpu", "productName": "NVIDIA A100-SXM4-40GB", "brand": "Nvidia",
			"architecture": "Ampere", "cudaComputeCapability": "v8.0.0", "driverVersion": "v" + DriverVersion,
			"cudaDriverVersion": "v" + CUDADriverVersion, "index": fmt.Sprintf("i%d", i)}
		if diff := cmp.Diff(wantAttrs, attributes(d.Attributes)); diff != "" {
			t.Errorf("%s attributes (-want +got):\n%s", d.Name, diff)
		}
		if mem := d.Capacity["memory"].Value; mem.String() != "40Gi" || d.AllowMultipleAllocations != nil {
			t.Errorf("%s memory %s, allowMultipleAllocations %v; want 40Gi, unset", d.Name, mem.String(), d.AllowMultipleAllocations)
		}
		uuids[*d.Attributes["uuid"].StringValue] = true
	}
	if len(uuids) != 8 || !uuids[GPUUUID("gpu-node", 7)] {
		t.Errorf("uuids %v are not 8 distinct GPUUUID values", uuids)
	}
	if again := Slices("gpu-node", it, Full, false); !cmp.Equal(attributes(again[0].Spec.Devices[3].Attributes), attributes(got[0].Spec.Devices[3].Attributes)) ||
		*again[0].Spec.Devices[3].Attributes["uuid"].StringValue != *got[0].Spec.Devices[3].Attributes["uuid"].StringValue {
		t.Error("Slices is not deterministic")
	}
}

// --consumable-shares=memory: Default is the whole memory, range 1Mi..memory in 1Mi steps.
func TestSlicesConsumable(t *testing.T) {
	got := Slices("n", instanceType(t, a2.catalog, a2.name), Full, true)
	d := got[0].Spec.Devices[0]
	p := d.Capacity["memory"].RequestPolicy
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations || p == nil || p.ValidRange == nil {
		t.Fatalf("device %s: allowMultipleAllocations %v, policy %+v", d.Name, d.AllowMultipleAllocations, p)
	}
	if p.Default.String() != "40Gi" || p.ValidRange.Min.String() != "1Mi" || p.ValidRange.Max.String() != "40Gi" || p.ValidRange.Step.String() != "1Mi" {
		t.Errorf("policy default %s range %s..%s step %s", p.Default, p.ValidRange.Min, p.ValidRange.Max, p.ValidRange.Step)
	}
}

// Hopper: one counter slice with the 8 counter sets, then a slice per GPU holding the full GPU and
// its 18 partitions (the +me profiles are left out: no engine counts are sourced for H100).
func TestSlicesDynamicMIGHopper(t *testing.T) {
	got := Slices("h", instanceType(t, p5.catalog, p5.name), DynamicMIG, false)
	if len(got) != 9 || len(got[0].Spec.SharedCounters) != 8 {
		t.Fatalf("got %d slices (first with %d counter sets), want 9 with 8 sets first", len(got), len(got[0].Spec.SharedCounters))
	}
	for i, s := range got {
		if s.Spec.Pool.ResourceSliceCount != 9 || s.Spec.Pool.Name != "h" {
			t.Errorf("slice %d pool %+v", i, s.Spec.Pool)
		}
	}
	gpu3 := got[4].Spec.Devices
	if len(gpu3) != 19 || gpu3[0].Name != "gpu-3" || gpu3[1].Name != "gpu-3-mig-1g10gb-19-0" {
		t.Fatalf("slice 4: %d devices starting %s, %s", len(gpu3), gpu3[0].Name, gpu3[1].Name)
	}
	all := gpu3[0].ConsumesCounters[0]
	if all.CounterSet != "gpu-3-counter-set" || len(all.Counters) != len(got[0].Spec.SharedCounters[3].Counters) {
		t.Errorf("full GPU consumes %s %v, want every counter of gpu-3-counter-set", all.CounterSet, quantities(all.Counters))
	}
	var names []string
	for _, d := range gpu3 {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("device name %s is used twice", names[i])
		}
	}
}

func TestSlicesWithoutMIG(t *testing.T) {
	l4 := instanceType(t, g6.catalog, g6.name)
	if diff := cmp.Diff(Slices("n", l4, Full, false), Slices("n", l4, DynamicMIG, false)); diff != "" {
		t.Errorf("an L4 in DynamicMIG mode differs from Full mode:\n%s", diff)
	}
	if got := Slices("n", instanceType(t, m6i.catalog, m6i.name), Full, false); got != nil {
		t.Errorf("a type without GPUs got %d slices", len(got))
	}
}
