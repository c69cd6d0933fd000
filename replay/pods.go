package replay

import (
	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/policy"
)

// Namespace holds the replayed pods.
const Namespace = "replay"

// podObject is the Pod a workload pod is under a policy: one container with the pod's CPU and
// memory, and its GPUs as the policy asks for them (shared replicas or whole GPUs), tolerating the
// GPU pools' taint, its GPU models as node affinity on tiler.dev/gpu-model, owned by a Job (so
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
			CreationTimestamp: created, Labels: map[string]string{"app": "replay"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: p.Name, UID: types.UID("job-" + p.Name), Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trace",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: gpuLimits(req)}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
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
