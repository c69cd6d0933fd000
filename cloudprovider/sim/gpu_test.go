package sim

import (
	"os"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator/dra"
)

func TestGPUResources(t *testing.T) {
	cat, _ := catalog.Embedded("aws-us-east-1")
	a100, _ := cat.Type("p4d.24xlarge") // 8 × A100-40GB
	cpu, _ := cat.Type("m7i.large")
	n := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	for _, tc := range []struct {
		name   string
		it     *catalog.InstanceType
		gpu    api.GPUConfig
		rename bool
		want   corev1.ResourceList
	}{
		{"no GPUs", cpu, api.GPUConfig{Sharing: "time-slicing", Replicas: 4}, false, nil},
		{"exclusive", a100, api.GPUConfig{}, false, corev1.ResourceList{api.ResourceGPU: n(8)}},
		// 8 GPUs × 4 replicas = 32
		{"time-slicing", a100, api.GPUConfig{Sharing: "time-slicing", Replicas: 4}, false,
			corev1.ResourceList{api.ResourceGPU: n(32)}},
		{"time-slicing renamed by default", a100, api.GPUConfig{Sharing: "time-slicing", Replicas: 4}, true,
			corev1.ResourceList{api.ResourceGPUShared: n(32)}},
		{"time-slicing renamed by the launch", a100, api.GPUConfig{Sharing: "time-slicing", Replicas: 4, RenameShared: true}, false,
			corev1.ResourceList{api.ResourceGPUShared: n(32)}},
		{"mps renamed by the launch", a100, api.GPUConfig{Sharing: "mps", Replicas: 2, RenameShared: true}, false,
			corev1.ResourceList{api.ResourceGPUShared: n(16)}},
		// Renaming concerns replicas only: whole GPUs stay nvidia.com/gpu.
		{"exclusive ignores renaming", a100, api.GPUConfig{RenameShared: true}, true, corev1.ResourceList{api.ResourceGPU: n(8)}},
		// 8 × 2 = 16
		{"mps", a100, api.GPUConfig{Sharing: "mps", Replicas: 2}, false, corev1.ResourceList{api.ResourceGPU: n(16)}},
		// GPU 0: 7 × 1g.5gb; GPU 1: 3g.20gb + 2 × 2g.10gb; GPUs 2-7 whole.
		{"mig mixed", a100, api.GPUConfig{Sharing: "mig", MIGStrategy: "mixed", MIGLayout: [][]string{
			{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}, {"3g.20gb", "2g.10gb", "2g.10gb"},
		}}, false, corev1.ResourceList{
			"nvidia.com/mig-1g.5gb": n(7), "nvidia.com/mig-3g.20gb": n(1), "nvidia.com/mig-2g.10gb": n(2), api.ResourceGPU: n(6),
		}},
		// 8 GPUs × 2 × 3g.20gb = 16 slices
		{"mig single", a100, api.GPUConfig{Sharing: "mig", MIGStrategy: "single", MIGLayout: [][]string{
			{"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"},
			{"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"}, {"3g.20gb", "3g.20gb"},
		}}, false, corev1.ResourceList{api.ResourceGPU: n(16)}},
		{"dynamic mig is DRA only", a100, api.GPUConfig{Sharing: "dynamic-mig"}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validateGPU(tc.gpu, tc.it); err != nil {
				t.Fatalf("validateGPU: %v", err)
			}
			got := gpuResources(tc.gpu, tc.it, tc.rename)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("gpuResources (-want +got):\n%s", diff)
			}
		})
	}
	single := api.GPUConfig{Sharing: "mig", MIGLayout: [][]string{{"3g.20gb", "2g.10gb"}}}
	if err := validateGPU(single, a100); err == nil {
		t.Fatal("validateGPU accepted two profiles under the single strategy")
	}
}

// TestNodeSlicesShape compares the full-GPU devices NodeSlices publishes for whole GPUs of the
// DRA driver with the NVIDIA driver's documented slice (testdata/resourceslice-static.yaml, copied from
// /work/shared/testdata/dra): every attribute the simulation sets must exist there with the same
// value type, and the capacity must be memory.
func TestNodeSlicesShape(t *testing.T) {
	cat, _ := catalog.Embedded("aws-us-east-1")
	a100, _ := cat.Type("p4d.24xlarge")
	slices := NodeSlices("a100-node", a100, api.GPUConfig{Sharing: "exclusive", DRA: true})
	if len(slices) != 1 {
		t.Fatalf("%d slices, want 1", len(slices))
	}
	s := slices[0]
	if s.Name != "a100-node-gpu.nvidia.com-0" || s.Spec.Driver != DRADriver || *s.Spec.NodeName != "a100-node" ||
		s.Spec.Pool != (resourcev1.ResourcePool{Name: "a100-node", Generation: 1, ResourceSliceCount: 1}) {
		t.Fatalf("slice header %+v %+v", s.ObjectMeta, s.Spec.Pool)
	}
	if len(s.Spec.Devices) != 8 || s.Spec.Devices[7].Name != "gpu-7" {
		t.Fatalf("devices %+v", s.Spec.Devices)
	}
	ref := referenceDevice(t)
	uuids := map[string]bool{}
	for _, d := range s.Spec.Devices {
		for key, attr := range d.Attributes {
			if key == "index" {
				if attr.IntValue == nil {
					t.Errorf("%s: index is not an int", d.Name)
				}
				continue
			}
			want, ok := ref.Attributes[key]
			if !ok {
				t.Errorf("%s: attribute %s is not in the driver's slice", d.Name, key)
			} else if attrKind(attr) != attrKind(want) {
				t.Errorf("%s: attribute %s is a %s, the driver's is a %s", d.Name, key, attrKind(attr), attrKind(want))
			}
		}
		uuids[*d.Attributes["uuid"].StringValue] = true
	}
	if len(uuids) != 8 {
		t.Errorf("%d distinct GPU UUIDs, want 8", len(uuids))
	}
	d := s.Spec.Devices[0]
	for key, want := range map[resourcev1.QualifiedName]string{
		"type": "gpu", "productName": "NVIDIA A100-SXM4-40GB", "architecture": "Ampere",
	} {
		if got := d.Attributes[key].StringValue; got == nil || *got != want {
			t.Errorf("attribute %s = %v, want %s", key, got, want)
		}
	}
	if v := d.Attributes["cudaComputeCapability"].VersionValue; v == nil || *v != "8.0.0" {
		t.Errorf("cudaComputeCapability = %v, want 8.0.0", v)
	}
	mem := d.Capacity["memory"].Value
	if want := ref.Capacity["memory"].Value; mem.Cmp(want) != 0 || mem.String() != "40Gi" {
		t.Errorf("memory capacity %s, want %s like the driver's A100-40GB", mem.String(), want.String())
	}
	if NodeSlices("cpu-node", &catalog.InstanceType{Name: "cpu", VCPU: 2, MemoryMiB: 1024}, api.GPUConfig{}) != nil {
		t.Error("slices for a type without GPUs")
	}
}

