package simulator

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Forced actions: the nodes that must go (disrupt_lifecycle.go) are handled before any
// consolidation, most urgent first, one node per action: its pods are re-placed on the rest of
// the cluster with at most one new node, exactly as a consolidation move, and the action is kept
// whatever it costs — no savings threshold, no cheaper replacement, no spot-to-spot rule, no
// minNodes (provisioning restores a pool's minNodes with a node that matches the pool, which is
// what a drifted pool needs). Drift and expiry are bounded by the pool's budgets for their reason,
// repair by the pool's repair budget, interruptions by nothing.

// urgent reports whether the node goes whatever Tiler does (see forced.urgent).
func (f *nodeFacts) urgent() bool { return f.forced != nil && f.forced.urgent() }

// gangNodes maps each gang ("namespace/name") to the nodes its running members are on, with ""
// for a pending member.
func (d *disruptor) gangNodes() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, p := range d.in.Snapshot.Pods {
		name, _, _ := d.groups.gangOf(p)
		if name == "" || !(snapshot.IsPending(p) || snapshot.IsActive(p) && movesWithNode(p)) {
			continue
		}
		key := p.Namespace + "/" + name
		if out[key] == nil {
			out[key] = map[string]bool{}
		}
		out[key][p.Spec.NodeName] = true
	}
	return out
}

// forcedKeep returns why a node that must go is kept nonetheless, or nil. The caller's Keep and
// an action already under way (listed, deleting) keep any such node. Drift and expiry are also
// kept by do-not-disrupt on the node or a pod and by a PodDisruptionBudget that allows no
// disruption now — the pod's annotation and the budget only while the pool sets no
// terminationGracePeriod (graceFor: with one, the node goes, its action carries the period and
// names what held it) — and wait while the node is cordoned or not Ready (Karpenter's rules for its
// graceful methods, as consolidation here). An urgent node (unhealthy, interrupted) is kept by
// nothing else: its pods are lost with it anyway, and its evictions wait for the budgets only as
// long as the node lasts (an unhealthy one, at most the pool's terminationGracePeriod when it sets
// one: its action carries the period and names what holds it). Pods nothing recreates (no controller)
// stay behind, and so, on an urgent node, do members of a gang that runs on other nodes too.
func (d *disruptor) forcedKeep(f *nodeFacts, gangNodes map[string]map[string]bool) *api.KeptNode {
	n, x := f.node, f.forced
	f.ready = true // the candidate wait is consolidation's
	x.grace, x.held = graceFor(f.pol, x.reason, f.orphan), nil
	keep := func(r api.KeepReason, format string, a ...any) *api.KeptNode {
		return &api.KeptNode{Reason: r, Message: x.message + "; " + fmt.Sprintf(format, a...)}
	}
	switch {
	case d.in.Options.Keep[n.Name] != "":
		return keep(api.KeepKept, "%s", d.in.Options.Keep[n.Name])
	case f.listed || n.DeletionTimestamp != nil:
		return keep(api.KeepDisrupting, "already being disrupted (listed or deleting)")
	case x.urgent():
		f.disrupting = false // cordoned or not Ready is what is wrong with it, not an action under way
	case nodeDoNotDisrupt(n):
		return keep(api.KeepDoNotDisrupt, "the node is annotated not to be disrupted")
	case f.disrupting:
		return keep(api.KeepDisrupting, "cordoned or not Ready; it is replaced once it is back")
	}
	moving := f.pods[:0:0]
	for _, p := range f.pods {
		if podDoNotDisrupt(p) {
			if !x.urgent() && !x.forcible() {
				return keep(api.KeepPodDoNotDisrupt, "pod %s is annotated not to be disrupted", podKey(p))
			}
			if x.forcible() {
				x.held = append(x.held, fmt.Sprintf("pod %s is annotated not to be disrupted", podKey(p)))
			}
		}
		switch {
		case metav1.GetControllerOf(p) == nil:
			f.behind = append(f.behind, podKey(p))
		case x.urgent() && gangElsewhere(p, n.Name, d.groups, gangNodes):
			f.behind = append(f.behind, podKey(p))
		default:
			if i := d.notePDBs(p); i >= 0 {
				if !x.urgent() && !x.forcible() {
					delete(d.podPDBs, podKey(p))
					return keep(api.KeepPDB, "PodDisruptionBudget %s allows no disruption of pod %s", d.pdbs[i].key, podKey(p))
				}
				if x.forcible() {
					x.held = append(x.held, fmt.Sprintf("PodDisruptionBudget %s allows no disruption of pod %s", d.pdbs[i].key, podKey(p)))
				}
			}
			moving = append(moving, p)
		}
	}
	f.pods = moving
	return nil
}

// gangElsewhere reports whether the pod is a gang member whose gang also has members on other
// nodes, or pending.
func gangElsewhere(p *corev1.Pod, node string, groups podGroups, gangNodes map[string]map[string]bool) bool {
	name, _, _ := groups.gangOf(p)
	if name == "" {
		return false
	}
	nodes := gangNodes[p.Namespace+"/"+name]
	return len(nodes) > 1 || !nodes[node]
}

