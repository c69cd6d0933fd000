package provisioner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestChargedBy(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "app", Labels: map[string]string{"app": "web", "tier": "front"}}}
	budget := func(ns, name string, sel map[string]string, charged map[string]time.Duration) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if sel != nil {
			b.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		}
		for p, ago := range charged {
			if b.Status.DisruptedPods == nil {
				b.Status.DisruptedPods = map[string]metav1.Time{}
			}
			b.Status.DisruptedPods[p] = metav1.NewTime(now.Add(-ago))
		}
		return b
	}
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name string
		pdbs []*policyv1.PodDisruptionBudget
		want string
	}{
		{"no budget", nil, ""},
		{"charged a second ago", []*policyv1.PodDisruptionBudget{budget("app", "web", web, map[string]time.Duration{"web-1": time.Second})}, "app/web"},
		{"another pod charged", []*policyv1.PodDisruptionBudget{budget("app", "web", web, map[string]time.Duration{"web-2": time.Second})}, ""},
		{"charge expired", []*policyv1.PodDisruptionBudget{budget("app", "web", web, map[string]time.Duration{"web-1": pdbChargeTimeout})}, ""},
		{"charge about to expire", []*policyv1.PodDisruptionBudget{budget("app", "web", web, map[string]time.Duration{"web-1": pdbChargeTimeout - time.Second})}, "app/web"},
		{"a second budget does not charge it", []*policyv1.PodDisruptionBudget{
			budget("app", "web", web, map[string]time.Duration{"web-1": time.Second}),
			budget("app", "front", map[string]string{"tier": "front"}, nil)}, ""},
		{"budgets of other pods and namespaces ignored", []*policyv1.PodDisruptionBudget{
			budget("other", "web", web, nil),
			budget("app", "db", map[string]string{"app": "db"}, nil),
			budget("app", "all", map[string]string{}, nil),
			budget("app", "none", nil, nil),
			budget("app", "web", web, map[string]time.Duration{"web-1": time.Second})}, "app/web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chargedBy(pod, tc.pdbs, now); got != tc.want {
				t.Errorf("chargedBy = %q, want %q", got, tc.want)
			}
		})
	}
}
