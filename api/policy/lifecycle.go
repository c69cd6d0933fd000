package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api"
)

// Defaults of a pool's repair settings.
const (
	// DefaultRepairGracePeriod is how long a node's GPUs may be missing from allocatable before
	// the node is repaired: the device plugin re-registers after a driver container restart, and
	// a health check may flap, within a few minutes.
	DefaultRepairGracePeriod = 10 * time.Minute
	// DefaultNotReadyGracePeriod is how long a node may be NotReady (or Unknown) before it is
	// repaired: longer than the node lifecycle controller's 5-minute eviction, so that a kubelet
	// restart or a short network partition heals by itself.
	DefaultNotReadyGracePeriod = 15 * time.Minute
	// DefaultRepairBudget is the share of a pool's nodes that may be under repair at once, so that
	// a fleet-wide fault (a bad driver rollout, a broken health check) does not delete the fleet.
	DefaultRepairBudget = "10%"
	// DefaultRepairMaxUnhealthy is how many of a pool's nodes may show a health signal at once
	// for any of them to be repaired (Karpenter's node repair stops past 20 % of a NodePool too).
	DefaultRepairMaxUnhealthy = "20%"
)

// ConditionAcceleratedHardwareReady is the node condition the EKS node monitoring agent sets to
// False when it finds NVIDIA XID errors (or AWS Neuron or DCGM failures) in the node's logs; EKS
// node auto repair and Karpenter's node repair act on it. It is the default repair condition.
const ConditionAcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"

// DefaultRepairConditions are the node conditions that mark a node's GPUs broken when a pool
// lists none: AcceleratedHardwareReady=False.
var DefaultRepairConditions = []RepairCondition{{Type: ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse}}

// Repair configures how a pool replaces nodes whose hardware is unhealthy
// (simulator.PlanDisruption, reason Unhealthy). A node is unhealthy when its allocatable GPUs
// stay below capacity for GracePeriod, when a DRA device of it carries a NoSchedule or NoExecute
// taint, when it has one of Conditions, or when it is not Ready for NotReadyGracePeriod.
type Repair struct {
	// GracePeriod is how long allocatable GPUs (nvidia.com/gpu, nvidia.com/gpu.shared,
	// nvidia.com/mig-*) may stay below capacity; DefaultRepairGracePeriod when unset.
	GracePeriod *Duration `json:"gracePeriod,omitempty"`
	// NotReadyGracePeriod is how long the node's Ready condition may be False or Unknown;
	// DefaultNotReadyGracePeriod when unset.
	NotReadyGracePeriod *Duration `json:"notReadyGracePeriod,omitempty"`
	// Budget is how many of the pool's nodes may be under repair at once, "3" or "10%" (rounded
	// up); DefaultRepairBudget when empty; "0" turns repair off.
	Budget string `json:"budget,omitempty"`
	// MaxUnhealthy is how many of the pool's nodes may show a health signal at once, "3" or "20%"
	// (rounded up), for any of them to be repaired; DefaultRepairMaxUnhealthy when empty; "100%"
	// turns the check off. A fault wider than that (a zone's network, the control plane, a driver
	// a DaemonSet pushed to every node) is not the nodes', and replacing them would not mend it:
	// repair waits until it narrows.
	MaxUnhealthy string `json:"maxUnhealthy,omitempty"`
	// Conditions are node conditions that mark the node's GPUs broken, each a type and the
	// status that means broken; DefaultRepairConditions when empty. Health agents publish them:
	// the EKS node monitoring agent (AcceleratedHardwareReady=False on XID errors), a Node Problem
	// Detector with a GPU plugin, NVIDIA NVSentinel.
	Conditions []RepairCondition `json:"conditions,omitempty"`
}

// RepairCondition is a node condition type and the status that marks the node broken.
type RepairCondition struct {
	Type   corev1.NodeConditionType `json:"type"`
	Status corev1.ConditionStatus   `json:"status"`
}

// validate checks the repair settings; errors name the field relative to "repair.".
func (r *Repair) validate() error {
	if r.GracePeriod != nil && r.GracePeriod.Duration.Duration < 0 {
		return fmt.Errorf("gracePeriod: %s must not be negative", r.GracePeriod.Duration.Duration)
	}
	if r.NotReadyGracePeriod != nil && r.NotReadyGracePeriod.Duration.Duration < 0 {
		return fmt.Errorf("notReadyGracePeriod: %s must not be negative", r.NotReadyGracePeriod.Duration.Duration)
	}
	if r.Budget != "" {
		if err := validateNodeCount(r.Budget); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
	}
	if r.MaxUnhealthy != "" {
		if err := validateNodeCount(r.MaxUnhealthy); err != nil {
			return fmt.Errorf("maxUnhealthy: %w", err)
		}
	}
	for i, c := range r.Conditions {
		if errs := validation.IsQualifiedName(string(c.Type)); len(errs) > 0 {
			return fmt.Errorf("conditions[%d].type: %q: %s", i, c.Type, errs[0])
		}
		if c.Type == corev1.NodeReady {
			return fmt.Errorf("conditions[%d].type: Ready is repaired after notReadyGracePeriod; list other conditions here", i)
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			return fmt.Errorf("conditions[%d].status: %q must be True, False or Unknown", i, c.Status)
		}
	}
	return nil
}

// RepairSettings are a pool's repair settings with the defaults applied.
type RepairSettings struct {
	GracePeriod, NotReadyGracePeriod time.Duration
	// Budget is "N" or "P%"; AllowedRepairs resolves it.
	Budget string
	// MaxUnhealthy is "N" or "P%"; AllowedUnhealthy resolves it.
	MaxUnhealthy string
	Conditions   []RepairCondition
}

