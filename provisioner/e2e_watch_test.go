package provisioner_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/testwait"
)

// lifecycleWatch follows every pod of a namespace over a whole node-lifecycle run (interruption,
// repair, drift, expiry) and checks, at finish, what every disruption must honour:
//
//   - no pod of a PodDisruptionBudget's selector that was Ready was evicted or deleted while that
//     left fewer of the selector's pods available (Ready, not terminating) than the budget's
//     desired healthy count (minAvailable, or the pods at the start less maxUnavailable) — pods that went with
//     their node (DisruptionTarget DeletionByPodGC or DeletionByTaintManager: the cloud reclaimed
//     or lost it) are not held to the budget, they are reported (lostWithNode) for the test to
//     judge;
//   - no pod annotated not to be disrupted was evicted;
//   - a pod deleted past a terminationGracePeriod (expectForced) is not held to its budget: it is
//     reported (forced), with its deletion, for the test to judge;
//   - no pod was lost: every ReplicaSet of the namespace is back to its replicas, all Ready;
//   - no instance leaked: the cloud's instances are the managed Nodes.
//
// A disruption is the first event that shows a pod terminating or carrying the DisruptionTarget
// condition; an eviction is one whose DisruptionTarget reason is EvictionByEvictionAPI (what the
// Eviction API sets), so that a pod the cloud took with its node is counted as a disruption but
// not as Tiler's eviction.
type lifecycleWatch struct {
	e      *env
	ns     string
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	seen   map[string]bool
	budget []watchedBudget
	// evicted are the pods evicted through the Eviction API, in order; lostWithNode the pods that
	// went with their node; violations what broke a rule.
	evicted      []string
	lostWithNode []string
	violations   []string
	// forcedOK selects the pods a test expects to be deleted past their budget or annotation
	// (expectForced); forced are those deleted, with the deletion as the pod showed it.
	forcedOK labels.Selector
	forced   []*corev1.Pod
	// doomed are nodes the cloud reclaims: their do-not-disrupt pods may be evicted.
	doomed map[string]bool
}

// allowDoNotDisruptEvictionsOn lets the do-not-disrupt pods of a node the cloud reclaims (an
// interruption) be evicted: they would go with it anyway.
func (lw *lifecycleWatch) allowDoNotDisruptEvictionsOn(node string) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.doomed == nil {
		lw.doomed = map[string]bool{}
	}
	lw.doomed[node] = true
}

// expectForced lets the pods that sel selects be deleted without the Eviction API whatever their
// budgets say (a terminationGracePeriod ran out); finish reports them. Call it before the run.
func (lw *lifecycleWatch) expectForced(sel labels.Selector) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.forcedOK = sel
}

// forcedPods returns the pods deleted as expectForced allowed, as first seen terminating.
func (lw *lifecycleWatch) forcedPods() []*corev1.Pod {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]*corev1.Pod(nil), lw.forced...)
}

type watchedBudget struct {
	name     string
	selector labels.Selector
	healthy  int
}

// watchLifecycle starts a lifecycleWatch over ns. The namespace's PodDisruptionBudgets must exist
// and its pods be settled: a maxUnavailable budget's desired healthy count is taken from the pods
// of its selector now.
func (e *env) watchLifecycle(ns string) *lifecycleWatch {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pdbs, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	lw := &lifecycleWatch{e: e, ns: ns, stop: cancel, done: make(chan struct{}), pods: map[string]*corev1.Pod{}, seen: map[string]bool{}}
	for i := range list.Items {
		p := &list.Items[i]
		lw.pods[p.Name] = p
		lw.seen[p.Name] = disrupted(p)
	}
	for _, b := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			e.t.Fatal(err)
		}
		n := 0
		for _, p := range lw.pods {
			if sel.Matches(labels.Set(p.Labels)) && p.DeletionTimestamp == nil {
				n++
			}
		}
		wb := watchedBudget{name: b.Name, selector: sel}
		switch {
		case b.Spec.MinAvailable != nil:
			wb.healthy, _ = intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, n, true)
		case b.Spec.MaxUnavailable != nil:
			k, _ := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, n, true)
			wb.healthy = n - k
		}
		lw.budget = append(lw.budget, wb)
	}
	w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(lw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			lw.observe(ev.Type, p)
		}
	}()
	return lw
}

