package simulator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
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

// keepSpreadDomains chooses the zone of each new node whose candidates span several zones (its
// pods do not care about the zone) so that the node does not add a zone-spread domain that breaks
// the spread of pods placed elsewhere. kube-scheduler counts every node matching a spread pod's
// node affinity as a domain, tainted or not: a GPU node bought for other pods in a zone the spread
// pods cannot use adds a domain with none of them, and with maxSkew 1 only one of them then fits
// per zone. The node is moved to the cheapest candidate zone that keeps every group's skew, when
// it has one.
func (s *state) keepSpreadDomains() {
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
	if len(groups) == 0 {
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
			var best *offering
			for _, o := range n.cands {
				if keeps(o) && (best == nil || o.price < best.price) {
					best = o
				}
			}
			if best != nil {
				s.setChosen(n, best)
			}
		}
		record(n.chosen)
	}
}
