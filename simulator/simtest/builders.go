package simtest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/catalog"
)

// PodBuilder builds a pending pod step by step.
type PodBuilder struct{ p *corev1.Pod }

// Pod starts a pending pod in namespace "default" with one container.
func Pod(name string) *PodBuilder {
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	p.Name, p.Namespace = name, "default"
	p.Labels = map[string]string{}
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}
	p.Status.Phase = corev1.PodPending
	return &PodBuilder{p}
}

// Namespace sets the namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.p.Namespace = ns; return b }

// Req adds a request, e.g. Req("cpu", "500m").
func (b *PodBuilder) Req(name, qty string) *PodBuilder {
	b.p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(qty)
	return b
}

// CPU and Mem are shorthands for Req.
func (b *PodBuilder) CPU(q string) *PodBuilder { return b.Req("cpu", q) }

// Mem sets the memory request.
func (b *PodBuilder) Mem(q string) *PodBuilder { return b.Req("memory", q) }

// GPU requests whole GPUs through the device plugin (requests and limits, as extended resources need).
func (b *PodBuilder) GPU(n int) *PodBuilder {
	q := *resource.NewQuantity(int64(n), resource.DecimalSI)
	c := &b.p.Spec.Containers[0]
	c.Resources.Requests["nvidia.com/gpu"] = q
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits["nvidia.com/gpu"] = q
	return b.Tolerate("nvidia.com/gpu")
}

// Label sets a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder { b.p.Labels[k] = v; return b }

// NodeSelector adds a node selector entry.
func (b *PodBuilder) NodeSelector(k, v string) *PodBuilder {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}

// Require adds a required node affinity expression (ANDed into the single term).
func (b *PodBuilder) Require(key string, op corev1.NodeSelectorOperator, values ...string) *PodBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}}
	}
	t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return b
}

// Tolerate tolerates any taint with the key.
func (b *PodBuilder) Tolerate(key string) *PodBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return b
}

// Spread adds a topology spread constraint over pods with label app=<value of the pod's app label>.
func (b *PodBuilder) Spread(key string, maxSkew int32, hard bool) *PodBuilder {
	w := corev1.ScheduleAnyway
	if hard {
		w = corev1.DoNotSchedule
	}
	b.p.Spec.TopologySpreadConstraints = append(b.p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: w,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": b.p.Labels["app"]}}})
	return b
}

// AntiAffinity adds a required pod anti-affinity term against pods with app=<app>.
func (b *PodBuilder) AntiAffinity(key, app string) *PodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}})
	return b
}

// Affinity adds a required pod affinity term towards pods with app=<app>.
func (b *PodBuilder) Affinity(key, app string) *PodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}})
	return b
}

// PreferNode adds a preferred node affinity term: key In values, with the weight.
func (b *PodBuilder) PreferNode(weight int32, key string, values ...string) *PodBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}})
	return b
}

// PreferAffinity adds a preferred pod affinity term towards pods with app=<app>.
func (b *PodBuilder) PreferAffinity(weight int32, key, app string) *PodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}})
	return b
}

// PreferAntiAffinity adds a preferred pod anti-affinity term against pods with app=<app>.
func (b *PodBuilder) PreferAntiAffinity(weight int32, key, app string) *PodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}})
	return b
}

// Priority sets spec.priority.
func (b *PodBuilder) Priority(p int32) *PodBuilder { b.p.Spec.Priority = &p; return b }

// Gang makes the pod a member of a tiler.dev gang of the given size and topology ("", node, zone).
func (b *PodBuilder) Gang(name string, size int, topology string) *PodBuilder {
	b.p.Labels[api.LabelGang] = name
	b.p.Labels[api.LabelGangSize] = fmt.Sprint(size)
	if topology != "" {
		b.p.Labels[api.LabelTopology] = topology
	}
	return b
}

// PodGroup makes the pod a member of the native PodGroup name (spec.schedulingGroup).
func (b *PodBuilder) PodGroup(name string) *PodBuilder {
	b.p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	return b
}

// GangPodGroup is a native PodGroup (scheduling.k8s.io/v1beta1) of gang policy needing minCount
// members, in namespace default.
func GangPodGroup(name string, minCount int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}},
	}
}

// On binds the pod to a node (a running pod).
func (b *PodBuilder) On(node string) *PodBuilder {
	b.p.Spec.NodeName = node
	b.p.Status.Phase = corev1.PodRunning
	return b
}

func (b *PodBuilder) affinity() *corev1.Affinity {
	if b.p.Spec.Affinity == nil {
		b.p.Spec.Affinity = &corev1.Affinity{}
	}
	return b.p.Spec.Affinity
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.p }

// Node builds a Ready node with the given allocatable and zone.
func Node(name, instanceType, zone string, alloc corev1.ResourceList) *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name = name
	n.Labels = map[string]string{corev1.LabelHostname: name, corev1.LabelInstanceTypeStable: instanceType,
		corev1.LabelTopologyZone: zone, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
	n.Status.Allocatable = alloc
	n.Status.Capacity = alloc
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// Resources parses name=quantity pairs into a ResourceList.
func Resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// Controlled gives the pod a controller (kind, name), as a ReplicaSet or Job owns its pods: the
// disruption plan moves only pods something recreates.
func (b *PodBuilder) Controlled(kind, name string) *PodBuilder {
	yes := true
	b.p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name,
		UID: types.UID(kind + "-" + name), Controller: &yes}}
	return b
}

// Annotate sets an annotation.
func (b *PodBuilder) Annotate(k, v string) *PodBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

// WithControllers gives every pod without owner a ReplicaSet controller named after its app
// label (or itself), so that random scenarios are movable.
func WithControllers(pods []*corev1.Pod) {
	for _, p := range pods {
		if len(p.OwnerReferences) > 0 {
			continue
		}
		name := p.Labels["app"]
		if name == "" {
			name = p.Name
		}
		(&PodBuilder{p}).Controlled("ReplicaSet", name)
	}
}

// ManagedNode builds a Ready node of the catalog type as Tiler would have bought it for pool:
// the offering's labels (zone, region, capacity type, instance type, GPU count), allocatable
// from the catalog's overhead formula plus the GPUs as nvidia.com/gpu (whole GPUs), created at
// created. It panics on a type the catalog lacks (a test bug).
func ManagedNode(cat *catalog.Catalog, name, pool string, typ api.InstanceTypeName, zone string, ct api.CapacityType, created time.Time) *corev1.Node {
	it, ok := cat.Type(typ)
	if !ok {
		panic(fmt.Sprintf("simtest: catalog %s has no type %s", cat.Name, typ))
	}
	cpu, mem, pods := catalog.Allocatable(cat.Provider, it)
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	n := Node(name, string(typ), zone, alloc)
	n.CreationTimestamp = metav1.NewTime(created)
	n.Labels[corev1.LabelTopologyRegion] = cat.Region
	n.Labels[api.LabelPool] = pool
	n.Labels[api.LabelCapacityType] = string(ct)
	if it.GPU.Count > 0 {
		n.Labels[api.LabelGPUCount] = strconv.Itoa(it.GPU.Count)
		n.Labels[api.LabelGPUModel] = it.GPU.Model
		n.Status.Allocatable[api.ResourceGPU] = *resource.NewQuantity(int64(it.GPU.Count), resource.DecimalSI)
	}
	n.Status.Capacity = n.Status.Allocatable
	return n
}
