package simulator

import (
	"fmt"
	"math"
	"sort"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/policy"
)

// maxMultiNodeCandidates bounds the prefix the multi-node search considers, as Karpenter's
// MultiNodeConsolidation does (100): each probe re-places the pods of the whole prefix.
const maxMultiNodeCandidates = 100

// pass is one run of the search over the candidates: the actions it keeps, what they use of the
// budgets, and why each node it looked at stays.
type pass struct {
	d *disruptor
	// exclude are nodes this pass must not use (not candidates for long enough).
	exclude map[string]bool
	// used counts, per pool, the nodes the pass's actions remove (repairs those of its Unhealthy
	// actions); pdbLeft the disruptions each PodDisruptionBudget still allows.
	used    map[string]int
	repairs map[string]int
	pdbLeft []int32
	actions []api.DisruptionAction
	reasons map[string]*api.KeptNode
	removed map[string]bool
	// deletesFirst makes the pass try every candidate alone without a new node before the
	// multi-node search (see run); noNew is set while it does.
	deletesFirst, noNew bool
}

func (d *disruptor) newPass(exclude map[string]bool) *pass {
	p := &pass{d: d, exclude: exclude, used: map[string]int{}, repairs: map[string]int{}, reasons: map[string]*api.KeptNode{},
		removed: map[string]bool{}}
	for _, b := range d.pdbs {
		p.pdbLeft = append(p.pdbLeft, b.allowed)
	}
	return p
}

// run plans the nodes that must go first (disrupt_forced.go), then tries the consolidation
// methods in Karpenter's order: empty nodes, several nodes into one or none, then one node at a
// time. Each kept action changes the state the next one is planned on. A deletesFirst pass
// deletes, after the empty nodes, every candidate whose pods fit on the rest of the cluster
// without a new node, before looking for replacements (see search).
func (p *pass) run() {
	p.forcedNodes()
	p.emptyNodes()
	if p.deletesFirst {
		p.singleDeletes()
	}
	if !p.d.in.Options.caStyle {
		p.multiNode()
	}
	p.singleNode()
}

// singleDeletes tries each candidate with pods alone, deleted with no new node; a candidate that
// cannot go so stays open for the methods after it.
func (p *pass) singleDeletes() {
	p.noNew = true
	defer func() { p.noNew = false }()
	for _, f := range p.d.order {
		if !p.open(f) || len(f.sim.pods) == 0 || f.pol.ConsolidationOf() != policy.WhenUnderutilized || p.full() {
			continue
		}
		p.tryAction([]*nodeFacts{f}, api.ReasonUnderutilized, true)
	}
}

// saving is what the pass's actions save per hour.
func (p *pass) saving() float64 {
	total := 0.0
	for _, a := range p.actions {
		total += a.SavingsPerHour
	}
	return total
}

// open reports whether the pass may still try the node.
func (p *pass) open(f *nodeFacts) bool {
	name := f.node.Name
	return !p.exclude[name] && !p.removed[name] && p.reasons[name] == nil
}

// full reports whether the plan has its MaxActions.
func (p *pass) full() bool {
	m := p.d.in.Options.MaxActions
	return m > 0 && len(p.actions) >= m
}

func (p *pass) keep(f *nodeFacts, r api.KeepReason, msg string) {
	p.reasons[f.node.Name] = &api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: r, Message: msg}
}

// allowance is how many more of the pool's nodes may be disrupted for the reason: the pool's
// budget less the nodes already disrupting and those this pass's actions remove.
func (p *pass) allowance(pl *policy.Pool, reason api.DisruptionReason) int {
	a := pl.AllowedDisruptions(p.d.now, reason, p.d.poolNodes[pl.Name])
	if a == math.MaxInt {
		return a
	}
	return a - p.d.poolDisrupting[pl.Name] - p.used[pl.Name]
}

