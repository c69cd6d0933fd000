package snapshot

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// Snapshot is the cluster state a simulation starts from. Slices are in the order the objects were
// read; the simulator sorts what it needs.
type Snapshot struct {
	// Now is the time the snapshot was taken; the simulator reads no clock.
	Now                    time.Time
	Nodes                  []*corev1.Node
	Pods                   []*corev1.Pod
	PriorityClasses        []*schedulingv1.PriorityClass
	DaemonSets             []*appsv1.DaemonSet
	DeviceClasses          []*resourcev1.DeviceClass
	ResourceClaims         []*resourcev1.ResourceClaim
	ResourceClaimTemplates []*resourcev1.ResourceClaimTemplate
	ResourceSlices         []*resourcev1.ResourceSlice
	// PodDisruptionBudgets limit how many of the pods they select may be evicted at once; only the
	// disruption plan (simulator.PlanDisruption) reads them.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// Namespaces carry the labels a cost-policy team's namespaceSelector matches.
	Namespaces []*corev1.Namespace
	// ResourceQuotas bound what the simulation plans for their namespace's pending pods
	// (simulator/teams.go).
	ResourceQuotas []*corev1.ResourceQuota
	// PodGroups are Kubernetes' native gangs (scheduling.k8s.io/v1beta1, gate GenericWorkload):
	// pods naming one in spec.schedulingGroup.podGroupName are planned all-or-nothing when its
	// policy is gang (at least spec.schedulingPolicy.gang.minCount of them), as the
	// kube-scheduler binds them. Clusters without the API have none.
	PodGroups []*schedulingv1beta1.PodGroup
	// Warnings lists what the decoder skipped (unknown kinds).
	Warnings []string
}

// IsPending reports whether a pod waits for a node: not bound, not terminating, not finished, not
// gated (IsGated) and not owned by a DaemonSet (DaemonSet pods are counted as per-node overhead instead).
func IsPending(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if IsGated(p) {
		return false
	}
	return !IsDaemonSetPod(p)
}

// IsGated reports whether the pod has scheduling gates (spec.schedulingGates, e.g. Kueue's
// kueue.x-k8s.io/admission): the scheduler does not consider it, so nothing is bought for it until
// its gates are removed.
func IsGated(p *corev1.Pod) bool { return len(p.Spec.SchedulingGates) > 0 }

// IsDaemonSetPod reports whether a DaemonSet controls the pod.
func IsDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// IsActive reports whether a bound pod still holds its node's resources.
func IsActive(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
