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

// TestBudgetCount: the drain's own count of a budget's healthy pods. The scene is the one an e2e
// run found: four replicas Ready after a scale-down from ten, six of the old ones being deleted,
// maxUnavailable 1 (desiredHealthy 3), and a budget status that has not seen the deletions.
func TestBudgetCount(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	gone := metav1.Now()
	pod := func(ns, name, app string, isReady, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}}}
		if isReady {
			p.Status.Conditions = ready
		}
		if deleting {
			p.DeletionTimestamp = &gone
		}
		return p
	}
	var pods []*corev1.Pod
	for _, n := range []string{"w1", "w2", "w3", "w4"} {
		pods = append(pods, pod("app", n, "web", true, false))
	}
	for _, n := range []string{"o1", "o2", "o3", "o4", "o5", "o6"} {
		pods = append(pods, pod("app", n, "web", true, true))
	}
	unready := pod("app", "w5", "web", false, false)
	other := pod("app", "c1", "cache", true, false)
	elsewhere := pod("other", "w1", "web", true, false)
	pods = append(pods, unready, other, elsewhere)
	listed := map[string]int{}
	podsIn := func(ns string) ([]*corev1.Pod, error) {
		listed[ns]++
		var out []*corev1.Pod
		for _, p := range pods {
			if p.Namespace == ns {
				out = append(out, p)
			}
		}
		return out, nil
	}
	budget := func(name, ns string, sel map[string]string, desired int32) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if sel != nil {
			b.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		}
		// A stale status: it would let the API approve six evictions.
		b.Status.DesiredHealthy, b.Status.DisruptionsAllowed = desired, 6
		return b
	}
	web := map[string]string{"app": "web"}
	type step struct {
		pod   *corev1.Pod
		want  string
		evict bool // evicted after, when not held
	}
	for _, tc := range []struct {
		name  string
		pdbs  []*policyv1.PodDisruptionBudget
		steps []step
	}{
		{"one eviction, then held", []*policyv1.PodDisruptionBudget{budget("b", "app", web, 3)},
			[]step{{pods[0], "", true}, {pods[1], "app/b", false}}},
		{"two of room", []*policyv1.PodDisruptionBudget{budget("b", "app", web, 2)},
			[]step{{pods[0], "", true}, {pods[1], "", true}, {pods[2], "app/b", false}}},
		{"no room at all", []*policyv1.PodDisruptionBudget{budget("b", "app", web, 4)}, []step{{pods[0], "app/b", false}}},
		{"a pod not Ready is the API's to judge, and takes nothing", []*policyv1.PodDisruptionBudget{budget("b", "app", web, 3)},
			[]step{{unready, "", true}, {pods[0], "", true}, {pods[1], "app/b", false}}},
		{"a budget of another namespace", []*policyv1.PodDisruptionBudget{budget("b", "other", web, 4)}, []step{{pods[0], "", false}}},
		{"a budget of other pods", []*policyv1.PodDisruptionBudget{budget("b", "app", web, 4)}, []step{{other, "", false}}},
		{"an empty selector selects nothing", []*policyv1.PodDisruptionBudget{budget("b", "app", map[string]string{}, 4)}, []step{{pods[0], "", false}}},
		{"a nil selector selects nothing", []*policyv1.PodDisruptionBudget{budget("b", "app", nil, 4)}, []step{{pods[0], "", false}}},
		{"the stricter of two budgets holds", []*policyv1.PodDisruptionBudget{budget("loose", "app", web, 3), budget("strict", "app", web, 4)},
			[]step{{pods[0], "app/strict", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(listed)
			b := newBudgetCount(tc.pdbs, podsIn)
			for i, st := range tc.steps {
				got, err := b.hold(st.pod)
				if err != nil || got != st.want {
					t.Errorf("step %d, %s: hold = %q, %v; want %q", i, st.pod.Name, got, err, st.want)
				}
				if st.evict && got == "" {
					b.evicted(st.pod)
				}
			}
			if listed["app"] > len(tc.pdbs) {
				t.Errorf("namespace app listed %d times in one pass, want at most once per budget (%d)", listed["app"], len(tc.pdbs))
			}
		})
	}
}
