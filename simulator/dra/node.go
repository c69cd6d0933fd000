package dra

import (
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
)

// The one place that turns a pool's GPU configuration into what the driver publishes. The
// simulator plans a new (or in-flight) node with NodeSlices, and cloudprovider/sim, playing the
// driver on the node launched for that plan, publishes NodeSlices of the same node name, type
// and configuration, so the real kube-scheduler allocates from exactly the devices the plan did.

// PublishMode says how the NVIDIA DRA driver publishes the GPUs of a node configured as g:
// DynamicMIG under dynamic-mig and Full otherwise, consumable as g.ConsumableMemory asks.
// publishes is false where the device plugin hands out the GPUs (g.DRAPublishes is false: whole
// GPUs, time-slicing, MPS, static MIG): a node runs one of the two for its GPUs, never both, or
// each GPU would be given to two pods.
func PublishMode(g api.GPUConfig) (mode Mode, consumable, publishes bool) {
	if !g.DRAPublishes() {
		return Full, false, false
	}
	if g.Sharing == api.DynamicMIG {
		return DynamicMIG, g.ConsumableMemory, true
	}
	return Full, g.ConsumableMemory, true
}

// NodeSlices returns the ResourceSlices the NVIDIA DRA driver publishes on a node of the type
// configured as g: Slices in the PublishMode of the configuration, or nil for a type without
// GPUs and where the device plugin publishes the GPUs. The result is a pure function of its
// arguments (device names, attributes, UUIDs and slice names derive from the node name), and the
// slices are fresh objects the caller may change.
func NodeSlices(nodeName string, it *catalog.InstanceType, g api.GPUConfig) []*resourcev1.ResourceSlice {
	mode, consumable, publishes := PublishMode(g)
	if !publishes {
		return nil
	}
	return Slices(nodeName, it, mode, consumable)
}
