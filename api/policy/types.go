package policy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/forecast"
)

// Kind (with api.GroupVersion) identifies a cost policy document.
const (
	Kind = "CostPolicy"
	// ConfigMapKey is the ConfigMap key that holds the policy document.
	ConfigMapKey = "policy.yaml"
)

// CostPolicy is the cost policy: pools to buy from, a budget, and the workloads whose capacity is
// bought ahead of a forecast.
type CostPolicy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Pools      []Pool `json:"pools"`
	// Budget caps the total $/h of the nodes Tiler manages, across pools.
	Budget *Budget `json:"budget,omitempty"`
	// Forecasts declares, per workload, how to forecast its load; the controller's pre-scaler
	// reserves capacity for the replicas the forecast expects a lead time ahead. The simulation
	// itself ignores them.
	Forecasts []forecast.WorkloadForecast `json:"forecasts,omitempty"`
	// Teams group namespaces under limits on what Tiler buys for them and the pools they may use
	// (teams.go).
	Teams []Team `json:"teams,omitempty"`
	// SoftConstraints sets how much the plan may pay for pods' preferred node affinity,
	// preferred pod (anti-)affinity and ScheduleAnyway topology spread; nil is the default
	// (cost wins: they only break ties between equally cheap placements).
	SoftConstraints *SoftConstraints `json:"softConstraints,omitempty"`
}

// SoftConstraints tunes how the simulation honours pods' soft scheduling constraints.
type SoftConstraints struct {
	// MaxPremiumPercent is the most, in percent of the cheapest plan's $/h, a plan may cost more
	// to honour soft constraints: a new node may be bought as an offering up to this much dearer
	// than the cheapest when it scores better, and the whole plan is kept only while it costs at
	// most this much more than the plan that ignores soft constraints. 0 (the default): cost
	// wins, soft constraints only break ties.
	MaxPremiumPercent float64 `json:"maxPremiumPercent,omitempty"`
}

// MaxPremium returns the soft-constraint premium as a fraction (0.2 for 20%); 0 for nil.
func (s *SoftConstraints) MaxPremium() float64 {
	if s == nil {
		return 0
	}
	return s.MaxPremiumPercent / 100
}

// Budget caps spending.
type Budget struct {
	MaxPricePerHour float64 `json:"maxPricePerHour"`
}

