package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runPods plays the kubelet for the pods bound to the running instances' Nodes (Config.RunPods):
// a terminating pod is deleted at once (its containers "stopped"), and any other pod that is not
// Running and Ready yet is marked so, started at now. A node whose kubelet is down
// (SetKubeletDown) runs nothing.
func (p *Provider) runPods(ctx context.Context, recs []record, now time.Time) error {
	nodes := map[string]bool{}
	for _, r := range recs {
		if r.State == StateRunning && !p.kubeletDown(r.ID) {
			nodes[r.NodeName] = true
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	items, ok := p.cachedPodsOn(nodes)
	if !ok {
		pods, err := p.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		items = pods.Items
	}
	var errs []error
	zero := int64(0)
	for i := range items {
		pod := &items[i]
		if !nodes[pod.Spec.NodeName] {
			continue
		}
		if pod.DeletionTimestamp != nil {
			err := p.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("ending pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || podRunningReady(pod) {
			continue
		}
		t := metav1.NewTime(now)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.StartTime = &t
		setPodCondition(pod, corev1.PodScheduled, t)
		setPodCondition(pod, corev1.PodInitialized, t)
		setPodCondition(pod, corev1.ContainersReady, t)
		setPodCondition(pod, corev1.PodReady, t)
		if _, err := p.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil &&
			!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("running pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// podRunningReady reports whether the pod is Running with Ready true.
func podRunningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setPodCondition sets the condition to True at t.
func setPodCondition(p *corev1.Pod, typ corev1.PodConditionType, t metav1.Time) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			if p.Status.Conditions[i].Status != corev1.ConditionTrue {
				p.Status.Conditions[i].Status = corev1.ConditionTrue
				p.Status.Conditions[i].LastTransitionTime = t
			}
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: t})
}
