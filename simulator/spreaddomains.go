package simulator

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// affinityMatches reports whether node n satisfies the node selector and required node affinity
// of pods of signature sig, ignoring taints: what kube-scheduler's PodTopologySpread counts as a
// domain under its default nodeTaintsPolicy Ignore.
func (s *state) affinityMatches(sig int, n *corev1.Node) bool {
	if n == nil {
		return false
	}
	ok, _ := nodeaffinity.GetRequiredNodeAffinity(s.sigPods[sig]).Match(n)
	return ok
}

// zoneSpreadGroup is the hard zone spread of pending pods of one signature: their tracker (the
// pods the constraint counts, per zone) and the smallest maxSkew among them.
type zoneSpreadGroup struct {
	tracker int
	sig     int
	maxSkew int32
	domains map[string]bool
}

// zoneSpreadGroups lists the hard zone spreads of the pending pods (nodeTaintsPolicy Ignore), one
// per tracker and signature, with the domains their pods count from the start (eligibleDomains).
func (s *state) zoneSpreadGroups() []*zoneSpreadGroup {
	var groups []*zoneSpreadGroup
	seen := map[[2]int]*zoneSpreadGroup{}
	for _, pi := range s.pending {
		for _, c := range pi.spread {
			if !c.hard || c.honorTaints || c.key != LabelZone {
				continue
			}
			k := [2]int{c.tracker, pi.sig}
			if g := seen[k]; g != nil {
				g.maxSkew = min(g.maxSkew, c.maxSkew)
				continue
			}
			g := &zoneSpreadGroup{tracker: c.tracker, sig: pi.sig, maxSkew: c.maxSkew, domains: map[string]bool{}}
			for _, d := range s.eligibleDomains(pi.sig, LabelZone, false) {
				g.domains[d] = true
			}
			seen[k] = g
			groups = append(groups, g)
		}
	}
	return groups
}

// spreadDomains is the hard zone spread of the pods of one signature, running or pending: the
// zones it counts as domains (eligibleDomains: existing nodes matching the pods' node affinity,
// and the zones their pools buy in), and one such pod, for messages.
type spreadDomains struct {
	sig     int
	pod     string
	domains map[string]bool
}

// zoneSpreads lists, once per simulation and once per node-selection signature, the active pods
// of the snapshot with a hard zone spread that counts tainted nodes (nodeTaintsPolicy Ignore, the
// default), running or pending. A pod whose team cannot be resolved is counted with every pool,
// and warned of. It is first asked once placement has begun, when the domains an earlier pass
// opened (s.opened) are set: eligibleDomains caches what it returns.
func (s *state) zoneSpreads() []*spreadDomains {
	if s.spreads != nil {
		return *s.spreads
	}
	s.spreads = &[]*spreadDomains{}
	prio := priorityClasses(s.in.Snapshot)
	seen := map[int]bool{}
	for _, p := range s.in.Snapshot.Pods {
		if !snapshot.IsActive(p) && !snapshot.IsPending(p) || !slices.ContainsFunc(p.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == LabelZone && c.WhenUnsatisfiable == corev1.DoNotSchedule &&
				(c.NodeTaintsPolicy == nil || *c.NodeTaintsPolicy != corev1.NodeInclusionPolicyHonor)
		}) {
			continue
		}
		team, err := s.teams.of(p.Namespace)
		if err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("pod %s: %v; its zone spread counts the domains of every pool", podKey(p), err))
		}
		var pools []string
		if team != nil {
			pools = team.Pools
		}
		sig := s.signature(p, pools, podPriority(p, prio))
		if seen[sig] {
			continue
		}
		seen[sig] = true
		g := &spreadDomains{sig: sig, pod: podKey(p), domains: map[string]bool{}}
		for _, z := range s.eligibleDomains(sig, LabelZone, false) {
			g.domains[z] = true
		}
		*s.spreads = append(*s.spreads, g)
	}
	return *s.spreads
}

// opensDomain returns the zone spread (zoneSpreads) for which a node bought as o would be a new
// domain its pods cannot use, or nil: o matches the pods' node affinity, its zone is not one of
// their domains, and no other new node of the plan (self excluded) is there already.
func (s *state) opensDomain(o *offering, self *simNode) *spreadDomains {
	for _, g := range s.zoneSpreads() {
		if g.domains[o.zone] || !s.affinityMatches(g.sig, o.node) {
			continue
		}
		there := slices.ContainsFunc(s.nodes, func(n *simNode) bool {
			return n != self && !n.existing && !n.removed && n.chosen != nil && n.chosen.zone == o.zone && s.affinityMatches(g.sig, n.chosen.node)
		})
		if !there {
			return g
		}
	}
	return nil
}

