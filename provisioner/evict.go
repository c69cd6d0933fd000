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
// then completes an eviction the budget approved. Budgets select as the Eviction API does
// (budgetSelector).
func chargedBy(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) string {
	var name string
	for _, b := range pdbs {
		if budgetSelector(b, p) == nil {
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

// budgetSelector returns the selector of the budget b when b selects p as the Eviction API
// matches them (in p's namespace; an empty or unparsable selector selects nothing), else nil.
func budgetSelector(b *policyv1.PodDisruptionBudget, p *corev1.Pod) labels.Selector {
	if b.Namespace != p.Namespace {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
		return nil
	}
	return sel
}

// budgetCount is a drain pass's own count of the PodDisruptionBudgets' healthy pods. The
// Eviction API judges by a budget's status alone, and kube-controller-manager computes that
// status from a pod cache of its own, which can lag the pods right after a scale-down: most
// likely what let an e2e run evict both pods of a drained node 55 ms apart, just after a scale
// from ten replicas to four under maxUnavailable 1. The drain asks the API only when this count
// allows the eviction too (hold). A budget's healthy pods (Ready, not being deleted) are counted
// once per pass, from its namespace's pods, and each eviction of the pass takes one off (evicted).
// Budgets select as budgetSelector says.
type budgetCount struct {
	pdbs []*policyv1.PodDisruptionBudget
	// podsIn lists a namespace's pods (the informer's namespace index).
	podsIn  func(ns string) ([]*corev1.Pod, error)
	healthy map[*policyv1.PodDisruptionBudget]int
}

func newBudgetCount(pdbs []*policyv1.PodDisruptionBudget, podsIn func(ns string) ([]*corev1.Pod, error)) *budgetCount {
	return &budgetCount{pdbs: pdbs, podsIn: podsIn, healthy: map[*policyv1.PodDisruptionBudget]int{}}
}

// selected is a budget that selects a pod, with its selector.
type selected struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

// selecting returns the budgets that select p.
func (b *budgetCount) selecting(p *corev1.Pod) []selected {
	var out []selected
	for _, pdb := range b.pdbs {
		if sel := budgetSelector(pdb, p); sel != nil {
			out = append(out, selected{pdb, sel})
		}
	}
	return out
}

// hold returns a budget selecting p whose healthy pods, counted here, would fall below its
// status.desiredHealthy without p ("" for none, and for a pod that is not Ready: it takes
// nothing from a healthy count, and the budget's unhealthyPodEvictionPolicy is the API's to
// apply). An error reading the pods holds the eviction too.
func (b *budgetCount) hold(p *corev1.Pod) (string, error) {
	if p.DeletionTimestamp != nil || !podReady(p) {
		return "", nil
	}
	for _, s := range b.selecting(p) {
		pdb := s.pdb
		n, ok := b.healthy[pdb]
		if !ok {
			pods, err := b.podsIn(pdb.Namespace)
			if err != nil {
				return pdb.Namespace + "/" + pdb.Name, err
			}
			for _, q := range pods {
				if q.DeletionTimestamp == nil && podReady(q) && s.sel.Matches(labels.Set(q.Labels)) {
					n++
				}
			}
			b.healthy[pdb] = n
		}
		if n-1 < int(pdb.Status.DesiredHealthy) {
			return pdb.Namespace + "/" + pdb.Name, nil
		}
	}
	return "", nil
}

// evicted takes p, just evicted, off the healthy count of its budgets.
func (b *budgetCount) evicted(p *corev1.Pod) {
	if !podReady(p) {
		return
	}
	for _, s := range b.selecting(p) {
		if n, ok := b.healthy[s.pdb]; ok {
			b.healthy[s.pdb] = n - 1
		}
	}
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