// Pool is a set of offerings with the labels, taints and limits of the nodes bought from it.
type Pool struct {
	Name string `json:"name"`
	// InstanceFamilies restricts types by family (the part before the first dot or dash group,
	// e.g. m7i, g6, a2). InstanceTypes restricts by exact name. Neither means all types.
	InstanceFamilies []string               `json:"instanceFamilies,omitempty"`
	InstanceTypes    []api.InstanceTypeName `json:"instanceTypes,omitempty"`
	// CapacityTypes lists the allowed capacity types; empty means both.
	CapacityTypes []api.CapacityType `json:"capacityTypes,omitempty"`
	// Zones restricts the zones; empty means all of the catalog's.
	Zones  []string          `json:"zones,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
	Limits Limits            `json:"limits,omitempty"`
	// MinNodes is the number of nodes the pool keeps even when empty.
	MinNodes int `json:"minNodes,omitempty"`
	// Weight orders pools when costs tie: higher is tried first.
	Weight int `json:"weight,omitempty"`
	// Requirements further restrict the offerings by their labels (the labels a node of the
	// offering would carry, e.g. tiler.dev/gpu-count, node.kubernetes.io/instance-type).
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// GPU configures how the pool's GPUs are exposed.
	GPU *GPUPolicy `json:"gpu,omitempty"`
	// Disruption configures how the pool gives capacity back: consolidation, its timing, the
	// savings threshold and budgets (disruption.go). Nil means the defaults.
	Disruption *Disruption `json:"disruption,omitempty"`
	// Mix sets the pool's on-demand base, spot share and spot diversity (mix.go); nil: the
	// cheapest offering wins.
	Mix *Mix `json:"mix,omitempty"`
	// Reservations are the pool's reserved or committed capacity (mix.go), used first at their
	// effective price.
	Reservations []Reservation `json:"reservations,omitempty"`
	// MinPriority and MaxPriority reserve the pool for a priority tier: a node is bought in it
	// only for pods whose priority (spec.priority, else their PriorityClass's value, else 0) is
	// at least MinPriority and at most MaxPriority (nil: no bound). PriorityClassNames, when
	// set, further allows only pods of the listed PriorityClasses. So production inference
	// (minPriority: 1000) never gets a spot pool's node and research (maxPriority: 999) only
	// those. The tier governs what is bought; to keep pods off the pool's existing nodes as
	// well, give the pool taints the tier's pods tolerate.
	MinPriority        *int32   `json:"minPriority,omitempty"`
	MaxPriority        *int32   `json:"maxPriority,omitempty"`
	PriorityClassNames []string `json:"priorityClassNames,omitempty"`
}

// HasPriorityTier reports whether the pool is reserved for a priority tier.
func (pl *Pool) HasPriorityTier() bool {
	return pl.MinPriority != nil || pl.MaxPriority != nil || len(pl.PriorityClassNames) > 0
}

// AdmitsPriority reports whether the pool may buy a node for a pod of the priority and
// PriorityClass name ("" for none).
func (pl *Pool) AdmitsPriority(priority int32, class string) bool {
	if pl.MinPriority != nil && priority < *pl.MinPriority || pl.MaxPriority != nil && priority > *pl.MaxPriority {
		return false
	}
	if len(pl.PriorityClassNames) == 0 {
		return true
	}
	for _, c := range pl.PriorityClassNames {
		if c == class {
			return true
		}
	}
	return false
}

// Limits bound a pool. Every limit means the same: absent (nil) is no limit, a number is the most
// the pool may hold, and 0 is none at all — maxNodes: 0 or maxPricePerHour: 0 stop the pool from
// buying, maxGPUs: 0 keeps it to types without GPUs. The counts include the pool's existing
// nodes. (Before the fields were pointers, a written 0 meant "no limit" for all but maxGPUs.)
type Limits struct {
	// MaxNodes caps the pool's nodes.
	MaxNodes *int `json:"maxNodes,omitempty"`
	// MaxVCPU caps the vCPUs of the pool's nodes.
	MaxVCPU *int `json:"maxVCPU,omitempty"`
	// MaxGPUs caps the GPUs of the pool's nodes; 0 buys no GPU types at all.
	MaxGPUs *int `json:"maxGPUs,omitempty"`
	// MaxPricePerHour caps the $/h of the pool's nodes.
	MaxPricePerHour *float64 `json:"maxPricePerHour,omitempty"`
}

// GPUPolicy configures the GPUs of a pool.
type GPUPolicy struct {
	Sharing api.Sharing `json:"sharing,omitempty"`
	// Replicas is how many pods share one GPU under time-slicing or MPS; DefaultReplicas when 0.
	Replicas int `json:"replicas,omitempty"`
	// MIGStrategy is the device plugin's strategy: single exposes nvidia.com/gpu per slice,
	// mixed exposes nvidia.com/mig-<profile>.
	MIGStrategy string `json:"migStrategy,omitempty"`
	// MIGLayouts restricts the layouts: mig-parted names (all-1g.10gb) or profile lists
	// ("1g.10gb,1g.10gb,2g.20gb").
	MIGLayouts []string `json:"migLayouts,omitempty"`
	// RenameShared exposes time-sliced GPUs as nvidia.com/gpu.shared instead of nvidia.com/gpu.
	RenameShared bool `json:"renameShared,omitempty"`
	// ConsumableMemory has the NVIDIA DRA driver publish every GPU (or dynamic MIG partition)
	// with allowMultipleAllocations and its memory as consumable capacity
	// (--consumable-shares=memory), so that several ResourceClaims can each take part of one
	// GPU's memory. It needs GPUs published to DRA: sharing exclusive (or unset) or dynamic-mig.
	ConsumableMemory bool `json:"consumableMemory,omitempty"`
	// Driver pins which NVIDIA component hands out the whole GPUs of the pool's nodes under
	// exclusive sharing: DriverDevicePlugin (nvidia.com/gpu) or DriverDRA (the DRA driver's
	// ResourceSlices; pods asking for nvidia.com/gpu then get GPUs only through a DeviceClass
	// that serves it as its extendedResourceName). Unset, each node the pool buys gets the one
	// its pods need: the DRA driver for pods with ResourceClaims, else the device plugin. A node
	// never runs both, or each GPU would go to two pods. Consumable memory and dynamic MIG are
	// the DRA driver's; time-slicing, MPS and static MIG the device plugin's.
	Driver string `json:"driver,omitempty"`
}

// The values of GPUPolicy.Driver.
const (
	DriverDevicePlugin = "device-plugin"
	DriverDRA          = "dra"
)

// DefaultReplicas is the time-slicing or MPS replica count per GPU of a pool that sets none.
const DefaultReplicas = 4

// DefaultGPUTaint is put on GPU nodes of the default pool, as GPU pools conventionally do.
var DefaultGPUTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// Default returns the policy used when none is given: every type and capacity type is allowed;
// types without GPUs form pool "default", GPU types pool "gpu" with DefaultGPUTaint, as GPU node
// pools conventionally do.
func Default() *CostPolicy {
	return &CostPolicy{APIVersion: api.GroupVersion, Kind: Kind, Pools: []Pool{
		{Name: "default", Requirements: []corev1.NodeSelectorRequirement{
			{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		{Name: "gpu", Taints: []corev1.Taint{DefaultGPUTaint}, Requirements: []corev1.NodeSelectorRequirement{
			{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpExists}}},
	}}
}
