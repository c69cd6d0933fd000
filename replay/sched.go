package replay

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// schedule is the scheduler model (see the package comment): the pending pods a launch was bought
// for go to its node first when it is usable, then every pending pod is placed where it fits on
// the registered, schedulable nodes. The pods left get PodScheduled=False (Unschedulable). It
// returns how many pods are pending, and an error when a binding overcommits a node.
func (w *world) schedule() (int, error) {
	nominated := map[string]string{}
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if n.usable() && !n.obj.Spec.Unschedulable {
			for _, key := range n.rec.Pods {
				nominated[key] = name
			}
		}
	}
	var first, rest []*podState
	for _, p := range w.livePods() {
		if p.obj.Spec.NodeName != "" {
			continue
		}
		if _, ok := nominated[p.key]; ok {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(first)+len(rest) == 0 {
		return 0, nil
	}
	touched := map[string]bool{}
	if len(first) > 0 {
		unplaced, err := w.place(first, nominated, touched)
		if err != nil {
			return 0, err
		}
		rest = append(rest, unplaced...)
	}
	pending := 0
	if len(rest) > 0 {
		unplaced, err := w.place(rest, nil, touched)
		if err != nil {
			return 0, err
		}
		for _, p := range unplaced {
			markUnschedulable(p.obj, w.now)
		}
		pending = len(unplaced)
	}
	for name := range touched {
		if err := w.checkCapacity(name); err != nil {
			return 0, err
		}
	}
	return pending, nil
}

// place runs the simulator's placement of pods on the registered, schedulable nodes (a catalog
// without types: nothing is bought) and binds the pods it places; with pin, each pod is held to
// the node pin names (by the hostname label). It returns the pods left pending.
func (w *world) place(pods []*podState, pin map[string]string, touched map[string]bool) ([]*podState, error) {
	snap := &snapshot.Snapshot{Now: w.now, PodGroups: w.groups}
	nodes := map[string]bool{}
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if n.obj != nil && !n.obj.Spec.Unschedulable {
			snap.Nodes = append(snap.Nodes, n.obj)
			nodes[name] = true
		}
	}
	if len(snap.Nodes) == 0 {
		return pods, nil
	}
	for _, p := range w.livePods() {
		if nodes[p.obj.Spec.NodeName] {
			snap.Pods = append(snap.Pods, p.obj)
		}
	}
	byKey := make(map[string]*podState, len(pods))
	for _, p := range pods {
		byKey[p.key] = p
		obj := p.obj
		if node, ok := pin[p.key]; ok {
			obj = obj.DeepCopy()
			obj.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		}
		snap.Pods = append(snap.Pods, obj)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: w.noTypes, Policy: w.schedPolicy,
		Options: simulator.Options{Now: w.now, Seed: "sched-" + strconv.FormatInt(w.now.Unix(), 10)}})
	if err != nil {
		return nil, fmt.Errorf("scheduler model: %w", err)
	}
	for _, en := range plan.ExistingNodes {
		for _, key := range en.Pods {
			if p := byKey[key]; p != nil && p.obj.Spec.NodeName == "" {
				w.bind(p, en.Name)
				touched[en.Name] = true
				delete(byKey, key)
			}
		}
	}
	var left []*podState
	for _, p := range pods {
		if byKey[p.key] != nil {
			left = append(left, p)
		}
	}
	return left, nil
}

// checkCapacity is the replay's own check, independent of the simulator's filters, that the pods
// bound to a node fit its allocatable: every requested resource, and the pod count.
func (w *world) checkCapacity(name string) error {
	n := w.nodes[name]
	if n == nil || n.obj == nil {
		return fmt.Errorf("pods bound to %s, which is not a registered node", name)
	}
	used := corev1.ResourceList{}
	count := int64(0)
	for _, p := range w.livePods() {
		if p.obj.Spec.NodeName != name {
			continue
		}
		count++
		for _, c := range p.obj.Spec.Containers {
			for r, q := range c.Resources.Requests {
				u := used[r]
				u.Add(q)
				used[r] = u
			}
		}
	}
	used[corev1.ResourcePods] = *resource.NewQuantity(count, resource.DecimalSI)
	for r, q := range used {
		alloc, ok := n.obj.Status.Allocatable[r]
		if !ok && (q.IsZero() || r == corev1.ResourcePods) {
			continue
		}
		if q.Cmp(alloc) > 0 {
			return fmt.Errorf("node %s overcommitted: %s %s requested, %s allocatable", name, r, q.String(), alloc.String())
		}
	}
	return nil
}
