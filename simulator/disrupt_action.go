package simulator

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"
)

// tryAction removes the nodes (all of one pool), re-places their pods on the rest of the cluster
// with at most one new node, and judges the result (worthIt). With commit it keeps a good result
// as an action; otherwise, and whenever the result is not good, it undoes everything. It returns
// why the nodes stay, or nil when the action is good.
//
// Several nodes replaced by a node of the type of one of them, x, at no lower price are emptied
// into x instead when the others' pods fit there without a new node: as cheap, and no launch
// (Karpenter rejects such replacements outright; this keeps the saving when a gang or affinity
// means only the replacement can take the pods).
func (p *pass) tryAction(nodes []*nodeFacts, reason api.DisruptionReason, commit bool) *api.KeptNode {
	_, k := p.tryActionSaving(nodes, reason, commit)
	return k
}

// tryActionSaving is tryAction that also returns what a good action saves per hour (the removed
// nodes' price less the replacement's).
func (p *pass) tryActionSaving(nodes []*nodeFacts, reason api.DisruptionReason, commit bool) (float64, *api.KeptNode) {
	s, pol := p.d.s, nodes[0].pol
	if a := p.allowance(pol, reason); len(nodes) > a {
		return 0, kept(api.KeepBudget, "pool %s's budget allows %d more disruptions now", pol.Name, max(a, 0))
	}
	mark := s.checkpoint()
	m, k := p.move(nodes, !p.d.in.Options.caStyle && !p.noNew, false, false)
	if k != nil {
		return 0, k
	}
	if x := sameTypeNode(nodes, m.repl); x != nil {
		s.revert(mark)
		rest := without(nodes, x)
		if m, k = p.move(rest, false, false, false); k == nil {
			nodes = rest
		} else if m, k = p.move(nodes, true, false, false); k != nil {
			return 0, k
		}
	}
	saved := m.price
	if m.repl != nil {
		saved -= m.repl.chosen.price
	}
	if k := p.worthIt(nodes, m.repl, m.price); k != nil || !commit {
		s.revert(mark)
		return saved, k
	}
	p.record(nodes, reason, m, "", nil, nil)
	return saved, nil
}

// moveRetries bounds the placements a move retries with the pods that found no place first.
const moveRetries = 2

// moved is what a move did: the pods it re-placed and where they came from, the replacement it
// opened (nil: none) and the removed nodes' price.
type moved struct {
	pods []*podInfo
	from map[*podInfo]string
	repl *simNode
	// more are the new nodes after repl (forced moves only: moveOpening).
	more  []*simNode
	price float64
}

// move removes the nodes and re-places their pods, opening one new node at most when allowNew;
// that node opens no zone-spread domain the moving pods' spreads cannot use (keepDomains), unless
// mustGo (a node that goes whatever it costs) and it can be had no other way. When a pod finds
// no place it undoes everything and says why. An urgent move (an unhealthy or interrupted node,
// which goes whatever Tiler does) is not stopped by PodDisruptionBudgets.
func (p *pass) move(nodes []*nodeFacts, allowNew, urgent, mustGo bool) (moved, *api.KeptNode) {
	newNodes := 0
	if allowNew {
		newNodes = 1
	}
	return p.moveOpening(nodes, newNodes, urgent, mustGo)
}