// keepSpreadDomains chooses the zone of each new node whose candidates span several zones (its
// pods do not care about the zone) so that the node does not add a zone-spread domain that breaks
// the spread of pods placed elsewhere. kube-scheduler counts every node matching a spread pod's
// node affinity as a domain, tainted or not: a GPU node bought for other pods in a zone the spread
// pods cannot use adds a domain with none of them, and with maxSkew 1 only one of them then fits
// per zone. The node is moved to the cheapest candidate zone that keeps every group's skew, when
// it has one; and, at no higher price, to one where it opens no domain that the hard zone spread
// of any pod, running or pending, cannot use (opensDomain).
func (s *state) keepSpreadDomains() {
	groups := s.zoneSpreadGroups()
	if len(groups) == 0 && len(s.zoneSpreads()) == 0 {
		return
	}
	record := func(o *offering) {
		for _, g := range groups {
			if s.affinityMatches(g.sig, o.node) {
				g.domains[o.zone] = true
			}
		}
	}
	var open []*simNode
	for _, n := range s.nodes {
		if n.existing || n.removed || n.chosen == nil {
			continue
		}
		if len(inZone(n.cands, n.chosen.zone)) == len(n.cands) {
			record(n.chosen)
		} else {
			open = append(open, n)
		}
	}
	keeps := func(o *offering) bool {
		for _, g := range groups {
			if g.domains[o.zone] || !s.affinityMatches(g.sig, o.node) {
				continue
			}
			counts := s.trackers.list[g.tracker].counts
			for d := range g.domains {
				if counts[d]-counts[o.zone] > g.maxSkew {
					return false
				}
			}
		}
		return true
	}
	for _, n := range open {
		if !keeps(n.chosen) {
			if best := cheapestOf(n, math.Inf(1), keeps); best != nil {
				s.setChosen(n, best)
			}
		}
		if s.opensDomain(n.chosen, n) != nil {
			// A domain no spread's pod can use, running or pending, even if it breaks no spread
			// as placed: the spread's later replicas could not be scheduled. Avoided when it
			// costs nothing.
			if best := cheapestOf(n, n.chosen.price, func(o *offering) bool { return keeps(o) && s.opensDomain(o, n) == nil }); best != nil {
				s.setChosen(n, best)
			}
		}
		record(n.chosen)
	}
}

// cheapestOf returns n's cheapest candidate that ok accepts, not above maxPrice, or nil.
func cheapestOf(n *simNode, maxPrice float64, ok func(*offering) bool) *offering {
	var best *offering
	for _, o := range n.cands {
		if o.price <= maxPrice+1e-9 && ok(o) && (best == nil || o.price < best.price) {
			best = o
		}
	}
	return best
}

// openedDomain is a zone a node of an earlier pass of the plan opens as a zone-spread domain
// (brokenDomains): the zone and the node as it would be bought, whose labels say which pods'
// node affinity it matches.
type openedDomain struct {
	zone string
	node *corev1.Node
	// sig is the signature of the spread pods whose domain it is.
	sig int
}

// closesDomain reports whether a node bought as offering o would open one of the closed
// zone-spread domains: it is in the zone and matches the spread pods' node affinity. The
// signatures are interned in the order of the pending pods, the same in every pass of one input.
func (s *state) closesDomain(o *offering) bool {
	for _, c := range s.closed {
		if o.zone == c.zone && s.affinityMatches(c.sig, o.node) {
			return true
		}
	}
	return false
}

// brokenDomains lists the zones the plan's new nodes open as zone-spread domains, not counted
// from the start, that break a group's spread as placed: a node whose zone was chosen at
// placement (its pods are spread or anti-affine by zone) and that keepSpreadDomains could not
// move, in a zone the group's pods cannot use. kube-scheduler counts it, with none of the group's
// pods, and binds fewer of them than were planned. simulatePass plans again with these zones
// counted from the start (eligibleDomains).
func (s *state) brokenDomains() []openedDomain {
	groups := s.zoneSpreadGroups()
	if len(groups) == 0 {
		return nil
	}
	var out []openedDomain
	for _, g := range groups {
		final := maps.Clone(g.domains)
		var added []*offering
		for _, n := range s.nodes {
			if n.existing || n.removed || n.chosen == nil || final[n.chosen.zone] || !s.affinityMatches(g.sig, n.chosen.node) {
				continue
			}
			final[n.chosen.zone] = true
			added = append(added, n.chosen)
		}
		counts := s.trackers.list[g.tracker].counts
		for _, o := range added {
			for d := range final {
				if counts[d]-counts[o.zone] > g.maxSkew {
					out = append(out, openedDomain{zone: o.zone, node: o.node, sig: g.sig})
					break
				}
			}
		}
	}
	return out
}

// unusableDomain explains a pod that no node takes because of its hard zone spread, when a zone
// its spread counts as a domain is one it can never run in: every node there that matches its
// node affinity refuses it (a taint), and no pool buys it a node there. kube-scheduler counts
// such a zone all the same (nodeTaintsPolicy Ignore, the default), so with its pods there at the
// fewest, each zone it can use holds at most maxSkew more. It returns "" when no such zone holds
// the spread down.
func (s *state) unusableDomain(pi *podInfo) string {
	for _, c := range pi.spread {
		if !c.hard || c.honorTaints || c.key != LabelZone {
			continue
		}
		counts := s.trackers.list[c.tracker].counts
		usable := map[string]bool{}
		for _, o := range s.offerings {
			if s.offeringCompatible(pi.sig, o) {
				usable[o.zone] = true
			}
		}
		for _, n := range s.nodes {
			if n.existing && !n.removed && s.nodeCompatible(pi.sig, n) {
				usable[n.labels[LabelZone]] = true
			}
		}
		for _, d := range s.eligibleDomains(pi.sig, LabelZone, false) {
			if usable[d] {
				continue
			}
			held := len(usable) > 0
			for z := range usable {
				held = held && counts[z]+1-counts[d] > c.maxSkew
			}
			if !held {
				continue
			}
			node := ""
			for _, n := range s.nodes {
				if n.existing && n.labels[LabelZone] == d && s.affinityMatches(pi.sig, n.node) {
					node = n.name
					break
				}
			}
			counted := "a node the plan opens there"
			if node != "" {
				counted = "node " + node
			}
			return fmt.Sprintf("zone %s counts as a domain of its zone spread (%s matches its node affinity; taints are ignored) "+
				"though no node there takes it and no pool buys it one there: with %d of its pods in %s, a zone takes one more only "+
				"while it holds fewer than %d (maxSkew %d); nodeTaintsPolicy: Honor on the constraint, or a pool that buys in %s, lets it spread",
				d, counted, counts[d], d, counts[d]+c.maxSkew, c.maxSkew, d)
		}
	}
	return ""
}
