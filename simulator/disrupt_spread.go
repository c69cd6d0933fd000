package simulator

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Zone-spread domains in disruption. kube-scheduler counts every node matching a zone-spread
// pod's node affinity as a domain of its spread, tainted or not (nodeTaintsPolicy Ignore). A
// replacement bought in a zone those pods can never use (no node of theirs there, and their pools
// do not buy there) is a domain that stays at zero of them: with maxSkew 1 every other zone is
// then full at one pod above it, and the spread's next replica, or one of its pods moved by a
// later action, stays pending. Provisioning plans around such domains for the pods it places
// (spreaddomains.go); a disruption is optional, so its replacement opens none at all, for the
// spread of any pod of the cluster, running or pending, whether or not it breaks as placed.

// spreadDomains is the hard zone spread of the pods of one signature, running or pending: the
// zones it counts as domains (eligibleDomains: existing nodes matching the pods' node affinity,
// and the zones their pools buy in), and one such pod, for messages.
type spreadDomains struct {
	sig     int
	pod     string
	domains map[string]bool
}

// zoneSpreads lists, once per node-selection signature, the active pods of the snapshot with a
// hard zone spread that counts tainted nodes (nodeTaintsPolicy Ignore, the default).
func (d *disruptor) zoneSpreads() ([]*spreadDomains, error) {
	s := d.s
	prio := priorityClasses(d.in.Snapshot)
	var out []*spreadDomains
	seen := map[int]bool{}
	for _, p := range d.in.Snapshot.Pods {
		if !snapshot.IsActive(p) || !slices.ContainsFunc(p.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == LabelZone && c.WhenUnsatisfiable == corev1.DoNotSchedule &&
				(c.NodeTaintsPolicy == nil || *c.NodeTaintsPolicy != corev1.NodeInclusionPolicyHonor)
		}) {
			continue
		}
		team, err := s.teams.of(p.Namespace)
		if err != nil {
			return nil, err
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
		out = append(out, g)
	}
	return out, nil
}

// opensDomain returns the zone spread for which a node bought as o would be a new domain its
// pods cannot use, or nil: o matches the pods' node affinity, its zone is not one of their
// domains, and no other new node of the plan (an earlier action's replacement, self excluded) is
// there already.
func (d *disruptor) opensDomain(o *offering, self *simNode) *spreadDomains {
	s := d.s
	for _, g := range d.spread {
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

// spreadBlocked is why a move's pods fit only on a replacement that would open a zone-spread
// domain its pods cannot use.
type spreadBlocked struct {
	zone, pod string
}

func (b *spreadBlocked) String() string {
	return fmt.Sprintf("a new node for them would be in %s, a zone-spread domain that pod %s and the pods spread with it cannot use "+
		"(kube-scheduler counts it, tainted or not, and their later replicas could not be scheduled)", b.zone, b.pod)
}

// keepDomains makes a move's replacement (s.nodes[before]) open no zone-spread domain
// (opensDomain). A replacement whose pods do not pin its zone is bought as the cheapest candidate
// elsewhere; otherwise the pods are placed again (from the checkpoint placed, by place) with the
// new node kept out of each such zone in turn (s.closed, which openNode honours). It returns the
// pod that then finds no place, and why: the move cannot go without opening one. With mustGo (a
// node that goes whatever it costs) it places the pods as first planned instead.
func (d *disruptor) keepDomains(before, placed int, place func() *podInfo, mustGo bool) (*podInfo, *spreadBlocked) {
	s := d.s
	if len(d.spread) == 0 {
		return nil, nil
	}
	prev := s.closed
	defer func() { s.closed = prev }()
	for {
		if len(s.nodes) <= before {
			return nil, nil
		}
		repl := s.nodes[before]
		g := d.opensDomain(repl.chosen, repl)
		if g == nil {
			return nil, nil
		}
		if repl.zone == "" {
			var best *offering
			for _, o := range repl.cands {
				if d.opensDomain(o, repl) == nil && (best == nil || o.price < best.price) {
					best = o
				}
			}
			if best != nil {
				was := repl.chosen
				s.setChosen(repl, best)
				s.undo = append(s.undo, func() { s.setChosen(repl, was) })
				return nil, nil
			}
		}
		why := &spreadBlocked{zone: repl.chosen.zone, pod: g.pod}
		s.closed = append(slices.Clip(s.closed), openedDomain{zone: repl.chosen.zone, node: repl.chosen.node, sig: g.sig})
		s.revert(placed)
		failed := place()
		if failed == nil {
			continue
		}
		if !mustGo {
			return failed, why
		}
		s.revert(placed)
		s.closed = prev
		return place(), nil
	}
}
