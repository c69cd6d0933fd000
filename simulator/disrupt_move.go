package simulator

import (
	"slices"
	"sort"
)

// The moves the disruption plan tries: removing existing nodes and re-placing their pods, all
// through the undo log so that a move that does not pay is taken back.

// removeNode takes an existing node out of the cluster, undoably: the pods the simulation placed
// there come off it (out of the trackers, their claims released) and its type's vCPUs, GPUs and
// price leave its pool's sums and the budget, as countManaged put them in. It returns the pods.
func (s *state) removeNode(n *simNode, pl *poolInfo, vcpu, gpus int, price float64) []*podInfo {
	pods := s.takePods(n)
	n.removed = true
	if pl != nil {
		pl.nodes--
		pl.vcpu -= vcpu
		pl.gpus -= gpus
		pl.price -= price
	}
	s.budget -= price
	s.undo = append(s.undo, func() {
		n.removed = false
		if pl != nil {
			pl.nodes++
			pl.vcpu += vcpu
			pl.gpus += gpus
			pl.price += price
		}
		s.budget += price
	})
	return pods
}

// placeMoved places the pods of removed nodes on the available nodes — existing and in-flight
// first, then new ones, opening no more than newNodeCap allows — in placement order (sortPods;
// with zoneFirst, the pods whose constraints depend on the zone, and their gangs, before the
// others; before them all, the pods of first and their gangs), gangs whole, pods with pod
// affinity retried once the others are placed. It returns the first pod that found no place, or
// nil when all did. Every placement is in the undo log.
func (s *state) placeMoved(pods []*podInfo, zoneFirst bool, first map[*podInfo]bool) *podInfo {
	sortPods(pods, s.gpuDims)
	if zoneFirst {
		bound := func(pi *podInfo) bool {
			if pi.gang == nil {
				return s.zoneSensitive(pi)
			}
			return slices.ContainsFunc(pi.gang.members, s.zoneSensitive)
		}
		sort.SliceStable(pods, func(i, j int) bool { return bound(pods[i]) && !bound(pods[j]) })
	}
	if len(first) > 0 {
		lead := func(pi *podInfo) bool {
			if pi.gang == nil {
				return first[pi]
			}
			return slices.ContainsFunc(pi.gang.members, func(m *podInfo) bool { return first[m] })
		}
		sort.SliceStable(pods, func(i, j int) bool { return lead(pods[i]) && !lead(pods[j]) })
	}
	var deferred []*podInfo
	for i := 0; i < len(pods); {
		pi := pods[i]
		var ok bool
		if g := pi.gang; g != nil {
			i += len(g.members)
			_, ok = s.tryGang(g)
		} else {
			i++
			_, ok = s.placeOne(pi, restriction{})
		}
		switch {
		case ok:
		case pi.gang == nil && len(pi.affinity) == 0, pi.gang != nil && !gangHasAffinity(pi.gang):
			return pi
		default:
			deferred = append(deferred, pi)
		}
	}
	return s.retryDeferred(deferred)
}

// placeMovedRetrying places the moved pods (placeMoved). When a pod finds no place, a new node
// may be opened and some pod's constraints depend on the zone, it tries again from the
// checkpoint placed: the new node's zone is pinned by the first pod that cares, and a pod needing
// another zone then finds no place. Placing the zone-bound pods first lets them pick it; then
// placing the pods that still found none before them (zone-spread pods that need the room another
// zone has left, which a bigger zone-bound pod took). It returns the first pod without a place.
func (s *state) placeMovedRetrying(pods []*podInfo, allowNew bool, placed int) *podInfo {
	failed := s.placeMoved(pods, false, nil)
	if failed == nil || !allowNew || !s.anyZoneSensitive(pods) {
		return failed
	}
	s.revert(placed)
	failed = s.placeMoved(pods, true, nil)
	first := map[*podInfo]bool{}
	for try := 0; failed != nil && try < moveRetries && !first[failed]; try++ {
		first[failed] = true
		s.revert(placed)
		failed = s.placeMoved(pods, true, first)
	}
	return failed
}

// retryDeferred places again the pods (and gangs, by a member) whose pod affinity may target
// pods placed after them, while that places more of them, as placeAll does. It returns the first
// that still has no place, or nil.
func (s *state) retryDeferred(deferred []*podInfo) *podInfo {
	for progress := true; progress && len(deferred) > 0; {
		progress = false
		kept := deferred[:0]
		for _, pi := range deferred {
			var ok bool
			if pi.gang != nil {
				_, ok = s.tryGang(pi.gang)
			} else {
				_, ok = s.placeOne(pi, restriction{})
			}
			if ok {
				progress = true
			} else {
				kept = append(kept, pi)
			}
		}
		deferred = kept
	}
	if len(deferred) > 0 {
		return deferred[0]
	}
	return nil
}

// anyZoneSensitive reports whether the constraints of some pod depend on the zone.
func (s *state) anyZoneSensitive(pods []*podInfo) bool {
	return slices.ContainsFunc(pods, s.zoneSensitive)
}

// placePendingOnExisting places the snapshot's pending pods on the existing and in-flight nodes
// where they fit, opening no new node, and keeps those placements: the disruption plan must not
// take the room they are about to use, or provisioning would buy it back.
func (s *state) placePendingOnExisting() {
	if len(s.pending) == 0 || len(s.nodes) == 0 {
		return
	}
	s.placeAssigned()
	s.newNodeCap = len(s.nodes)
	for i := 0; i < len(s.pending); {
		pi := s.pending[i]
		switch {
		case pi.assigned:
			i++
		case pi.gang != nil:
			i += len(pi.gang.members)
			s.tryGang(pi.gang)
		default:
			i++
			s.placeOne(pi, restriction{})
		}
	}
	s.newNodeCap = 0
	s.undo = s.undo[:0]
}

// freeze keeps further pods off node n, undoably (the replacement of a kept action).
func (s *state) freeze(n *simNode) {
	prev := n.noTarget
	n.noTarget = true
	s.undo = append(s.undo, func() { n.noTarget = prev })
}
