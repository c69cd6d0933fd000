package sim

// This file builds ResourceSlices from catalog data only. It must stay free of client-go (only
// k8s.io/api and apimachinery value types), so that the simulator can reuse GPUSlices.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/simulator/catalog"
)

// DRADriver is the driver name of the DRA Driver for NVIDIA GPUs.
const DRADriver = "gpu.nvidia.com"

// Versions the simulated driver stack reports, as in the driver's documented example slice.
const (
	// DriverVersion is the NVIDIA kernel driver version (attribute driverVersion).
	DriverVersion = "580.126.20"
	// CUDADriverVersion is the CUDA version the driver supports (attribute cudaDriverVersion).
	CUDADriverVersion = "13.0.0"
)

// GPUSlices returns the ResourceSlices the NVIDIA DRA driver publishes for a node of the type
// (nil for a type without GPUs): one slice in a pool named after the node, with one device per
// GPU named gpu-<i> carrying the attributes type=gpu, productName, architecture, brand,
// cudaComputeCapability, driverVersion, cudaDriverVersion, a uuid derived from the node name and
// index, and index, and the capacity memory. The slice has a fixed name (SliceName) and no owner
// reference; the caller adds the Node's.
func GPUSlices(nodeName string, it *catalog.InstanceType) []*resourcev1.ResourceSlice {
	if it == nil || it.GPU.Count <= 0 {
		return nil
	}
	devices := make([]resourcev1.Device, it.GPU.Count)
	for i := range devices {
		devices[i] = gpuDevice(nodeName, i, &it.GPU)
	}
	node := nodeName
	return []*resourcev1.ResourceSlice{{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: SliceName(nodeName)},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   DRADriver,
			Pool:     resourcev1.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  devices,
		},
	}}
}

// SliceName returns the name of the node's GPU slice: <node>-gpu.nvidia.com, or a hash of the
// node name in its place when that would exceed the 253 characters of an object name.
func SliceName(nodeName string) string {
	const maxName = 253
	name := nodeName + "-" + DRADriver
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(nodeName))
	return hex.EncodeToString(sum[:16]) + "-" + DRADriver
}

// gpuDevice returns device gpu-<index>.
func gpuDevice(nodeName string, index int, g *catalog.GPU) resourcev1.Device {
	product := g.Product
	if product == "" {
		product = g.Model
	}
	attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"type":              stringAttr("gpu"),
		"productName":       stringAttr(product),
		"brand":             stringAttr("Nvidia"),
		"uuid":              stringAttr(gpuUUID(nodeName, index)),
		"index":             {IntValue: new(int64(index))},
		"driverVersion":     versionAttr(DriverVersion),
		"cudaDriverVersion": versionAttr(CUDADriverVersion),
	}
	if g.Architecture != "" {
		attrs["architecture"] = stringAttr(g.Architecture)
	}
	if g.CUDAComputeCapability != "" {
		attrs["cudaComputeCapability"] = versionAttr(semver(g.CUDAComputeCapability))
	}
	return resourcev1.Device{
		Name:       fmt.Sprintf("gpu-%d", index),
		Attributes: attrs,
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(g.MemoryMiB*1024*1024, resource.BinarySI)},
		},
	}
}

// stringAttr returns a string attribute.
func stringAttr(s string) resourcev1.DeviceAttribute {
	return resourcev1.DeviceAttribute{StringValue: &s}
}

// versionAttr returns a semantic-version attribute.
func versionAttr(v string) resourcev1.DeviceAttribute {
	return resourcev1.DeviceAttribute{VersionValue: &v}
}

// semver pads a compute capability like "8.0" to the semantic version "8.0.0" that DRA version
// attributes require.
func semver(v string) string {
	switch strings.Count(v, ".") {
	case 0:
		return v + ".0.0"
	case 1:
		return v + ".0"
	default:
		return v
	}
}

// gpuUUID derives a stable, UUID-shaped GPU ID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) from the
// node name and the GPU index, so repeated publications of a node agree.
func gpuUUID(nodeName string, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/gpu-%d", nodeName, index))
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("GPU-%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
