package simulator

import (
	"fmt"
	"math"
	"slices"
)

// Zone-spread domains in disruption. kube-scheduler counts every node matching a zone-spread
// pod's node affinity as a domain of its spread, tainted or not (nodeTaintsPolicy Ignore). A
// replacement bought in a zone those pods can never use (no node of theirs there, and their pools
// do not buy there) is a domain that stays at zero of them: with maxSkew 1 every other zone is
// then full at one pod above it, and the spread's next replica, or one of its pods moved by a
// later action, stays pending. Provisioning plans around such domains for the pods it places
// (spreaddomains.go); a disruption is optional, so its replacement opens none at all, for the
// spread of any pod of the cluster, running or pending, whether or not it breaks as placed.

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
// (state.opensDomain). A replacement whose pods do not pin its zone is bought as the cheapest candidate
// elsewhere; otherwise the pods are placed again (from the checkpoint placed, by place) with the
// new node kept out of each such zone in turn (s.closed, which openNode honours). It returns the
// pod that then finds no place, and why: the move cannot go without opening one. With mustGo (a
// node that goes whatever it costs) it places the pods as first planned instead.
func (d *disruptor) keepDomains(before, placed int, place func() *podInfo, mustGo bool) (*podInfo, *spreadBlocked) {
	s := d.s
	if len(s.zoneSpreads()) == 0 {
		return nil, nil
	}
	prev := s.closed
	defer func() { s.closed = prev }()
	for {
		if len(s.nodes) <= before {
			return nil, nil
		}
		repl := s.nodes[before]
		g := s.opensDomain(repl.chosen, repl)
		if g == nil {
			return nil, nil
		}
		if repl.zone == "" {
			if best := cheapestOf(repl, math.Inf(1), func(o *offering) bool { return s.opensDomain(o, repl) == nil }); best != nil {
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
