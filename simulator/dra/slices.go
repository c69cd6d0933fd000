package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
)

// DriverName is the DRA driver for NVIDIA GPUs; it is also the domain of its device attributes
// ("gpu.nvidia.com/productName" in CEL) and its pool is named after the node.
const DriverName = "gpu.nvidia.com"

// Attribute values that the catalog does not know. They are the values of the driver's published
// examples (testdata/dra), so selectors written against those examples behave the same here.
const (
	// DriverVersion is the NVIDIA kernel driver version published as driverVersion.
	DriverVersion = "580.126.20"
	// CUDADriverVersion is the CUDA driver API version published as cudaDriverVersion.
	CUDADriverVersion = "13.0.0"
	// Brand is the NVML brand published as brand.
	Brand = "Nvidia"
)

// capacityMemory is the capacity every GPU and MIG device has.
const capacityMemory resourcev1.QualifiedName = "memory"

// Mode is how the driver publishes a node's GPUs.
type Mode int

const (
	// Full publishes one device per GPU (the driver's default).
	Full Mode = iota
	// DynamicMIG publishes every MIG partition a GPU could be split into as a device that
	// consumes shared counters of its GPU (the driver's DynamicMIG feature gate, KEP-4815).
	DynamicMIG
)

// String returns "Full" or "DynamicMIG".
func (m Mode) String() string {
	switch m {
	case Full:
		return "Full"
	case DynamicMIG:
		return "DynamicMIG"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Slices synthesizes the ResourceSlices the NVIDIA DRA driver (driver gpu.nvidia.com) would
// publish on a node of the instance type, in one pool named after the node. An instance type
// without GPUs gets no slices.
//
// Full: one device per GPU, "gpu-<i>", with attributes type=gpu, productName, brand,
// architecture, cudaComputeCapability and driverVersion (versions), uuid (derived from the node
// name and index, so it is stable across calls) and index, and the GPU memory as capacity
// "memory". With consumable, each GPU also allows multiple allocations and its memory is
// consumable capacity (the driver's --consumable-shares=memory: a claim that names no memory
// takes all of it, requests are rounded up to 1Mi).
//
// DynamicMIG: for a MIG-capable GPU, every (profile, placement) partition as a device consuming
// the GPU's shared counters, exactly as in resourceslice-dynamic-mig-a100-40gb.constructed.yaml
// (see partitions.go); the full-GPU device only on Hopper and newer. A GPU without MIG is
// published as in Full mode. Counter sets go into their own slices (at most 8 per slice) and
// each GPU's devices into one slice, as the driver's split mode does.
//
// Slices panics only if simulator/mig's embedded profile table does not load, which that
// package's tests rule out.
func Slices(nodeName string, it *catalog.InstanceType, mode Mode, consumable bool) []*resourcev1.ResourceSlice {
	if it == nil || it.GPU.Count <= 0 {
		return nil
	}
	b := &sliceBuilder{node: nodeName}
	m, migCapable, err := migModelFor(&it.GPU)
	if err != nil {
		// The embedded table is validated by its own tests; a broken table is a build bug.
		panic(err)
	}
	if mode == DynamicMIG && migCapable {
		b.dynamicMIG(it, m, consumable)
	} else {
		b.full(it, consumable)
	}
	return b.finish()
}

// sliceBuilder collects devices and counter sets and cuts them into slices of the allowed size.
type sliceBuilder struct {
	node   string
	slices []resourcev1.ResourceSliceSpec
}

// full adds one slice with a device per GPU.
func (b *sliceBuilder) full(it *catalog.InstanceType, consumable bool) {
	var devices []resourcev1.Device
	for i := range it.GPU.Count {
		dev := resourcev1.Device{
			Name:       fmt.Sprintf("gpu-%d", i),
			Attributes: newGPUAttributes(b.node, &it.GPU, i).gpu(),
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				capacityMemory: {Value: mebibytes(it.GPU.MemoryMiB)},
			},
		}
		if consumable {
			consumableMemory(&dev)
		}
		devices = append(devices, dev)
	}
	for start := 0; start < len(devices); start += resourcev1.ResourceSliceMaxDevices {
		end := min(start+resourcev1.ResourceSliceMaxDevices, len(devices))
		b.slices = append(b.slices, resourcev1.ResourceSliceSpec{Devices: devices[start:end]})
	}
}

// dynamicMIG adds the counter-set slices and one device slice per GPU.
func (b *sliceBuilder) dynamicMIG(it *catalog.InstanceType, m *migGPU, consumable bool) {
	eng := engineTable(m)
	parts := publishedPartitions(m, eng)
	var sets []resourcev1.CounterSet
	var perGPU [][]resourcev1.Device
	for i := range it.GPU.Count {
		attrs := newGPUAttributes(b.node, &it.GPU, i)
		set := counterSet(i, m, parts, eng)
		sets = append(sets, set)
		var devices []resourcev1.Device
		if m.architecture != "Ampere" {
			devices = append(devices, resourcev1.Device{
				Name:       fmt.Sprintf("gpu-%d", i),
				Attributes: attrs.gpu(),
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
					capacityMemory: {Value: mebibytes(it.GPU.MemoryMiB)},
				},
				ConsumesCounters: consumeAll(set),
			})
		}
		devices = append(devices, partitionDevices(i, attrs, m, parts, eng)...)
		if consumable {
			for d := range devices {
				consumableMemory(&devices[d])
			}
		}
		perGPU = append(perGPU, devices)
	}
	for start := 0; start < len(sets); start += resourcev1.ResourceSliceMaxCounterSets {
		end := min(start+resourcev1.ResourceSliceMaxCounterSets, len(sets))
		b.slices = append(b.slices, resourcev1.ResourceSliceSpec{SharedCounters: sets[start:end]})
	}
	for _, devices := range perGPU {
		// A slice whose devices consume counters holds at most 64 devices; a GPU has at most
		// 26 (A100-40GB: 25 partitions), so one slice per GPU always suffices.
		for start := 0; start < len(devices); start += resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures {
			end := min(start+resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures, len(devices))
			b.slices = append(b.slices, resourcev1.ResourceSliceSpec{Devices: devices[start:end]})
		}
	}
}

