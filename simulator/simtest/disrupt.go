package simtest

import (
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// ApplyDisruption carries out a disruption plan's actions in order on the snapshot (ApplyAction)
// and returns the final snapshot and every violation found on the way.
func ApplyDisruption(snap *snapshot.Snapshot, plan *api.DisruptionPlan, cat *catalog.Catalog, created time.Time) (*snapshot.Snapshot, []string, error) {
	var all []string
	for _, a := range plan.Actions {
		next, violations, err := ApplyAction(snap, a, cat, created)
		if err != nil {
			return nil, all, fmt.Errorf("action %s: %w", a.ID, err)
		}
		for _, v := range violations {
			all = append(all, a.ID+": "+v)
		}
		snap = next
	}
	return snap, all, nil
}

// ApplyAction checks one disruption action with the independent checker and carries it out. The
// action's nodes are taken out of a copy of the snapshot and the pods that ran there (except
// DaemonSet, mirror and finished pods, which end with their node, and the pods a node-lifecycle
// action leaves behind) become pending, with the
// claims only they held deallocated; the action's moves become a purchase plan that places them
// — on existing nodes, or on the replacement as a new node — and Check judges that plan like any
// other: every such pod placed once, resources, selectors, taints, pod (anti-)affinity and
// spread. The snapshot returned is that plan bound (Bind), so a move whose claims do not fit its
// destination is an error. Pending pods of the snapshot are left out of the check and stay
// pending.
func ApplyAction(snap *snapshot.Snapshot, a api.DisruptionAction, cat *catalog.Catalog, created time.Time) (*snapshot.Snapshot, []string, error) {
	gone := map[string]bool{}
	for _, n := range a.Nodes {
		gone[n] = true
	}
	derived := *snap
	derived.Nodes = nil
	for _, n := range snap.Nodes {
		if !gone[n.Name] {
			derived.Nodes = append(derived.Nodes, n)
		}
	}
	derived.Pods = nil
	var pending []*corev1.Pod
	moved, behind := map[string]bool{}, map[string]bool{}
	for _, k := range a.LeftBehind {
		behind[k] = true
	}
	if len(behind) > 0 && !a.Reason.Forced() {
		return nil, nil, fmt.Errorf("a %s action leaves pods behind (%v); only the node-lifecycle reasons may", a.Reason, a.LeftBehind)
	}
	for _, p := range snap.Pods {
		switch {
		case snapshot.IsPending(p):
			pending = append(pending, p)
		case !gone[p.Spec.NodeName]:
			if behind[p.Namespace+"/"+p.Name] {
				return nil, nil, fmt.Errorf("pod %s is left behind on a node the action does not remove", p.Namespace+"/"+p.Name)
			}
			derived.Pods = append(derived.Pods, p)
		case endsWithNode(p), behind[p.Namespace+"/"+p.Name]:
		default:
			cp := p.DeepCopy()
			cp.Spec.NodeName, cp.Status.Phase = "", corev1.PodPending
			moved[p.Namespace+"/"+p.Name] = true
			derived.Pods = append(derived.Pods, cp)
		}
	}
	derived.ResourceClaims = releaseClaims(snap, moved)
	plan := movesPlan(a)
	violations := Check(&derived, plan)
	next, err := Bind(&derived, plan, cat, created)
	if err != nil {
		return nil, violations, err
	}
	next.Pods = append(next.Pods, pending...)
	return next, violations, nil
}

// endsWithNode reports whether the pod ends with its node instead of moving: DaemonSet and
// mirror pods, finished pods.
func endsWithNode(p *corev1.Pod) bool {
	if snapshot.IsDaemonSetPod(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == "Node"
}

// movesPlan turns an action's moves into a purchase plan: placements on existing nodes, and the
// replacements as new nodes holding the pods moved to them.
func movesPlan(a api.DisruptionAction) *api.Plan {
	plan := &api.Plan{}
	byNode := map[string][]string{}
	var order []string
	for _, m := range a.Moves {
		if byNode[m.To] == nil {
			order = append(order, m.To)
		}
		byNode[m.To] = append(byNode[m.To], m.Pod)
	}
	for _, node := range order {
		if a.IsReplacement(node) {
			continue
		}
		plan.ExistingNodes = append(plan.ExistingNodes, api.ExistingNode{Name: node, Pods: byNode[node]})
	}
	for _, nn := range a.Replacements() {
		nn.Pods = byNode[nn.Name]
		plan.NewNodes = append(plan.NewNodes, nn)
	}
	return plan
}

// releaseClaims returns the snapshot's claims with the allocation of every claim that only moved
// pods hold cleared, as the claim controller deallocates a claim no pod reserves.
func releaseClaims(snap *snapshot.Snapshot, moved map[string]bool) []*resourcev1.ResourceClaim {
	held, stays := map[string]bool{}, map[string]bool{}
	for _, p := range snap.Pods {
		if len(p.Spec.ResourceClaims) == 0 || p.Spec.NodeName == "" {
			continue
		}
		claims, err := dra.PodClaims(p, snap.ResourceClaims, snap.ResourceClaimTemplates)
		if err != nil {
			continue
		}
		for _, c := range claims {
			if moved[p.Namespace+"/"+p.Name] {
				held[c.Namespace+"/"+c.Name] = true
			} else {
				stays[c.Namespace+"/"+c.Name] = true
			}
		}
	}
	out := make([]*resourcev1.ResourceClaim, len(snap.ResourceClaims))
	for i, c := range snap.ResourceClaims {
		out[i] = c
		if k := c.Namespace + "/" + c.Name; held[k] && !stays[k] {
			cp := c.DeepCopy()
			cp.Status.Allocation, cp.Status.ReservedFor = nil, nil
			out[i] = cp
		}
	}
	return out
}
