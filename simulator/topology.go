package simulator

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// tracker counts, per topology domain, the placed pods that match one label selector in a set of
// namespaces. Topology spread constraints and pod (anti-)affinity terms of pending pods are all
// answered from trackers, so checking a constraint never walks the pods of a node.
type tracker struct {
	key        string // topology key (e.g. topology.kubernetes.io/zone, kubernetes.io/hostname)
	selector   labels.Selector
	namespaces map[string]bool // nil means all namespaces
	counts     map[string]int32
	total      int32
	// preferredOnly: only soft constraints (preferred pod (anti-)affinity, ScheduleAnyway spread)
	// use the tracker. The pods it counts need not have their zone pinned for it (zoneSensitive).
	preferredOnly bool
}

func (t *tracker) matches(p *corev1.Pod) bool {
	if t.namespaces != nil && !t.namespaces[p.Namespace] {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

// spreadConstraint is a parsed topology spread constraint of a pod.
type spreadConstraint struct {
	tracker    int
	key        string
	maxSkew    int32
	hard       bool // DoNotSchedule
	minDomains int32
	selfMatch  bool
	// honorTaints: nodeTaintsPolicy Honor (default Ignore: nodes whose taints the pod does not
	// tolerate still count as domains).
	honorTaints bool
}

// podAffinityTerm is a parsed required pod affinity or anti-affinity term.
type podAffinityTerm struct {
	tracker   int
	owner     int // anti-affinity only: the owner tracker of the term
	key       string
	selfMatch bool
}

// antiTerm is a required anti-affinity term owned by placed pods: pods it selects may not share
// a domain with them. Counts are of owners per domain.
type antiTerm struct {
	tracker int // counts of owner pods per domain
	match   int // tracker whose selector is the term's, to test incoming pods
}

// trackers interns trackers by (key, selector, namespaces).
type trackers struct {
	list  []*tracker
	index map[string]int
}

func newTrackers() *trackers { return &trackers{index: map[string]int{}} }

// get returns the index of the tracker for the selector, creating it.
func (ts *trackers) get(key string, sel *metav1.LabelSelector, namespaces map[string]bool) (int, error) {
	b, _ := json.Marshal(struct {
		K string
		S *metav1.LabelSelector
		N map[string]bool
	}{key, sel, namespaces})
	id := string(b)
	if i, ok := ts.index[id]; ok {
		ts.list[i].preferredOnly = false
		return i, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return 0, err
	}
	if sel == nil {
		s = labels.Nothing()
	}
	ts.list = append(ts.list, &tracker{key: key, selector: s, namespaces: namespaces, counts: map[string]int32{}})
	ts.index[id] = len(ts.list) - 1
	return len(ts.list) - 1, nil
}

// getPreferred is get for a soft constraint.
func (ts *trackers) getPreferred(key string, sel *metav1.LabelSelector, namespaces map[string]bool) (int, error) {
	n := len(ts.list)
	i, err := ts.get(key, sel, namespaces)
	if err == nil && i == n {
		ts.list[i].preferredOnly = true
	}
	return i, err
}

// ownerTracker returns a tracker that counts only what is added to it explicitly (owners of an
// anti-affinity term), keyed like get but distinct from selector trackers.
func (ts *trackers) ownerTracker(key, id string) int {
	id = "owner:" + key + ":" + id
	if i, ok := ts.index[id]; ok {
		return i
	}
	ts.list = append(ts.list, &tracker{key: key, selector: labels.Nothing(), counts: map[string]int32{}})
	ts.index[id] = len(ts.list) - 1
	return len(ts.list) - 1
}

// termNamespaces returns the namespaces a pod affinity term applies to: its own namespace unless
// the term names namespaces; a namespace selector widens to all namespaces (the snapshot has no
// Namespace objects, so namespace labels are unknown; matching all is the conservative choice
// for anti-affinity and the permissive one for affinity).
func termNamespaces(p *corev1.Pod, t *corev1.PodAffinityTerm) map[string]bool {
	if t.NamespaceSelector != nil {
		return nil
	}
	ns := map[string]bool{}
	for _, n := range t.Namespaces {
		ns[n] = true
	}
	if len(ns) == 0 {
		ns[p.Namespace] = true
	}
	return ns
}

// spreadSelector merges matchLabelKeys into the constraint's selector, as the scheduler does.
func spreadSelector(p *corev1.Pod, c *corev1.TopologySpreadConstraint) *metav1.LabelSelector {
	if len(c.MatchLabelKeys) == 0 || c.LabelSelector == nil {
		return c.LabelSelector
	}
	sel := c.LabelSelector.DeepCopy()
	for _, k := range c.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
				Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	return sel
}