// finish names the slices and puts them into the node's pool.
func (b *sliceBuilder) finish() []*resourcev1.ResourceSlice {
	out := make([]*resourcev1.ResourceSlice, len(b.slices))
	for i, spec := range b.slices {
		node := b.node
		spec.Driver = DriverName
		spec.NodeName = &node
		spec.Pool = resourcev1.ResourcePool{Name: b.node, Generation: 1, ResourceSliceCount: int64(len(b.slices))}
		out[i] = &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: SliceName(b.node, i)},
			Spec:       spec,
		}
	}
	return out
}

// SliceName is the name of the node's i-th slice: "<node>-gpu.nvidia.com-<i>", or, when that
// would exceed the 253 characters of an object name, a hash of the node name in its place.
func SliceName(nodeName string, i int) string {
	const maxName = 253
	name := fmt.Sprintf("%s-%s-%d", nodeName, DriverName, i)
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(nodeName))
	return fmt.Sprintf("%s-%s-%d", hex.EncodeToString(sum[:16]), DriverName, i)
}

// consumableMemory is the driver's applyConsumableShares for --consumable-shares=memory: the
// device may be allocated many times, and each allocation consumes memory, by default all of it.
func consumableMemory(dev *resourcev1.Device) {
	allow := true
	dev.AllowMultipleAllocations = &allow
	mem, ok := dev.Capacity[capacityMemory]
	if !ok {
		return
	}
	step := resource.MustParse("1Mi")
	maxMem := mem.Value.DeepCopy()
	mem.RequestPolicy = &resourcev1.CapacityRequestPolicy{
		Default: &maxMem,
		ValidRange: &resourcev1.CapacityRequestPolicyRange{
			Min: &step, Max: &maxMem, Step: &step,
		},
	}
	dev.Capacity[capacityMemory] = mem
}

// gpuAttributes are the attributes one physical GPU contributes to its devices.
type gpuAttributes struct {
	index        int
	uuid         string
	product      string
	architecture string
	cc           string
}

func newGPUAttributes(node string, gpu *catalog.GPU, index int) gpuAttributes {
	return gpuAttributes{index: index, uuid: GPUUUID(node, index), product: gpu.Product,
		architecture: gpu.Architecture, cc: semver(gpu.CUDAComputeCapability)}
}

// common are the attributes of both full GPUs and MIG devices; empty catalog fields are left out
// so that a selector on them fails to match rather than matching "".
func (g gpuAttributes) common(kind string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	a := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"type":              {StringValue: &kind},
		"brand":             {StringValue: ptrTo(Brand)},
		"driverVersion":     {VersionValue: ptrTo(DriverVersion)},
		"cudaDriverVersion": {VersionValue: ptrTo(CUDADriverVersion)},
	}
	if g.product != "" {
		a["productName"] = resourcev1.DeviceAttribute{StringValue: ptrTo(g.product)}
	}
	if g.architecture != "" {
		a["architecture"] = resourcev1.DeviceAttribute{StringValue: ptrTo(g.architecture)}
	}
	if g.cc != "" {
		a["cudaComputeCapability"] = resourcev1.DeviceAttribute{VersionValue: ptrTo(g.cc)}
	}
	return a
}

// gpu are a full GPU's attributes. index is published as the task asks although current drivers
// dropped it (see resourceclaimtemplate-gpu-timeslicing.yaml).
func (g gpuAttributes) gpu() map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	a := g.common("gpu")
	a["uuid"] = resourcev1.DeviceAttribute{StringValue: ptrTo(g.uuid)}
	a["index"] = resourcev1.DeviceAttribute{IntValue: ptrTo(int64(g.index))}
	return a
}

// mig are a MIG device's attributes: no uuid (the instance does not exist before it is
// prepared), the parent's uuid and the profile instead.
func (g gpuAttributes) mig(profile string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	a := g.common("mig")
	a["parentUUID"] = resourcev1.DeviceAttribute{StringValue: ptrTo(g.uuid)}
	a["profile"] = resourcev1.DeviceAttribute{StringValue: ptrTo(profile)}
	return a
}

// GPUUUID returns the uuid published for GPU index on a node: "GPU-" and a UUID-shaped hex
// string derived from the node name and index, so the same node always gets the same UUIDs.
func GPUUUID(node string, index int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/gpu-%d", node, index)))
	h := hex.EncodeToString(sum[:16])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// semver turns the catalog's "8.0" into the "8.0.0" a version attribute needs.
func semver(v string) string {
	if v == "" {
		return ""
	}
	for strings.Count(v, ".") < 2 {
		v += ".0"
	}
	return v
}

func mebibytes(mib int64) resource.Quantity {
	return *resource.NewQuantity(mib*1024*1024, resource.BinarySI)
}

func ptrTo[T any](v T) *T { return &v }
