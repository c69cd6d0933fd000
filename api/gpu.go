package api

import "slices"

// Sharing is how a pool's GPUs are shared between pods.
type Sharing string

// The GPU sharing modes.
const (
	Exclusive   Sharing = "exclusive"
	TimeSlicing Sharing = "time-slicing"
	MPS         Sharing = "mps"
	MIG         Sharing = "mig"
	DynamicMIG  Sharing = "dynamic-mig"
)

// GPUConfig is how a node's GPUs are configured: what the plan chose for a new node, what its
// launch record keeps and what the cloud's bootstrap applies (the GPU operator's labels, see
// cloudprovider.KubeletLabels).
type GPUConfig struct {
	// Sharing is the pool's GPU sharing mode.
	Sharing Sharing `json:"sharing,omitempty"`
	// Replicas is the time-slicing or MPS replica count per GPU.
	Replicas int `json:"replicasPerGPU,omitempty"`
	// MIGStrategy is the device plugin's MIG strategy, single or mixed.
	MIGStrategy string `json:"migStrategy,omitempty"`
	// RenameShared: the replicas are advertised as nvidia.com/gpu.shared instead of
	// nvidia.com/gpu (the pool's gpu.renameShared, the device plugin's renameByDefault).
	RenameShared bool `json:"renameShared,omitempty"`
	// MIGLayout lists the MIG profiles of each GPU.
	MIGLayout [][]string `json:"migLayout,omitempty"`
	// MIGConfig is the nvidia.com/mig.config value (a mig-parted config name); MigPartedConfig
	// the mig-parted file for it.
	MIGConfig       string `json:"migConfig,omitempty"`
	MigPartedConfig string `json:"migPartedConfig,omitempty"`
	// ConsumableMemory: the DRA driver publishes the GPUs' memory as consumable capacity, so
	// several claims may share a GPU (the pool's gpu.consumableMemory; the driver's
	// --consumable-shares=memory). Only with exclusive or dynamic-mig sharing.
	ConsumableMemory bool `json:"consumableMemory,omitempty"`
	// DRA: the NVIDIA DRA driver alone publishes the whole GPUs of an exclusive node and the
	// device plugin does not run there (the pool's gpu.driver dra, or a node a driver-less pool
	// bought for ResourceClaims). A node never runs both for its GPUs: each would hand out every
	// GPU, so one GPU would go to two pods.
	DRA bool `json:"dra,omitempty"`
}

// DRAPublishes reports whether the NVIDIA DRA driver, and not the device plugin, hands out the
// node's GPUs: under dynamic MIG, with consumable memory, or when DRA is set. The other
// configurations are the device plugin's alone (whole GPUs, time-slicing, MPS, static MIG).
func (g GPUConfig) DRAPublishes() bool {
	return g.DRA || g.ConsumableMemory || g.Sharing == DynamicMIG
}

// Equal reports whether two configurations configure a node's GPUs the same way.
func (g GPUConfig) Equal(h GPUConfig) bool {
	return g.Sharing == h.Sharing && g.Replicas == h.Replicas && g.MIGStrategy == h.MIGStrategy &&
		g.RenameShared == h.RenameShared && g.MIGConfig == h.MIGConfig && g.MigPartedConfig == h.MigPartedConfig &&
		g.ConsumableMemory == h.ConsumableMemory && g.DRA == h.DRA && slices.EqualFunc(g.MIGLayout, h.MIGLayout, slices.Equal[[]string])
}
