package provisioner

import (
	"context"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
)

// A Replace action's replacement keeps its room for the pods its action moves there.
//
// Until session 51 a replacement registered without a reservation (api.TaintReserved,
// reserve.go): no pending pod was planned there, the pods it is bought for still running on the
// nodes the action removes. It was open to any pod. When several actions drained at once (an
// expiry rolling a fleet of one-GPU nodes), kube-scheduler bound each evicted pod's replica to
// whichever new node its score preferred, not to its own action's replacement: campaign seed 44
// logged 12 such swaps in one expiry phase, and twice the swap left a zone-spread replica with no
// node its hard spread allowed, and a node was bought for it.
//
// Now a replacement registers reserved like every node Tiler buys, no pod tolerating it, and the
// reservation watch holds it while the action's nodes are there (replacementsUnderWay). The
// drain ends it itself (openReplacements) when the pods the plan moves there are about to go: in
// waves, with the last wave (evictionWave.toReplacement), and then only on the action's turn —
// one action's replacement open at a time (disruptionMemory.turn), until the replicas of that
// wave are bound (wavePlaced), or a reschedule grace. So a replica finds its own replacement open
// and every other action's still reserved: it binds there (or on room nothing reserved, a move as
// before), and never fails a scheduling attempt for want of its room, which would let a replica
// of a higher priority preempt a pod elsewhere. An urgent or forced action, or one past its
// reschedule grace (no waves: every pod goes at once), opens its replacements at once, without
// waiting for a turn.
//
// A first version kept the replacement reserved through the drain and gave each replica its
// toleration once made (as a batch gives a planned pod its node's). It fixed the swaps, but each
// replica failed its first attempt for a step, and in an e2e scenario a replica of a higher
// priority preempted a pod on another node in that step.
//
// The turn is kept in memory: after a restart the next action to reach its last wave takes it.
// A replacement whose action ended still reserved (its pods went elsewhere, or the action was
// abandoned) is released by the watch as a bought node is, once no unbound pod tolerates it.

// turn is the action whose replacement is open for its last wave, and since when.
type turn struct {
	id    string
	since time.Time
}

// takeTurn reports whether action id may open its replacement for its last wave at now, and if
// so takes the turn: no other action holds it, or the one that does has its last wave's replicas
// bound (placed, given all the pods), ended, or took it more than grace ago.
func (m *disruptionMemory) takeTurn(id string, now time.Time, grace time.Duration, placed func(string) bool) bool {
	m.mu.Lock()
	holder := m.turn
	m.mu.Unlock()
	if holder.id != "" && holder.id != id && now.Sub(holder.since) <= grace && !placed(holder.id) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.turn.id != id {
		m.turn = turn{id: id, since: now}
	}
	return true
}

// openReplacements ends the reservation of action a's replacements that still carry one, so
// that the pods the plan moves there can bind (see above). It reports whether none is reserved
// any more; a failure is logged, and the next pass tries again.
func (c *Controller) openReplacements(ctx context.Context, log *zap.Logger, a *actionState, idx nodeIndex) bool {
	if c.reservations == nil {
		return true
	}
	open := true
	for _, name := range a.replacementNodes {
		n := idx.byName[name]
		if n == nil {
			continue
		}
		if _, reserved := reservationValue(n); !reserved {
			continue
		}
		if err := c.reservations.untaint(ctx, name); err != nil {
			log.Warn("opening the replacement to the pods moved there", zap.String(keyNode, name), zap.Error(err))
			open = false
			continue
		}
		c.metrics.ReservationsEnded.WithLabelValues("replacement-turn").Inc()
		c.recorder.Eventf(n, corev1.EventTypeNormal, "ReservationEnded", "reservation ended (replacement-turn): the pods disruption action %s moves here go now", a.id)
		log.Info("replacement opened to the pods moved there", zap.String(keyNode, name))
	}
	return open
}

// replacementsUnderWay returns the launch IDs of the replacements of the actions whose nodes are
// still there (api.AnnotationDisruptionReplacement): the reservation watch does not end their
// reservations, which the drain ends itself (openReplacements).
func replacementsUnderWay(nodes []*corev1.Node) []string {
	var out []string
	for _, a := range actionsOf(nodes) {
		out = append(out, a.replacements()...)
	}
	return out
}
