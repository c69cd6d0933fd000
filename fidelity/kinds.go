package fidelity

import (
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tiler-dev/tiler/api/policy"
)

// Kind is a constraint kind a pod carries; reports tally agreement per kind.
type Kind string

// The constraint kinds. Every pod is also counted under KindAll; a pod with none of the others is
// KindPlain.
const (
	KindAll              Kind = "all"
	KindPlain            Kind = "plain"
	KindNodeSelector     Kind = "node-selector"
	KindNodeAffinity     Kind = "node-affinity"
	KindToleration       Kind = "toleration"
	KindZoneSpread       Kind = "zone-spread"
	KindHostnameSpread   Kind = "hostname-spread"
	KindAntiAffinity     Kind = "anti-affinity"
	KindZoneAntiAffinity Kind = "zone-anti-affinity"
	KindPodAffinity      Kind = "pod-affinity"
	KindPriority         Kind = "priority"
	KindGPU              Kind = "gpu"
	KindTimeSlicedGPU    Kind = "gpu-time-sliced"
	KindMIG              Kind = "mig"
	KindGang             Kind = "gang"
	KindGangNode         Kind = "gang-node"
	KindGangZone         Kind = "gang-zone"
	KindDRA              Kind = "dra"
	// KindDRAConsumable is a DRA pod where a pool publishes GPUs with consumable memory;
	// KindDRADynamicMIG one where a pool publishes dynamic MIG partitions.
	KindDRAConsumable Kind = "dra-consumable"
	KindDRADynamicMIG Kind = "dra-dynamic-mig"
	// KindGPUDriver is a GPU pod, plain nvidia.com/gpu or with ResourceClaims, where a pool pins
	// who publishes its GPUs (gpu.driver: the device plugin or the DRA driver).
	KindGPUDriver Kind = "gpu-driver"
	// KindSoft is a pod with a soft constraint: preferred node or pod (anti-)affinity, or
	// ScheduleAnyway topology spread. The plan honours it only among equally cheap placements
	// (within the policy's softConstraints.maxPremiumPercent), and kube-scheduler only by score,
	// so a moved pod of this kind is expected now and then.
	KindSoft Kind = "soft"
)

// gpuTaintKey is the taint key GPU pools carry and GPU pods tolerate; tolerating it does not make
// a pod KindToleration.
const gpuTaintKey = "nvidia.com/gpu"

// Kinds returns the constraint kinds of a pod, sorted, without KindAll. pol decides what an
// nvidia.com/gpu request is: a time-sliced replica when a pool of the policy shares its GPUs by
// time-slicing or MPS, else a whole GPU (nvidia.com/gpu.shared is always a replica); and which
// kind of DRA pool a pod's claims meet.
func Kinds(p *corev1.Pod, pol *policy.CostPolicy) []Kind {
	set := map[Kind]bool{}
	if len(p.Spec.NodeSelector) > 0 {
		set[KindNodeSelector] = true
	}
	a := p.Spec.Affinity
	if a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		set[KindNodeAffinity] = true
	}
	for _, t := range p.Spec.Tolerations {
		if t.Key != gpuTaintKey {
			set[KindToleration] = true
		}
	}
	if a != nil && (a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
		set[KindSoft] = true
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			set[KindSoft] = true
			continue
		}
		switch c.TopologyKey {
		case corev1.LabelTopologyZone:
			set[KindZoneSpread] = true
		case corev1.LabelHostname:
			set[KindHostnameSpread] = true
		}
	}
	if a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelHostname {
				set[KindAntiAffinity] = true
			} else {
				set[KindZoneAntiAffinity] = true
			}
		}
	}
	if a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		set[KindPodAffinity] = true
	}
	if p.Spec.PriorityClassName != "" {
		set[KindPriority] = true
	}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		for name := range c.Resources.Limits {
			switch {
			case name == api.ResourceGPUShared, name == api.ResourceGPU && sharesGPUs(pol):
				set[KindTimeSlicedGPU] = true
			case name == api.ResourceGPU:
				set[KindGPU] = true
				if pinsDriver(pol) {
					set[KindGPUDriver] = true
				}
			case strings.HasPrefix(string(name), "nvidia.com/mig-"):
				set[KindMIG] = true
			}
		}
	}
	if len(p.Spec.ResourceClaims) > 0 {
		set[KindDRA] = true
		consumable, dynamicMIG := draPools(pol)
		if consumable {
			set[KindDRAConsumable] = true
		}
		if dynamicMIG {
			set[KindDRADynamicMIG] = true
		}
		if pinsDriver(pol) {
			set[KindGPUDriver] = true
		}
	}
	if p.Labels[api.LabelGang] != "" {
		set[KindGang] = true
		switch p.Labels[api.LabelTopology] {
		case "node":
			set[KindGangNode] = true
		case "zone":
			set[KindGangZone] = true
		}
	}
	if len(set) == 0 {
		set[KindPlain] = true
	}
	out := make([]Kind, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// sharesGPUs reports whether a pool of the policy shares GPUs by time-slicing or MPS.
func sharesGPUs(pol *policy.CostPolicy) bool {
	if pol == nil {
		return false
	}
	for _, pl := range pol.Pools {
		if pl.GPU != nil && (pl.GPU.Sharing == api.TimeSlicing || pl.GPU.Sharing == api.MPS) {
			return true
		}
	}
	return false
}

// draPools reports whether a pool of the policy publishes consumable GPU memory, and whether
// one publishes dynamic MIG partitions.
func draPools(pol *policy.CostPolicy) (consumable, dynamicMIG bool) {
	if pol == nil {
		return false, false
	}
	for _, pl := range pol.Pools {
		if pl.GPU == nil {
			continue
		}
		consumable = consumable || pl.GPU.ConsumableMemory
		dynamicMIG = dynamicMIG || pl.GPU.Sharing == api.DynamicMIG
	}
	return consumable, dynamicMIG
}

// pinsDriver reports whether a pool of the policy pins who publishes its GPUs (gpu.driver).
func pinsDriver(pol *policy.CostPolicy) bool {
	if pol == nil {
		return false
	}
	for _, pl := range pol.Pools {
		if pl.GPU != nil && pl.GPU.Driver != "" {
			return true
		}
	}
	return false
}

func gvk(apiVersion, kind string) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}
