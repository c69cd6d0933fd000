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
