package fidelity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// Preemption scenarios (GeneratePreemption): PriorityClasses that preempt, existing nodes full of
// lower-priority bound pods and higher-priority pending pods that fit no free room. The
// simulation plans a preemption (api.Plan.Preemptions) instead of a purchase for such a pod, and
// its victims as pending pods. The harness checks it against the real scheduler:
//
//   - the plan is the simulation of the scenario as created (simulator.Simulate), before the
//     scheduler acts: the controller never sees a pod the scheduler has nominated for preemption;
//   - the harness plays the kubelet of the existing nodes for the victims (their deletion is
//     confirmed at once) and their ReplicaSet (each is created again, pending, under its name,
//     once the preemptors are bound);
//   - once every preemption has settled, the controller plans and buys for the victims as for any
//     pending pod, and the run goes on as usual;
//   - each preemptor's outcome is judged against its planned node (KindPreemption), each victim's
//     against the controller's plan (KindPreempted); Outcome.Preemptions compares the victims.

// startBase is when the bound pods of preemption scenarios started, a minute apart.
var startBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Priority classes of preemption scenarios (PreemptLowerPriority, the default policy).
const (
	PreemptTop  = "fidelity-preempt-top"
	PreemptHigh = "fidelity-preempt-high"
	PreemptMid  = "fidelity-preempt-mid"
	PreemptLow  = "fidelity-preempt-low"
)

// KindPreemption is a pending pod the plan serves by preemption; KindPreempted a pod evicted by
// the scheduler's preemption and created again pending.
const (
	KindPreemption Kind = "preemption"
	KindPreempted  Kind = "preempted"
)

// PreemptionOutcome compares the plan's preemptions with the scheduler's.
type PreemptionOutcome struct {
	// Planned are the preemptions of the plan (node names of the run).
	Planned []api.Preemption
	// PlannedVictims and Evicted are the victims the plan named and the pods the scheduler
	// evicted, sorted.
	PlannedVictims, Evicted []string
}

// Same reports whether the scheduler evicted exactly the planned victims.
func (p *PreemptionOutcome) Same() bool {
	return fmt.Sprint(p.PlannedVictims) == fmt.Sprint(p.Evicted)
}

// GeneratePreemption builds a preemption scenario from a seed: one to three m7i.xlarge nodes
// nearly full of low- and mid-priority pods, one or two high-priority pending pods too big for the
// free room (of different priorities), and sometimes a low-priority pending pod.
func GeneratePreemption(seed uint64) *Scenario {
	r := rand.New(rand.NewPCG(seed, 0x9ee3))
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		panic(fmt.Sprintf("fidelity: embedded catalog: %v", err))
	}
	snap := &snapshot.Snapshot{}
	for _, c := range []struct {
		name  string
		value int32
	}{{PreemptTop, 2000}, {PreemptHigh, 1000}, {PreemptMid, 500}, {PreemptLow, 100}} {
		pc := &schedulingv1.PriorityClass{Value: c.value}
		pc.Name = c.name
		snap.PriorityClasses = append(snap.PriorityClasses, pc)
	}
	it, _ := cat.Type("m7i.xlarge")
	cpu, mem, pods := catalog.Allocatable(cat.Provider, it)
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	nodes := 1 + r.IntN(3)
	for i := range nodes {
		name := fmt.Sprintf("existing-%d", i)
		n := simtest.Node(name, "m7i.xlarge", cat.Zones[r.IntN(len(cat.Zones))], alloc)
		n.Labels[corev1.LabelTopologyRegion] = cat.Region
		snap.Nodes = append(snap.Nodes, n)
		// Pods of 750m–1500m CPU until less than 1 CPU is free: less than a pending pod needs.
		used := int64(0)
		for j := 0; ; j++ {
			c := int64(750 + 250*r.IntN(4))
			if used+c > cpu-250 {
				c = 750
			}
			if used+c > cpu-250 {
				break
			}
			used += c
			class := PreemptLow
			if r.IntN(3) == 0 {
				class = PreemptMid
			}
			p := simtest.Pod(fmt.Sprintf("bound-%d-%d", i, j)).Namespace(Namespace).Label(LabelApp, "batch").
				CPU(fmt.Sprintf("%dm", c)).Mem("1Gi").On(name).Obj()
			p.Spec.PriorityClassName = class
			// Distinct start times, which the harness posts as the kubelet would: the scheduler
			// orders victims of one priority by them, and breaks its last tie between nodes.
			p.Status.StartTime = &metav1.Time{Time: startBase.Add(time.Duration(len(snap.Pods)) * time.Minute)}
			snap.Pods = append(snap.Pods, p)
		}
	}
	for k := 0; k < 1+r.IntN(2); k++ {
		p := simtest.Pod(fmt.Sprintf("serve-%d", k)).Namespace(Namespace).Label(LabelApp, "serve").
			CPU(fmt.Sprintf("%dm", 1500+250*r.IntN(4))).Mem("2Gi").Obj()
		// Each its own priority: the scheduler's order among pods of equal priority is the
		// order they reached its queue, which the plan cannot know (seen with seed 4: two pods of
		// one priority preempted in the other order, on swapped nodes).
		p.Spec.PriorityClassName = []string{PreemptTop, PreemptHigh}[k]
		snap.Pods = append(snap.Pods, p)
	}
	if r.IntN(2) == 0 {
		p := simtest.Pod("extra-0").Namespace(Namespace).Label(LabelApp, "extra").CPU("500m").Mem("1Gi").Obj()
		p.Spec.PriorityClassName = PreemptLow
		snap.Pods = append(snap.Pods, p)
	}
	return &Scenario{Name: fmt.Sprintf("preempt-%d", seed), Seed: seed, Catalog: "aws-us-east-1", Snapshot: snap,
		Policy: "apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: general\n  instanceFamilies: [m7i]\n" +
			"  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]\n",
		Description: "Preemption: high-priority pending pods preempt lower-priority pods on full existing nodes; the victims are bought for."}
}

