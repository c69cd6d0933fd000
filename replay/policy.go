package replay

import (
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/policy"
)

// Consolidation is how a policy gives capacity back besides removing empty nodes.
type Consolidation string

// The consolidation modes.
const (
	// ConsolidateNone removes only nodes that stayed empty for the controller's EmptyNodeTTL.
	ConsolidateNone Consolidation = "none"
	// ConsolidateTiler is simulator.PlanDisruption: delete or replace under-used nodes.
	ConsolidateTiler Consolidation = "tiler"
	// ConsolidateCA is the Cluster Autoscaler's rule (simulator.DisruptionOptions.
	// ClusterAutoscalerRule): a node under 50 % utilised whose pods fit elsewhere is deleted, after
	// it has been a candidate for the pool's consolidateAfter.
	ConsolidateCA Consolidation = "cluster-autoscaler"
)

// SharedReplicas is the time-slicing replica count of the shared GPU pool of policies that share
// GPUs: a fractional request of m milli-GPU asks ⌈m/100⌉ replicas of nvidia.com/gpu.shared.
const SharedReplicas = 10

// Policy is one way of provisioning the same workload: the cost policy the controller decides
// with, how pods ask for GPUs, and how capacity is given back.
type Policy struct {
	Name string
	// Description is one line for reports.
	Description string
	Cost        *policy.CostPolicy
	// ShareGPUs: a pod asking a fraction of one GPU asks time-sliced replicas on the shared pool;
	// otherwise every GPU request is rounded up to whole GPUs.
	ShareGPUs     bool
	Consolidation Consolidation
	// Forecast: the pre-scaler forecasts the workload's Forecasts and the controller buys ahead
	// for the replicas they expect (prescale.go).
	Forecast bool
}

// The policy names.
const (
	PolicyTiler                = "tiler"
	PolicyTilerNoForecast      = "tiler-no-forecast"
	PolicyTilerNoConsolidation = "tiler-no-consolidation"
	PolicyWholeGPU             = "whole-gpu"
	PolicyKarpenterLike        = "karpenter-like"
	// PolicyClairvoyant names the clairvoyant bound's row in reports (bound.go); it is no Policy.
	PolicyClairvoyant = "clairvoyant-bound"
)

// WholeGPUNodeGroups are the fixed instance types of the whole-gpu baseline's node groups, as a
// Cluster Autoscaler setup would declare them: general-purpose CPU nodes, and 4- and 8-GPU T4
// nodes (the cheapest GPU of the catalog, and the 8-GPU size the trace's largest pods need).
var WholeGPUNodeGroups = struct{ CPU, GPU []api.InstanceTypeName }{
	CPU: []api.InstanceTypeName{"m7i.8xlarge", "m7i.16xlarge"},
	GPU: []api.InstanceTypeName{"g4dn.12xlarge", "g4dn.metal"},
}

// Policies returns the policies compared, in report order, buying the given capacity types
// (nil: on-demand only; spot instances are interrupted as Config.SpotInterruptionRate says).
func Policies(capacity []api.CapacityType) ([]Policy, error) {
	if len(capacity) == 0 {
		capacity = []api.CapacityType{api.OnDemand}
	}
	tiler := costPolicy(capacity, true, nil, nil, nil)
	karp := costPolicy(capacity, false, nil, nil, nil)
	tenMin := &policy.Duration{Duration: metav1.Duration{Duration: 10 * time.Minute}}
	ca := costPolicy(capacity, false, WholeGPUNodeGroups.CPU, WholeGPUNodeGroups.GPU,
		&policy.Disruption{Consolidation: policy.WhenUnderutilized, ConsolidateAfter: tenMin})
	out := []Policy{
		{Name: PolicyTiler, Description: "Simulate per batch, GPU sharing (time-slicing ×10), consolidation, forecast pre-scaling", Cost: tiler,
			ShareGPUs: true, Consolidation: ConsolidateTiler, Forecast: true},
		{Name: PolicyTilerNoForecast, Description: "tiler without the forecast (reactive: buys for pending pods only)", Cost: tiler,
			ShareGPUs: true, Consolidation: ConsolidateTiler},
		{Name: PolicyTilerNoConsolidation, Description: "tiler without consolidation (empty nodes removed after the TTL)", Cost: tiler,
			ShareGPUs: true, Consolidation: ConsolidateNone, Forecast: true},
		{Name: PolicyWholeGPU, Description: "whole GPUs, node groups of fixed types, CA scale-down (<50 % for 10 min)", Cost: ca,
			Consolidation: ConsolidateCA},
		{Name: PolicyKarpenterLike, Description: "cheapest fit per node, whole GPUs (no sharing, no MIG), consolidation", Cost: karp,
			Consolidation: ConsolidateTiler},
	}
	for _, p := range out {
		if err := p.Cost.Validate(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
	}
	return out, nil
}

// costPolicy builds the pools: "cpu" (types without GPUs), "gpu" (exclusive GPUs, tainted as GPU
// pools are) and, with share, "gpu-shared" (time-sliced GPUs advertised as nvidia.com/gpu.shared).
// cpuTypes and gpuTypes restrict the types (nil: all).
func costPolicy(capacity []api.CapacityType, share bool, cpuTypes, gpuTypes []api.InstanceTypeName, d *policy.Disruption) *policy.CostPolicy {
	noGPU := []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}}
	gpu := []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpExists}}
	p := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{
		{Name: "cpu", CapacityTypes: capacity, InstanceTypes: cpuTypes, Requirements: noGPU, Disruption: d},
		{Name: "gpu", CapacityTypes: capacity, InstanceTypes: gpuTypes, Requirements: gpu, Disruption: d,
			Taints: []corev1.Taint{policy.DefaultGPUTaint}},
	}}
	if share {
		p.Pools = append(p.Pools, policy.Pool{Name: "gpu-shared", CapacityTypes: capacity, InstanceTypes: gpuTypes,
			Requirements: gpu, Disruption: d, Taints: []corev1.Taint{policy.DefaultGPUTaint},
			GPU: &policy.GPUPolicy{Sharing: api.TimeSlicing, Replicas: SharedReplicas, RenameShared: true}})
	}
	return p
}