// disrupted reports whether the pod is terminating or marked as a disruption's target.
func disrupted(p *corev1.Pod) bool {
	_, target := disruptionTarget(p)
	return p.DeletionTimestamp != nil || target
}

func disruptionTarget(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason, true
		}
	}
	return "", false
}

func (lw *lifecycleWatch) observe(t watch.EventType, p *corev1.Pod) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if t == watch.Deleted {
		delete(lw.pods, p.Name)
		return
	}
	prev := lw.pods[p.Name]
	lw.pods[p.Name] = p
	if lw.seen[p.Name] || !disrupted(p) {
		return
	}
	lw.seen[p.Name] = true
	reason, _ := disruptionTarget(p)
	if reason == "DeletionByPodGC" || reason == "DeletionByTaintManager" {
		lw.lostWithNode = append(lw.lostWithNode, p.Name)
		return
	}
	if reason == "" && lw.forcedOK != nil && lw.forcedOK.Matches(labels.Set(p.Labels)) {
		lw.forced = append(lw.forced, p.DeepCopy())
		return
	}
	if reason == "EvictionByEvictionAPI" {
		lw.evicted = append(lw.evicted, p.Name)
		if a := p.Annotations; (a[api.AnnotationDoNotDisrupt] == "true" || a[api.AnnotationKarpenterDoNotDisrupt] == "true") && !lw.doomed[p.Spec.NodeName] {
			lw.violations = append(lw.violations, fmt.Sprintf("pod %s is annotated not to be disrupted and was evicted", p.Name))
		}
	}
	for _, b := range lw.budget {
		// (A pod not Ready before its disruption, as on a node not Ready, takes nothing from
		// its budget's healthy pods.)
		if !b.selector.Matches(labels.Set(p.Labels)) || prev != nil && !podReady(prev) {
			continue
		}
		avail := 0
		for _, q := range lw.pods {
			if b.selector.Matches(labels.Set(q.Labels)) && q.DeletionTimestamp == nil && podReady(q) && !lw.seen[q.Name] {
				avail++
			}
		}
		if avail < b.healthy {
			lw.violations = append(lw.violations, fmt.Sprintf("pod %s disrupted (%s) with %d pods of PodDisruptionBudget %s available, below its %d",
				p.Name, orWord(reason, "deleted"), avail, b.name, b.healthy))
		}
	}
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// finish stops the watch and checks the rules: budgets and do-not-disrupt over the run, then no
// pod lost (every ReplicaSet of the namespace with its replicas Ready) and no instance leaked. It
// returns the pods evicted through the Eviction API and those that went with their node.
func (lw *lifecycleWatch) finish(timeout time.Duration) (evicted, lostWithNode []string) {
	e := lw.e
	e.t.Helper()
	lw.stop()
	<-lw.done
	lw.mu.Lock()
	for _, v := range lw.violations {
		e.t.Errorf("lifecycle watch: %s", v)
	}
	evicted = append([]string(nil), lw.evicted...)
	lostWithNode = append([]string(nil), lw.lostWithNode...)
	lw.mu.Unlock()
	var short []string
	err := testwait.Poll(testwait.Slow, timeout, func() bool {
		rss, err := e.kube.AppsV1().ReplicaSets(lw.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		short = nil
		for _, rs := range rss.Items {
			if want := replicasOf(&rs); rs.Status.ReadyReplicas != want || rs.Status.Replicas != want {
				short = append(short, fmt.Sprintf("%s %d/%d Ready", rs.Name, rs.Status.ReadyReplicas, want))
			}
		}
		return len(short) == 0
	})
	if err != nil {
		e.t.Errorf("lifecycle watch: pods lost: ReplicaSets not back to their replicas: %v", short)
	}
	e.instancesMatchNodes()
	return evicted, lostWithNode
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