// emptyNodes deletes the empty candidates of each pool in one action, within its budget and
// minNodes. Empty means no pod needs a new place; pending pods planned onto a node fill it.
func (p *pass) emptyNodes() {
	byPool := map[string][]*nodeFacts{}
	var pools []string
	for _, f := range p.d.order {
		if !p.open(f) || len(f.sim.pods) > 0 || p.d.in.Options.caStyle && f.use.util >= 0.5 {
			continue
		}
		if byPool[f.pol.Name] == nil {
			pools = append(pools, f.pol.Name)
		}
		byPool[f.pol.Name] = append(byPool[f.pol.Name], f)
	}
	sort.Strings(pools)
	for _, name := range pools {
		var take []*nodeFacts
		for _, f := range byPool[name] {
			allowed := p.allowance(f.pol, api.ReasonEmpty)
			switch {
			case p.full():
				p.keep(f, api.KeepBudget, "the plan has its maxActions")
			case len(take) >= allowed:
				p.keep(f, api.KeepBudget, fmt.Sprintf("pool %s's budget allows %d more disruptions now", name, max(allowed, 0)))
			case f.pool.nodes-len(take)-1 < f.pol.MinNodes:
				p.keep(f, api.KeepMinNodes, fmt.Sprintf("pool %s keeps at least %d nodes", name, f.pol.MinNodes))
			default:
				take = append(take, f)
			}
		}
		if len(take) > 0 && !p.full() {
			if k := p.tryAction(take, api.ReasonEmpty, true); k != nil {
				for _, f := range take {
					p.keep(f, k.Reason, k.Message)
				}
			}
		}
	}
}

// multiNodeShorter is how many prefixes shorter than the longest that works multiNode also
// tries: a long prefix may need a big replacement (three g4dn.12xlarge into a g4dn.metal) where a
// shorter one fits a small one and saves more.
const multiNodeShorter = 4

// multiNode looks, pool by pool, for the largest prefix of the ordered candidates that goes
// with at most one new node, by binary search over its length as Karpenter does (the property is
// not monotone, so this is a heuristic that stays within log₂ of the width in probes), then
// among the prefixes it probed that work and the multiNodeShorter just shorter than the largest,
// keeps the one that saves the most, and looks again on what is left.
func (p *pass) multiNode() {
	for _, pl := range p.d.in.Policy.Pools {
		if pl.ConsolidationOf() != policy.WhenUnderutilized {
			continue
		}
		for !p.full() {
			var cands []*nodeFacts
			for _, f := range p.d.order {
				if f.pol.Name == pl.Name && p.open(f) && len(f.sim.pods) > 0 {
					cands = append(cands, f)
				}
			}
			width := min(len(cands), p.allowance(&pl, api.ReasonUnderutilized), maxMultiNodeCandidates)
			if width < 2 {
				break
			}
			largest, best, bestSaved := 0, 0, 0.0
			probe := func(n int) bool {
				saved, k := p.tryActionSaving(cands[:n], api.ReasonUnderutilized, false)
				if k == nil && saved > bestSaved+1e-9 {
					best, bestSaved = n, saved
				}
				return k == nil
			}
			for lo, hi := 1, width-1; lo <= hi; {
				mid := (lo + hi) / 2
				if probe(mid + 1) {
					largest, lo = mid+1, mid+1
				} else {
					hi = mid - 1
				}
			}
			for n := largest - 1; n >= max(2, largest-multiNodeShorter); n-- {
				probe(n)
			}
			if best == 0 || p.tryAction(cands[:best], api.ReasonUnderutilized, true) != nil {
				break
			}
		}
	}
}

// singleNode tries each remaining candidate alone: delete it, or replace it with one cheaper node.
func (p *pass) singleNode() {
	ca := p.d.in.Options.caStyle
	for _, f := range p.d.order {
		if !p.open(f) {
			continue
		}
		reason := api.ReasonUnderutilized
		if len(f.sim.pods) == 0 {
			reason = api.ReasonEmpty
		}
		switch {
		case ca && f.use.util >= 0.5:
			p.keep(f, api.KeepNoCheaperFit, fmt.Sprintf("utilised %.0f%% (the Cluster Autoscaler's rule removes nodes under 50%%)", 100*f.use.util))
		case reason == api.ReasonUnderutilized && f.pol.ConsolidationOf() != policy.WhenUnderutilized:
			p.keep(f, api.KeepConsolidationDisabled, fmt.Sprintf("pool %s consolidates only empty nodes; pending pods are planned here", f.pol.Name))
		case p.full():
			p.keep(f, api.KeepBudget, "the plan has its maxActions")
		default:
			if k := p.tryAction([]*nodeFacts{f}, reason, true); k != nil {
				p.keep(f, k.Reason, k.Message)
			}
		}
	}
}
