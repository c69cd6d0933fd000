package provisioner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type policyv1Eviction = policyv1.Eviction

// pdbChargeTimeout is how long kube-controller-manager's disruption controller keeps a pod in a
// PodDisruptionBudget's status.disruptedPods when the pod is not deleted (its DeletionTimeout):
// the budget counts the pod as disrupted, and refuses other evictions, until then.
const pdbChargeTimeout = 2 * time.Minute

// chargedBy returns the budget that already charges an eviction of p, when every
// PodDisruptionBudget that selects p lists it in status.disruptedPods less than
// pdbChargeTimeout ago (at now), and at least one selects it ("" otherwise). The Eviction API
// charges the budget first and then deletes the pod; a client that dies in between (a
// controller killed mid-eviction) ends the request with the pod charged and not deleted, and the
// budget refuses every eviction, this pod's included, until the charge expires. Deleting the pod
// then completes an eviction the budget approved. Budgets select as the Eviction API does: in
// the pod's namespace, and an empty or unparsable selector selects nothing.
func chargedBy(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) string {
	var name string
	for _, b := range pdbs {
		if b.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		at, ok := b.Status.DisruptedPods[p.Name]
		if !ok || now.Sub(at.Time) >= pdbChargeTimeout {
			return ""
		}
		name = b.Namespace + "/" + b.Name
	}
	return name
}

// overBudget returns a PodDisruptionBudget that selects p and that, counted on the controller's
// own view of the pods, allows no disruption now ("" for none): its healthy pods (Ready, not
// being deleted, not evicted earlier in this pass) would fall below its status.desiredHealthy.
// The Eviction API judges by the budget's status alone, and kube-controller-manager computes
// that status from a pod cache of its own, which can lag the pods right after a scale-down: most
// likely what let an e2e run evict both pods of a drained node 55 ms apart, just after a scale
// from ten replicas to four under maxUnavailable 1. The drain asks the API only when this count allows
// it too; a pod that is not Ready takes nothing from a budget's healthy count, and is left to
// the API (a budget's unhealthyPodEvictionPolicy decides for it). Budgets select as in chargedBy.
func overBudget(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod, evicted map[string]bool) string {
	if p.DeletionTimestamp != nil || !podReady(p) {
		return ""
	}
	for _, b := range pdbs {
		if b.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		healthy := 0
		for _, q := range pods {
			if q.Namespace == b.Namespace && q.DeletionTimestamp == nil && !evicted[q.Namespace+"/"+q.Name] && podReady(q) &&
				sel.Matches(labels.Set(q.Labels)) {
				healthy++
			}
		}
		if healthy-1 < int(b.Status.DesiredHealthy) {
			return b.Namespace + "/" + b.Name
		}
	}
	return ""
}

// podReady reports whether the pod's Ready condition is True, as a budget counts healthy pods.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