// TestNodeSlicesAreThePlanners: for every GPU configuration a launch carries, the simulated
// driver publishes the slices simulator/dra builds for the simulator's plan of that node, in the
// mode the configuration gives (dra.PublishMode), and none where the device plugin serves the GPUs.
func TestNodeSlicesAreThePlanners(t *testing.T) {
	cat, _ := catalog.Embedded("aws-us-east-1")
	a100, _ := cat.Type("p4d.24xlarge") // 8 × A100-40GB
	for _, tc := range []struct {
		name string
		gpu  api.GPUConfig
		mode dra.Mode
		cons bool
		// slices: full GPUs fit one slice; dynamic MIG has one counter-set slice (8 sets) and
		// one device slice per GPU (25 partitions each).
		slices int
	}{
		{"exclusive, DRA", api.GPUConfig{Sharing: "exclusive", DRA: true}, dra.Full, false, 1},
		{"consumable memory", api.GPUConfig{Sharing: "exclusive", ConsumableMemory: true}, dra.Full, true, 1},
		{"dynamic mig", api.GPUConfig{Sharing: "dynamic-mig"}, dra.DynamicMIG, false, 9},
		{"dynamic mig, consumable", api.GPUConfig{Sharing: "dynamic-mig", ConsumableMemory: true}, dra.DynamicMIG, true, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validateGPU(tc.gpu, a100); err != nil {
				t.Fatal(err)
			}
			got := NodeSlices("tiler-gpu-x1", a100, tc.gpu)
			want := dra.Slices("tiler-gpu-x1", a100, tc.mode, tc.cons)
			if len(got) != tc.slices || !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("NodeSlices: %d slices, not the %d of dra.Slices(%s, consumable %t)", len(got), len(want), tc.mode, tc.cons)
			}
		})
	}
	// Where the device plugin hands out the GPUs, the DRA driver does not run: one GPU is never
	// published twice.
	for _, g := range []api.GPUConfig{{Sharing: "exclusive"}, {}, {Sharing: "time-slicing", Replicas: 4}} {
		if got := NodeSlices("n", a100, g); got != nil {
			t.Errorf("%+v: %d slices beside the device plugin's GPUs, want none", g, len(got))
		}
		if gpuResources(g, a100, false) == nil {
			t.Errorf("%+v: no device-plugin resources", g)
		}
	}
	if got := gpuResources(api.GPUConfig{Sharing: "exclusive", DRA: true}, a100, false); got != nil {
		t.Errorf("DRA: the device plugin advertises %v beside the driver's slices", got)
	}
	if got := NodeSlices("n", a100, api.GPUConfig{Sharing: "mig", MIGLayout: [][]string{{"7g.40gb"}}}); got != nil {
		t.Errorf("static MIG publishes %d slices, want none (MIG devices are not modelled)", len(got))
	}
	if err := validateGPU(api.GPUConfig{Sharing: "mig", DRA: true}, a100); err == nil || !strings.Contains(err.Error(), "DRA") {
		t.Errorf("validateGPU accepted DRA with static MIG: %v", err)
	}
	err := validateGPU(api.GPUConfig{Sharing: "time-slicing", Replicas: 2, ConsumableMemory: true}, a100)
	if err == nil || !strings.Contains(err.Error(), "ConsumableMemory") {
		t.Errorf("validateGPU accepted consumable memory with time-slicing: %v", err)
	}
}

// referenceDevice returns the full-GPU device of the driver's documented slice.
func referenceDevice(t *testing.T) resourcev1.Device {
	t.Helper()
	b, err := os.ReadFile("testdata/resourceslice-static.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []resourcev1.ResourceSlice `json:"items"`
	}
	if err := yaml.Unmarshal(b, &list); err != nil {
		t.Fatalf("decoding the reference slice: %v", err)
	}
	return list.Items[0].Spec.Devices[0]
}

// attrKind names the value type of an attribute.
func attrKind(a resourcev1.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return "string"
	case a.VersionValue != nil:
		return "version"
	case a.IntValue != nil:
		return "int"
	case a.BoolValue != nil:
		return "bool"
	}
	return "empty"
}