// orderForced lists the nodes that must go and may, most urgent first: interrupted (earliest
// deadline first), unhealthy, expired, drifted; then by name.
func (d *disruptor) orderForced() {
	for _, f := range d.facts {
		if f.forced != nil && f.keep == nil && f.sim != nil {
			d.forced = append(d.forced, f)
		}
	}
	sort.SliceStable(d.forced, func(i, j int) bool {
		a, b := d.forced[i].forced, d.forced[j].forced
		if ra, rb := forcedRank(a.reason), forcedRank(b.reason); ra != rb {
			return ra < rb
		}
		if a.deadline != nil && b.deadline != nil && !a.deadline.Equal(*b.deadline) {
			return a.deadline.Before(*b.deadline)
		}
		return d.forced[i].node.Name < d.forced[j].node.Name
	})
}

// forcedNodes plans an action for every node that must go, in urgency order, within the budget of
// its reason. Interruptions ignore MaxActions too: the node goes either way.
func (p *pass) forcedNodes() {
	for _, f := range p.d.forced {
		if !p.open(f) {
			continue
		}
		x := f.forced
		if x.reason != api.ReasonInterrupted && p.full() {
			p.keep(f, api.KeepBudget, x.message+"; the plan has its maxActions")
			continue
		}
		if left, what := p.forcedAllowance(f); left <= 0 {
			p.keep(f, api.KeepBudget, fmt.Sprintf("%s; %s allows %d more now", x.message, what, max(left, 0)))
			continue
		}
		if k := p.tryForced(f); k != nil {
			p.reasons[f.node.Name] = k
		}
	}
}

// forcedAllowance is how many more nodes of f's pool may go for f's reason, and the budget that
// says so: the pool's budgets for Drifted or Expired (as for consolidation, less the nodes already
// disrupting and this pass's actions); the repair budget for Unhealthy, less the pool's nodes
// already under repair (disrupting and unhealthy) and this pass's repairs; no limit for
// Interrupted and ReservationEnding (the cloud ends those nodes whatever a budget says).
func (p *pass) forcedAllowance(f *nodeFacts) (int, string) {
	pl := f.pol
	switch f.forced.reason {
	case api.ReasonInterrupted, api.ReasonReservationEnding:
		return 1, ""
	case api.ReasonUnhealthy:
		allowed := pl.RepairOf().AllowedRepairs(p.d.poolNodes[pl.Name])
		return allowed - p.d.repairing[pl.Name] - p.repairs[pl.Name], fmt.Sprintf("pool %s's repair budget", pl.Name)
	}
	return p.allowance(pl, f.forced.reason), fmt.Sprintf("pool %s's budget for %s", pl.Name, f.forced.reason)
}

// tryForced re-places the node's pods on the rest of the cluster with at most one new node — or,
// when one cannot take them, as many as they need — and keeps the result as an action, whatever
// it costs. It returns why the node stays when a pod
// finds no place (or its gang cannot move whole).
func (p *pass) tryForced(f *nodeFacts) *api.KeptNode {
	x := f.forced
	urgent := x.urgent() || x.forcible()
	m, k := p.move([]*nodeFacts{f}, true, urgent, true)
	if k != nil && k.Reason == api.KeepNoCheaperFit && len(f.pods) > 1 {
		// One new node cannot take the pods (the pool buys smaller types now): as many as they
		// need, one per pod at most.
		m, k = p.moveOpening([]*nodeFacts{f}, len(f.pods), urgent, true)
	}
	if k != nil {
		k.Name, k.Pool = f.node.Name, f.pol.Name
		if k.Reason == api.KeepNoCheaperFit {
			k.Reason = api.KeepNoReplacement
		}
		k.Message = x.message + "; " + k.Message
		if x.urgent() {
			k.Message += "; the node goes nonetheless and its pods become pending"
		}
		return k
	}
	msg := x.message
	if len(f.behind) > 0 {
		msg += "; left behind (no controller recreates them, or their gang runs elsewhere): " + strings.Join(f.behind, ", ")
	}
	if len(x.held) > 0 {
		msg += fmt.Sprintf("; %s: its drain waits for them at most pool %s's terminationGracePeriod (%s), then deletes the pods",
			strings.Join(x.held, ", "), f.pol.Name, x.grace)
	}
	p.record([]*nodeFacts{f}, x.reason, m, msg, x.deadline, f.behind)
	if x.forcible() {
		p.actions[len(p.actions)-1].TerminationGracePeriodSeconds = int64((x.grace + time.Second - 1) / time.Second)
	}
	if x.reason == api.ReasonUnhealthy {
		p.repairs[f.pol.Name]++
	}
	return nil
}

// unhealthyList is the plan's unhealthy nodes: one entry per managed node with a health signal,
// the first due signal (else the first), its message joined with the others'.
func (d *disruptor) unhealthyList() []api.UnhealthyNode {
	var out []api.UnhealthyNode
	for _, f := range d.facts {
		if len(f.health) == 0 {
			continue
		}
		first := f.health[0]
		var msgs []string
		for _, h := range f.health {
			if h.Due && !first.Due {
				first = h
			}
			msgs = append(msgs, string(h.Signal)+": "+h.Message)
		}
		first.Message = strings.Join(msgs, "; ")
		out = append(out, first)
	}
	return out
}
