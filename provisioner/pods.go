package provisioner

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// provisionable reports whether a pod waits for capacity: the scheduler marked it
// PodScheduled=False with reason Unschedulable, it is unbound, not terminating, not a DaemonSet
// pod, and not nominated by the scheduler for preemption. A pod with scheduling gates (Kueue's
// kueue.x-k8s.io/admission until Kueue admits its workload) is not pending (snapshot.IsGated)
// and its PodScheduled condition says SchedulingGated: it never is provisionable
// (TestE2EKueue).
func provisionable(p *corev1.Pod) bool {
	if !snapshot.IsPending(p) {
		return false
	}
	if p.Status.NominatedNodeName != "" && p.Annotations[api.AnnotationNominatedBy] != "tiler" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
			(c.Reason == corev1.PodReasonUnschedulable || c.Reason == corev1.PodReasonSchedulerError && inNativeGang(p)) {
			return true
		}
	}
	return false
}

// unjudged reports whether a pending pod waits for the default scheduler's first attempt: it has
// no PodScheduled condition yet. A batch plans such pods, created within Config.PlanUnjudgedWithin,
// together with the provisionable ones (Decide), so that a burst is planned whole.
func unjudged(p *corev1.Pod) bool {
	if !snapshot.IsPending(p) || p.Status.NominatedNodeName != "" {
		return false
	}
	if p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// inNativeGang reports whether the pod names a PodGroup (spec.schedulingGroup). kube-scheduler
// v1.37.2 fails a gang that does not fit with a scheduler error rather than Unschedulable (its
// DynamicResources PodGroupPostFilter answers "not found" for pods without ResourceClaims), so
// for these pods SchedulerError also means "waits for capacity"; the simulation decides whether
// capacity would help.
func inNativeGang(p *corev1.Pod) bool {
	return p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil
}

// unschedulableSince returns when the pod became unschedulable (the condition's transition time).
func unschedulableSince(p *corev1.Pod) (t corev1.PodCondition, ok bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// requestsGPU reports whether any container requests an NVIDIA extended resource or the pod
// uses a DRA claim.
func requestsGPU(p *corev1.Pod) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		for name := range c.Resources.Requests {
			if len(name) > 11 && name[:11] == "nvidia.com/" {
				return true
			}
		}
		for name := range c.Resources.Limits {
			if len(name) > 11 && name[:11] == "nvidia.com/" {
				return true
			}
		}
	}
	return false
}
