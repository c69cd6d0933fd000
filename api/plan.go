package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReasonCode classifies why a pod has no place in a plan.
type ReasonCode string

// The reason codes. NeverFits and InvalidRequest do not change with more capacity; the others do.
const (
	// NeverFits: no offering allowed by the policy could hold the pod even on an empty node, and
	// no existing node could either.
	NeverFits ReasonCode = "NeverFits"
	// LimitExceeded: a node could be bought for the pod, but a pool limit or the budget stops it.
	LimitExceeded ReasonCode = "LimitExceeded"
	// Unschedulable: the pod's constraints (topology spread, pod affinity) cannot be met by the
	// plan's nodes.
	Unschedulable ReasonCode = "Unschedulable"
	// GangIncomplete: the pod's gang cannot be placed whole, so none of it is.
	GangIncomplete ReasonCode = "GangIncomplete"
	// TeamLimitExceeded: buying for the pod would take its team (policy teams) beyond one of its
	// limits (GPUs, MIG profiles, $/h, nodes); the reason names the team and the limit.
	TeamLimitExceeded ReasonCode = "TeamLimitExceeded"
	// QuotaExceeded: the pod's requests would take its namespace beyond a ResourceQuota's hard
	// limit; the reason names the quota and the resource.
	QuotaExceeded ReasonCode = "QuotaExceeded"
	// InvalidRequest: the pod's spec cannot be simulated (a malformed selector, a missing
	// DeviceClass, a CEL expression that does not compile).
	InvalidRequest ReasonCode = "InvalidRequest"
)

// Plan is the simulation's answer (simulator.Simulate): what to buy and where every pending pod lands.
type Plan struct {
	// CostPerHour is the sum of the new nodes' prices.
	CostPerHour float64 `json:"costPerHour"`
	// LowerBoundPerHour is a proven lower bound on the cost of any plan that places the pods this
	// plan places on new nodes and keeps the pools' minNodes (see lowerBound), so
	// CostPerHour/LowerBoundPerHour−1 bounds the gap to the optimum. It is 0 only when the plan
	// buys nothing the bound can account for; the gap is then not known (WriteTable says n/a).
	LowerBoundPerHour float64        `json:"lowerBoundPerHour"`
	NewNodes          []NewNode      `json:"newNodes"`
	ExistingNodes     []ExistingNode `json:"existingNodes"`
	// Relayouts are existing MIG nodes whose idle GPUs the plan re-partitions instead of buying
	// (free, so preferred to any purchase); the pods they are for are also listed in
	// ExistingNodes. Omitted when empty.
	Relayouts     []NodeRelayout     `json:"relayouts,omitempty"`
	Unschedulable []UnschedulablePod `json:"unschedulable"`
	// Preemptions are pending pods that kube-scheduler's DefaultPreemption would place on an
	// existing node by evicting lower-priority pods there: nothing is bought for them (they are
	// also listed in ExistingNodes), and their victims are planned like pending pods (placed on
	// free room, bought for, or unschedulable). Omitted when empty.
	Preemptions []Preemption `json:"preemptions,omitempty"`
	// Warnings carries notes about the input (skipped objects, defaults applied).
	Warnings []string `json:"warnings,omitempty"`
}