// moveOpening is move with up to newNodes new nodes. keepDomains looks at the first new node
// only: more than one is for nodes that must go (mustGo), which open a domain when they must.
func (p *pass) moveOpening(nodes []*nodeFacts, newNodes int, urgent, mustGo bool) (moved, *api.KeptNode) {
	s := p.d.s
	if k := p.podChecks(nodes, urgent); k != nil {
		return moved{}, k
	}
	mark, before := s.checkpoint(), len(s.nodes)
	m := moved{from: map[*podInfo]string{}}
	for _, f := range nodes {
		vcpu, gpus := 0, 0
		if it := p.d.types[CatalogTypeOf(f.node.Labels)]; it != nil {
			// A type the catalog lacks (a drifted node) was never counted in its pool's sums.
			vcpu, gpus = it.VCPU, it.GPU.Count
		}
		for _, pi := range s.removeNode(f.sim, f.pool, vcpu, gpus, f.price) {
			m.from[pi] = f.node.Name
			m.pods = append(m.pods, pi)
		}
		m.price += f.price
	}
	s.newNodeCap = before + newNodes
	placed := s.checkpoint()
	place := func() *podInfo { return s.placeMovedRetrying(m.pods, newNodes > 0, placed) }
	failed := place()
	if failed != nil {
		// First fit in name order misses fits that exist: a larger pod takes the room only the
		// later pods fit in, and they find none. Tightest first leaves the roomier nodes for them.
		// Only a second try, so every move that worked before is unchanged.
		s.revert(placed)
		s.bestFit = true
		failed = place()
	}
	var blocked *spreadBlocked
	if failed == nil {
		failed, blocked = p.d.keepDomains(before, placed, place, mustGo)
	}
	s.newNodeCap, s.bestFit = 0, false
	if failed != nil {
		s.revert(mark)
		if blocked != nil {
			return moved{}, kept(api.KeepNoCheaperFit, "pod %s fits neither on the other nodes nor, with the pods they cannot take, on one new node that opens no zone-spread domain: %s", failed.key, blocked)
		}
		if newNodes > 1 {
			return moved{}, kept(api.KeepNoCheaperFit, "pod %s fits neither on the other nodes nor, with the pods they cannot take, on up to %d new nodes", failed.key, newNodes)
		}
		return moved{}, kept(api.KeepNoCheaperFit, "pod %s fits neither on the other nodes nor, with the pods they cannot take, on one new node", failed.key)
	}
	if len(s.nodes) > before {
		m.repl, m.more = s.nodes[before], s.nodes[before+1:]
	}
	return m, nil
}

// without returns the nodes other than x.
func without(nodes []*nodeFacts, x *nodeFacts) []*nodeFacts {
	out := make([]*nodeFacts, 0, len(nodes)-1)
	for _, f := range nodes {
		if f != x {
			out = append(out, f)
		}
	}
	return out
}

func kept(r api.KeepReason, format string, a ...any) *api.KeptNode {
	return &api.KeptNode{Reason: r, Message: fmt.Sprintf(format, a...)}
}

// podChecks rejects, before any simulation, nodes whose pods may not all move together: a
// PodDisruptionBudget that has no disruption left in this plan (each action uses one of every
// budget that selects a pod it evicts, so that actions carried out at once never break one), or
// a gang with members on other nodes.
func (p *pass) podChecks(nodes []*nodeFacts, urgent bool) *api.KeptNode {
	in := map[*simNode]bool{}
	for _, f := range nodes {
		in[f.sim] = true
	}
	for _, f := range nodes {
		for _, pi := range f.sim.pods {
			for _, b := range p.d.podPDBs[pi.key] {
				if p.pdbLeft[b] <= 0 && !urgent {
					return kept(api.KeepPDB, "PodDisruptionBudget %s allows no further disruption of pod %s in this plan", p.d.pdbs[b].key, pi.key)
				}
			}
			if g := pi.gang; g != nil {
				for _, m := range g.members {
					if m.node == nil || !in[m.node] {
						return kept(api.KeepGang, "gang %s moves whole or not at all, and its member %s is on another node", g.name, m.key)
					}
				}
			}
		}
	}
	return nil
}

