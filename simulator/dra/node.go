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

// PublishMode says how the NVIDIA DRA driver publishes the GPUs of a node whose pool shares them
// as sharing, with gpu.consumableMemory set or not: DynamicMIG under dynamic-mig and Full
// otherwise, consumable as asked (the policy allows consumable memory only with exclusive and
// dynamic-mig). publishes is false under static MIG: the driver would publish the MIG devices
// mig-manager created, which are not modelled, so such nodes get no slices.
func PublishMode(sharing api.Sharing, consumableMemory bool) (mode Mode, consumable, publishes bool) {
	switch sharing {
	case api.MIG:
		return Full, false, false
	case api.DynamicMIG:
		return DynamicMIG, consumableMemory, true
	}
	return Full, consumableMemory, true
}

// NodeSlices returns the ResourceSlices the NVIDIA DRA driver publishes on a node of the type
// whose pool shares its GPUs as sharing (an api.Sharing value; "" is exclusive), with
// gpu.consumableMemory set or not: Slices in the PublishMode of the configuration, or nil for a
// type without GPUs and under static MIG. The result is a pure function of its arguments
// (device names, attributes, UUIDs and slice names derive from the node name), and the slices
// are fresh objects the caller may change.
func NodeSlices(nodeName string, it *catalog.InstanceType, sharing api.Sharing, consumableMemory bool) []*resourcev1.ResourceSlice {
	mode, consumable, publishes := PublishMode(sharing, consumableMemory)
	if !publishes {
		return nil
	}
	return Slices(nodeName, it, mode, consumable)
}