// NewNode is a node to buy.
type NewNode struct {
	Name string `json:"name"`
	Pool string `json:"pool"`
	// PricedOffering is what the node is bought as (instanceType, zone, capacityType,
	// pricePerHour in JSON).
	PricedOffering
	Pods   []string          `json:"pods"`
	Labels map[string]string `json:"labels"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
	// Allocatable is what the scheduler will see on the node once it is Ready.
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Reason says why the node is bought when it holds no pods (a pool's minNodes).
	Reason string `json:"reason,omitempty"`
	// GPUs describes the node's GPUs; GPU how they are shared or partitioned.
	GPUs *GPUInfo   `json:"gpus,omitempty"`
	GPU  *GPUConfig `json:"gpu,omitempty"`
	// MIGLayout repeats GPU.MIGLayout at the top level of the node (JSON contract).
	MIGLayout [][]string `json:"migLayout,omitempty"`
	// Claims lists the DRA devices each claim would get on the node.
	Claims []ClaimAllocation `json:"claims,omitempty"`
	// Fallbacks are other offerings the node may be bought as when this one is unavailable,
	// cheapest first: same pool and GPU configuration, holding all the node's pods (see
	// simulator.Fallbacks for the rule).
	Fallbacks []PricedOffering `json:"fallbacks,omitempty"`
}

// GPUInfo is the model, count and memory of a node's GPUs.
type GPUInfo struct {
	Model     string `json:"model"`
	Count     int    `json:"count"`
	MemoryMiB int64  `json:"memoryMiB"`
	Product   string `json:"product,omitempty"`
}

// ClaimAllocation is the devices a ResourceClaim would be allocated on a node.
type ClaimAllocation struct {
	// Claim is "namespace/name"; a claim generated from a template is named <pod>-<entry>, the
	// claim for DRA-served extended resources <pod>-extended-resources.
	Claim string `json:"claim"`
	// Devices are the allocated devices by name ("gpu-0", "gpu-0-mig-1g5gb-19-0"), prefixed with
	// their pool when it is not the node's, followed by the chosen alternative of a prioritized
	// list ("(gpu/h100)") and the capacity consumed from a shared device ("[memory=10Gi]").
	Devices []string `json:"devices"`
}

// ExistingNode lists the pending pods planned onto a node that already exists.
type ExistingNode struct {
	Name string   `json:"name"`
	Pods []string `json:"pods"`
	// Claims lists the DRA devices the planned pods' claims would get on the node.
	Claims []ClaimAllocation `json:"claims,omitempty"`
}

// NodeRelayout re-partitions the idle GPUs of an existing node (device-plugin MIG): the
// controller sets the node's nvidia.com/mig.config label to MIGConfig, has the GPU operator's MIG
// manager know MigPartedConfig, and counts the node as in flight (simulator.Options.Relayouting)
// until nvidia.com/mig.config.state is success and the new devices are advertised. Only GPUs
// without an allocated slice are changed; a change that would move pods is a disruption.
type NodeRelayout struct {
	Node string `json:"node"`
	Pool string `json:"pool"`
	// GPUs are the indices of the GPUs whose layout changes.
	GPUs []int `json:"gpus"`
	// Layout is the node's new MIG layout, every GPU (the unchanged ones as they are).
	Layout [][]string `json:"layout"`
	// MIGConfig is the new nvidia.com/mig.config value, MigPartedConfig the mig-parted file that
	// defines it.
	MIGConfig       string `json:"migConfig"`
	MigPartedConfig string `json:"migPartedConfig"`
	// Allocatable is the node's allocatable once the new layout is advertised.
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Pods are the pending pods the new layout is for: planned onto the node, asking for its MIG
	// slices. They bind once the new slices are advertised.
	Pods []string `json:"pods"`
	// Started is when the controller set the new configuration (zero in a plan). A node whose
	// MIG manager reports success before it advertises the new slices is waited for from then,
	// up to the registration timeout.
	Started time.Time `json:"started,omitzero"`
}

// Preemption is a pending pod the scheduler would serve by preempting lower-priority pods on an
// existing node (simulator/preempt.go has the rule it follows).
type Preemption struct {
	// Pod is the preemptor ("namespace/name"), Priority its priority.
	Pod      string `json:"pod"`
	Priority int32  `json:"priority"`
	// Node is the existing node it preempts on.
	Node string `json:"node"`
	// Victims are the pods evicted from Node ("namespace/name"), most important first.
	Victims []string `json:"victims"`
	// PDBViolations counts the victims whose eviction a PodDisruptionBudget does not allow (the
	// scheduler prefers nodes with none, but preempts anyway when every node needs some).
	PDBViolations int `json:"pdbViolations,omitempty"`
	// Reason says why, in the words of the unschedulable reasons.
	Reason string `json:"reason"`
}

// UnschedulablePod is a pending pod the plan has no place for.
type UnschedulablePod struct {
	Pod    string     `json:"pod"`
	Code   ReasonCode `json:"code"`
	Reason string     `json:"reason"`
	// Cause, for a GangIncomplete member of a gang that had all its members, is what stopped the
	// gang: LimitExceeded (a pool limit or the budget) or NeverFits (a member fits no offering
	// the policy allows); empty otherwise.
	Cause ReasonCode `json:"cause,omitempty"`
}