// podNamed returns the scenario's pod of that name, or nil.
func (s *Scenario) podNamed(name string) *corev1.Pod {
	for _, p := range s.Snapshot.Pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Preempts reports whether a PriorityClass of the scenario may preempt (preemptionPolicy is not
// Never): the harness then runs it as a preemption scenario.
func (s *Scenario) Preempts() bool {
	for _, pc := range s.Snapshot.PriorityClasses {
		if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
			return true
		}
	}
	return false
}

// preemption is the harness's state of a preemption scenario's run.
type preemption struct {
	mu      sync.Mutex
	evicted map[string]bool // victims whose deletion the harness confirmed
	back    map[string]bool // victims created again, pending
	planned *api.Plan       // the simulation of the scenario as created
}

// isBack reports whether the victim was created again.
func (p *preemption) isBack(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.back[name]
}

// planPreemptions simulates the scenario as created and keeps the plan's preemptions.
func (r *run) planPreemptions() error {
	cat, err := r.sc.LoadCatalog()
	if err != nil {
		return err
	}
	pol, err := r.sc.ParsedPolicy()
	if err != nil {
		return err
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: r.sc.Snapshot, Catalog: cat, Policy: pol})
	if err != nil {
		return fmt.Errorf("simulating the scenario: %w", err)
	}
	r.pre = &preemption{evicted: map[string]bool{}, back: map[string]bool{}, planned: plan}
	return nil
}

