package replay

import (
	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/policy"
)

// Namespace holds the replayed pods.
const Namespace = "replay"

// podObject is the Pod a workload pod is under a policy: one container with the pod's CPU and
// memory, and its GPUs as the policy asks for them (shared replicas or whole GPUs), tolerating the
// GPU pools' taint, its GPU models as node affinity on tiler.dev/gpu-model, naming its gang's
// PodGroup, labelled app=<its Deployment> (app=replay for a pod of its own), owned by a Job (so
// that consolidation may move it), pending from created.
func podObject(p *Pod, share bool, created metav1.Time) *corev1.Pod {
	req := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(p.CPUMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(p.MemoryMiB<<20, resource.BinarySI),
	}
	if units, name := gpuRequest(p, share); units > 0 {
		req[name] = *resource.NewQuantity(units, resource.DecimalSI)
	}
	yes := true
	o := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: Namespace, UID: types.UID(Namespace + "/" + p.Name),
			CreationTimestamp: created, Labels: podLabels(p),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: p.Name, UID: types.UID("job-" + p.Name), Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trace",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: gpuLimits(req)}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if p.Gang != "" {
		name := p.Gang
		o.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	}
	if p.NumGPUs > 0 {
		t := policy.DefaultGPUTaint
		o.Spec.Tolerations = []corev1.Toleration{{Key: t.Key, Operator: corev1.TolerationOpExists, Effect: t.Effect}}
		if len(p.GPUModels) > 0 {
			o.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: api.LabelGPUModel, Operator: corev1.NodeSelectorOpIn, Values: p.GPUModels}}}}}}}
		}
	}
	return o
}

// PodObject is the Pod a workload pod is under a policy (share: the policy shares GPUs), as the
// replay creates it at created: what a cross-check against a real API server creates too.
func PodObject(p *Pod, share bool, created metav1.Time) *corev1.Pod {
	return podObject(p, share, created)
}

// gpuRequest is the extended resource and count a pod asks for: ⌈milli/100⌉ replicas of
// nvidia.com/gpu.shared for a fraction of one GPU when sharing, else whole nvidia.com/gpu.
func gpuRequest(p *Pod, share bool) (int64, corev1.ResourceName) {
	switch {
	case p.NumGPUs == 0:
		return 0, ""
	case share && p.NumGPUs == 1 && p.GPUMilli < 1000:
		per := int64(1000 / SharedReplicas)
		return (p.GPUMilli + per - 1) / per, api.ResourceGPUShared
	}
	return int64(p.NumGPUs), api.ResourceGPU
}

// gpuLimits copies the extended resources of the requests into limits, as the API server
// requires for them.
func gpuLimits(req corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range req {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q
		}
	}
	return out
}

// podLabels are a workload pod's labels: app=<its Deployment>, or app=replay for a pod of its own.
func podLabels(p *Pod) map[string]string {
	if p.Workload != "" {
		return map[string]string{"app": p.Workload}
	}
	return map[string]string{"app": "replay"}
}

// podTemplate is the pod template of a Deployment whose replicas are p: the labels and spec of
// podObject.
func podTemplate(p *Pod, share bool) *corev1.PodTemplateSpec {
	o := podObject(p, share, metav1.Time{})
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Labels: o.Labels}, Spec: o.Spec}
}

// podGroups are the workload's gangs as native PodGroups of gang policy.
func podGroups(gangs []Gang) []*schedulingv1beta1.PodGroup {
	out := make([]*schedulingv1beta1.PodGroup, 0, len(gangs))
	for _, g := range gangs {
		out = append(out, &schedulingv1beta1.PodGroup{
			TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: Namespace, UID: types.UID("podgroup-" + g.Name)},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(g.MinCount)}}},
		})
	}
	return out
}