// worthIt judges a move: a replacement must cost less than the nodes it replaces; a spot node
// replaced by a spot node needs spotToSpotMinOfferings cheaper spot offerings that hold its pods
// (single-node moves, as Karpenter); the savings must reach the pool's threshold × the removed
// nodes' price; and the pool keeps its minNodes.
func (p *pass) worthIt(nodes []*nodeFacts, repl *simNode, price float64) *api.KeptNode {
	pol := nodes[0].pol
	after := 0.0
	if repl != nil {
		after = repl.chosen.price
		if after >= price-1e-9 {
			return kept(api.KeepNoCheaperFit, "the cheapest node for the pods the others cannot take (%s, $%.4f/h) costs no less than $%.4f/h",
				repl.chosen.it.Name, after, price)
		}
		if len(nodes) == 1 && nodes[0].offering.CapacityType == api.Spot && repl.chosen.ct == api.Spot {
			want, have := pol.SpotToSpotMinOfferingsOf(), 0
			for _, o := range repl.cands {
				if o.ct == api.Spot && o.price < price {
					have++
				}
			}
			if have < want {
				return kept(api.KeepSpotDiversity, "%d cheaper spot offerings can take the pods; spot-to-spot needs %d", have, want)
			}
		}
	}
	if k := p.mixKeeps(nodes, repl); k != nil {
		return k
	}
	threshold := pol.SavingsThresholdOf()
	if p.d.in.Options.caStyle {
		threshold = 0
	}
	if saved := price - after; saved < threshold*price-1e-9 {
		return kept(api.KeepBelowThreshold, "saves $%.4f/h (%.1f%% of $%.4f/h), below pool %s's threshold of %.0f%%",
			saved, 100*saved/price, price, pol.Name, 100*threshold)
	}
	if pl := nodes[0].pool; pl.nodes < pol.MinNodes {
		return kept(api.KeepMinNodes, "pool %s keeps at least %d nodes", pol.Name, pol.MinNodes)
	}
	return nil
}

// sameTypeNode returns, when several nodes would be replaced by a node of the type of one of
// them at no lower price, that node — the fullest such, the last in candidate order — else nil.
func sameTypeNode(nodes []*nodeFacts, repl *simNode) *nodeFacts {
	if len(nodes) < 2 || repl == nil {
		return nil
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if f := nodes[i]; f.offering.InstanceType == repl.chosen.it.Name && f.price <= repl.chosen.price+1e-9 {
			return f
		}
	}
	return nil
}

// record keeps a good action: its moves, its replacement (frozen, so that later actions never
// depend on it), and what it uses of the budgets; msg, deadline and behind are a forced action's.
func (p *pass) record(nodes []*nodeFacts, reason api.DisruptionReason, m moved, msg string, deadline *time.Time, behind []string) {
	a := api.DisruptionAction{Kind: api.ActionDelete, Reason: reason, Pool: nodes[0].pol.Name, Moves: []api.PodMove{},
		CostPerHourBefore: round6(m.price), Message: msg, Deadline: deadline}
	if len(behind) > 0 {
		a.LeftBehind = slices.Sorted(slices.Values(behind))
	}
	for _, f := range nodes {
		a.Nodes = append(a.Nodes, f.node.Name)
		p.removed[f.node.Name] = true
	}
	sort.Strings(a.Nodes)
	var budgets []int
	for _, pi := range m.pods {
		if pi.origin == "" {
			continue // a pending pod planned there: nothing to evict
		}
		a.Moves = append(a.Moves, api.PodMove{Pod: pi.key, From: m.from[pi], To: pi.node.name})
		for _, b := range p.d.podPDBs[pi.key] {
			if !containsInt(budgets, b) {
				budgets = append(budgets, b)
			}
		}
	}
	for _, b := range budgets {
		p.pdbLeft[b]-- // below 0 after an urgent action: its evictions wait for the budget while the node lasts
	}
	sort.Slice(a.Moves, func(i, j int) bool { return a.Moves[i].Pod < a.Moves[j].Pod })
	if m.repl != nil {
		nn := p.d.s.newNode(m.repl)
		a.Kind, a.Replacement = api.ActionReplace, &nn
		after := m.repl.chosen.price
		p.d.s.freeze(m.repl)
		for _, r := range m.more {
			a.MoreReplacements = append(a.MoreReplacements, p.d.s.newNode(r))
			after += r.chosen.price
			p.d.s.freeze(r)
		}
		a.CostPerHourAfter = round6(after)
	}
	a.SavingsPerHour = round6(a.CostPerHourBefore - a.CostPerHourAfter)
	a.ID = api.ActionID(a)
	p.actions = append(p.actions, a)
	p.used[a.Pool] += len(nodes)
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