// playVictims plays, until ctx ends, the kubelet of the existing nodes for terminating pods (their
// deletion is confirmed at once) and their ReplicaSet (each is created again, pending, under its
// name, from the scenario's pod). A victim is created again only once no preemptor waits for its
// node: a replacement created at once can take the room freed for the preemptor (seen with seed
// 1: the scheduler bound it there and preempted a second pod), a race of the real cluster too,
// but one the plan does not model; the harness measures the preemption decisions.
func (r *run) playVictims(ctx context.Context) {
	kube := r.h.kube
	byName := map[string]*corev1.Pod{}
	for _, p := range r.sc.Snapshot.Pods {
		byName[p.Name] = p
	}
	zero := int64(0)
	for ctx.Err() == nil {
		pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			present, preempting := map[string]bool{}, false
			for _, p := range pods.Items {
				present[p.Name] = true
				if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" && p.Annotations[api.AnnotationNominatedBy] == "" {
					preempting = true
				}
				if p.DeletionTimestamp == nil || !r.existing[p.Spec.NodeName] {
					continue
				}
				if err := kube.CoreV1().Pods(r.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
					Preconditions: &metav1.Preconditions{UID: &p.UID}}); err == nil || apierrors.IsNotFound(err) {
					r.pre.mu.Lock()
					r.pre.evicted[p.Name] = true
					r.pre.mu.Unlock()
				}
			}
			r.pre.mu.Lock()
			var again []string
			for name := range r.pre.evicted {
				if !preempting && !r.pre.back[name] && !present[name] && byName[name] != nil {
					again = append(again, name)
				}
			}
			r.pre.mu.Unlock()
			for _, name := range again {
				p := byName[name].DeepCopy()
				p.Namespace, p.ResourceVersion, p.UID, p.Status = r.ns, "", "", corev1.PodStatus{}
				p.Spec.NodeName = ""
				if _, err := kube.CoreV1().Pods(r.ns).Create(ctx, p, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
					r.pre.mu.Lock()
					r.pre.back[name] = true
					r.pre.mu.Unlock()
				}
			}
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// waitPreemptions waits until every preemption has settled: no pod is terminating, every victim
// is back, and every pod the scheduler nominated (not Tiler) is bound. The victims back are added
// to the run's pending pods; those bound by then, and the pending pods that are (but the planned
// preemptors), are added to preBound: the scheduler placed them before the controller planned.
func (r *run) waitPreemptions(ctx context.Context, preBound map[string]string) error {
	kube := r.h.kube
	err := poll(ctx, r.h.timing.Unschedulable, func() (bool, error) {
		pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing pods: %w", err)
		}
		r.pre.mu.Lock()
		defer r.pre.mu.Unlock()
		for name := range r.pre.evicted {
			if !r.pre.back[name] {
				return false, nil
			}
		}
		for _, p := range pods.Items {
			switch {
			case p.DeletionTimestamp != nil:
				return false, nil
			case p.Spec.NodeName != "":
			case p.Status.NominatedNodeName != "" && p.Annotations[api.AnnotationNominatedBy] == "":
				return false, nil
			case r.pre.back[p.Name] && !unschedulable(&p):
				return false, nil
			}
		}
		return true, nil
	}, func() error { return errTimeout })
	if err != nil && err != errTimeout {
		return err
	}
	if err == errTimeout {
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("the preemptions had not settled after %s", r.h.timing.Unschedulable))
	}
	pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	preemptors := map[string]bool{}
	for _, p := range r.pre.planned.Preemptions {
		preemptors[podName(p.Pod)] = true
	}
	r.pre.mu.Lock()
	defer r.pre.mu.Unlock()
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && !preemptors[p.Name] && (r.pre.back[p.Name] || r.isPending(p.Name)) {
			preBound[p.Name] = p.Spec.NodeName
		}
	}
	pending := map[string]bool{}
	for _, p := range r.pending {
		pending[p.Name] = true
	}
	for _, p := range r.sc.Snapshot.Pods {
		if r.pre.back[p.Name] && !pending[p.Name] {
			q := p.DeepCopy()
			q.Spec.NodeName = ""
			r.pending = append(r.pending, q)
		}
	}
	return nil
}

// isPending reports whether the scenario's pod is one of the run's pending pods.
func (r *run) isPending(name string) bool {
	for _, p := range r.pending {
		if p.Name == name {
			return true
		}
	}
	return false
}

// preemptionOutcome fills Outcome.Preemptions and returns, per preemptor, its planned node in the
// run's names.
func (r *run) preemptionOutcome() map[string]string {
	out := &PreemptionOutcome{}
	planned := map[string]string{}
	for _, p := range r.pre.planned.Preemptions {
		p.Node = r.nodeName(p.Node)
		p.Victims = append([]string(nil), p.Victims...)
		for i, v := range p.Victims {
			p.Victims[i] = podName(v)
			out.PlannedVictims = append(out.PlannedVictims, podName(v))
		}
		planned[podName(p.Pod)] = p.Node
		out.Planned = append(out.Planned, p)
	}
	r.pre.mu.Lock()
	for name := range r.pre.evicted {
		out.Evicted = append(out.Evicted, name)
	}
	r.pre.mu.Unlock()
	sort.Strings(out.PlannedVictims)
	sort.Strings(out.Evicted)
	r.out.Preemptions = out
	if !out.Same() {
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("the plan preempts %v, the scheduler evicted %v", out.PlannedVictims, out.Evicted))
	}
	return planned
}