// RepairOf returns the pool's repair settings with the defaults applied.
func (pl *Pool) RepairOf() RepairSettings {
	out := RepairSettings{GracePeriod: DefaultRepairGracePeriod, NotReadyGracePeriod: DefaultNotReadyGracePeriod,
		Budget: DefaultRepairBudget, MaxUnhealthy: DefaultRepairMaxUnhealthy, Conditions: DefaultRepairConditions}
	if pl.Disruption == nil || pl.Disruption.Repair == nil {
		return out
	}
	r := pl.Disruption.Repair
	if r.GracePeriod != nil {
		out.GracePeriod = r.GracePeriod.Duration.Duration
	}
	if r.NotReadyGracePeriod != nil {
		out.NotReadyGracePeriod = r.NotReadyGracePeriod.Duration.Duration
	}
	if r.Budget != "" {
		out.Budget = r.Budget
	}
	if r.MaxUnhealthy != "" {
		out.MaxUnhealthy = r.MaxUnhealthy
	}
	if len(r.Conditions) > 0 {
		out.Conditions = r.Conditions
	}
	return out
}

// AllowedRepairs returns how many of the pool's poolNodes nodes may be under repair at once: the
// repair budget, a count or ⌈P % × poolNodes⌉. Nodes already under repair count against it: the
// caller subtracts them.
func (s RepairSettings) AllowedRepairs(poolNodes int) int { return nodeCountOf(s.Budget, poolNodes) }

// AllowedUnhealthy returns how many of the pool's poolNodes nodes may show a health signal at
// once for any to be repaired: a count or ⌈P % × poolNodes⌉.
func (s RepairSettings) AllowedUnhealthy(poolNodes int) int {
	return nodeCountOf(s.MaxUnhealthy, poolNodes)
}

// ExpireAfterOf returns the pool's expireAfter and whether it is set.
func (pl *Pool) ExpireAfterOf() (time.Duration, bool) {
	if pl.Disruption == nil || pl.Disruption.ExpireAfter == nil {
		return 0, false
	}
	return pl.Disruption.ExpireAfter.Duration.Duration, true
}

// TerminationGracePeriodOf returns the pool's terminationGracePeriod and whether it is set.
func (pl *Pool) TerminationGracePeriodOf() (time.Duration, bool) {
	if pl.Disruption == nil || pl.Disruption.TerminationGracePeriod == nil {
		return 0, false
	}
	return pl.Disruption.TerminationGracePeriod.Duration.Duration, true
}

// poolHashVersion starts every pool hash; a change to what the hash covers bumps it (and drifts
// every annotated node once, which is the honest outcome of such a change).
const poolHashVersion = "v1"

// PoolHash returns a stable hash of the pool's node-shaping settings that a node cannot be checked
// against directly: its labels, taints and GPU settings (sharing, replicas, MIG strategy,
// renameShared, consumableMemory). The controller puts it on the nodes it launches
// (api.AnnotationPoolHash); a node whose annotation differs from its pool's current hash is drifted.
// The allowed types, families, zones, capacity types, requirements, MIG layouts and gpu.driver are
// left out: the disruption plan checks a node against them directly (gpu.driver by the GPU
// operator's deploy labels), so that widening them drifts nothing.
// Map order, taint order and nil versus empty do not change the hash.
func PoolHash(pl *Pool) string {
	type gpu struct {
		Sharing          api.Sharing `json:"sharing,omitempty"`
		Replicas         int         `json:"replicas,omitempty"`
		MIGStrategy      string      `json:"migStrategy,omitempty"`
		RenameShared     bool        `json:"renameShared,omitempty"`
		ConsumableMemory bool        `json:"consumableMemory,omitempty"`
	}
	var shape struct {
		Labels map[string]string `json:"labels"`
		Taints []string          `json:"taints"`
		GPU    gpu               `json:"gpu"`
	}
	shape.Labels = map[string]string{}
	for k, v := range pl.Labels {
		shape.Labels[k] = v
	}
	shape.Taints = []string{}
	for _, t := range pl.Taints {
		shape.Taints = append(shape.Taints, t.Key+"="+t.Value+":"+string(t.Effect))
	}
	slices.Sort(shape.Taints)
	// Spellings of the same configuration hash alike: no sharing is exclusive, time-slicing and
	// MPS default to 4 replicas and MIG to the mixed strategy (as the simulator plans them).
	shape.GPU.Sharing = api.Exclusive
	if g := pl.GPU; g != nil {
		shape.GPU = gpu{Sharing: g.Sharing, Replicas: g.Replicas, MIGStrategy: g.MIGStrategy,
			RenameShared: g.RenameShared, ConsumableMemory: g.ConsumableMemory}
		switch g.Sharing {
		case "":
			shape.GPU.Sharing = api.Exclusive
		case api.TimeSlicing, api.MPS:
			if shape.GPU.Replicas == 0 {
				shape.GPU.Replicas = DefaultReplicas
			}
		case api.MIG, api.DynamicMIG:
			if shape.GPU.MIGStrategy == "" {
				shape.GPU.MIGStrategy = "mixed"
			}
		}
	}
	b, _ := json.Marshal(shape) // strings, ints and bools: never fails; map keys are sorted
	sum := sha256.Sum256(append([]byte(poolHashVersion+"\n"), b...))
	return poolHashVersion + "-" + strings.ToLower(hex.EncodeToString(sum[:8]))
}
