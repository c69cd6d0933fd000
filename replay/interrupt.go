package replay

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/provisioner"
)

// Spot interruptions. The simulated cloud reclaims each spot instance at a time drawn when it is
// launched: an exponential delay of rate Config.SpotInterruptionRate per hour from the launch (the
// first event of a Poisson process, so the count over many instances is rate × spot
// instance-hours), drawn from a generator seeded by Config.InterruptionSeed and the launch ID
// alone — not from a stream shared by the launches — so that a draw does not depend on which
// launches came before it, and the same seed gives the same result. The notice comes
// Config.InterruptionGrace before the reclaim (at the launch, if that is later).
//
// What follows is the controller's interruption path (provisioner/interruptions.go and
// disruption.go), through the same pure functions:
//
//  1. At the notice the offering is marked unavailable for the controller's UnavailableTTL (in the
//     State.Unavailable every later Decide and plan reads, so the replacement and later purchases
//     fail over to another offering), and the node is cordoned and annotated with the notice's
//     kind and deadline (api.AnnotationInterruption, api.AnnotationInterruptionDeadline).
//  2. At once (the controller wakes its disruption loop) provisioner.PlanInterrupted plans the
//     interrupted nodes — simulator.PlanDisruption with Options.Interrupted, past budgets and
//     settledness — and the action is started: a Replace launches its replacement (recorded as
//     the controller records launches) and the node drains when the replacement is usable or when
//     the deadline is within the controller's InterruptionDrainMargin
//     (provisioner.InterruptionDrainDue), whichever comes first; a Delete drains the node at once.
//     A node already under a consolidation Replace keeps that action, now bound by the deadline.
//  3. At the reclaim a node still there is gone: the pods on it are evicted. An instance
//     noticed before its Node registered is removed at the notice, as the controller removes it
//     (provisioner.RemovalInterrupted): its pods are planned again on another offering.
//
// A pod an interruption evicts is pending again and re-planned like any; the time it waits again,
// to its next binding (or its departure), adds to its pending time (Result.InterruptionRewait).

// DefaultSpotInterruptionRate is the default Config.SpotInterruptionRate, 0.2/720 interruptions
// per spot instance-hour: the AWS Spot Instance Advisor's worst frequency-of-interruption band
// (">20 %", "the rate at which Spot has reclaimed capacity during the trailing month"), read as
// one in five spot instances reclaimed in a 30-day month. Its lower bands (<5 %, 5–10 %, …) are
// proportionally rarer; AWS gives no per-hour figure.
const DefaultSpotInterruptionRate = 0.2 / 720

// DefaultInterruptionSeed is the default Config.InterruptionSeed.
const DefaultInterruptionSeed = 1

// DefaultInterruptionGrace is the notice period of an EC2 spot interruption, the controller's
// (provisioner.SpotInterruptionNotice; cloudprovider/sim's DefaultInterruptionGrace too).
const DefaultInterruptionGrace = provisioner.SpotInterruptionNotice

// reclaimTime is when the cloud reclaims the launch (zero: never, for on-demand or a zero rate):
// the launch time plus an exponential delay of rate SpotInterruptionRate per hour, drawn from the
// seed and the launch ID, rounded to the second (annotations carry seconds).
func (w *world) reclaimTime(rec provisioner.LaunchRecord) time.Time {
	rate := w.cfg.SpotInterruptionRate
	if rec.CapacityType != api.Spot || rate <= 0 {
		return time.Time{}
	}
	h := fnv.New64a()
	h.Write([]byte(rec.LaunchID))
	r := rand.New(rand.NewPCG(w.cfg.InterruptionSeed, h.Sum64()))
	hours := r.ExpFloat64() / rate
	// Beyond a year the instance outlives any replay (and the Duration would overflow).
	if hours > 365*24 {
		return time.Time{}
	}
	d := time.Duration(hours * float64(time.Hour)).Round(time.Second)
	return rec.CreatedAt.Add(max(d, time.Second))
}

// noticeAt is when the node's interruption notice comes.
func (w *world) noticeAt(n *nodeState) time.Time {
	at := n.reclaimAt.Add(-w.cfg.InterruptionGrace)
	if at.Before(n.rec.CreatedAt) {
		return n.rec.CreatedAt
	}
	return at
}

// interruptionEvent is the node's next interruption event (zero: none): its notice, the drain
// that its deadline forces while it waits for a replacement, or its reclaim.
func (w *world) interruptionEvent(n *nodeState) time.Time {
	switch {
	case n.reclaimAt.IsZero():
		return time.Time{}
	case !n.noticed:
		return w.noticeAt(n)
	case n.obj != nil && len(n.drainFor) > 0:
		return earliest(n.reclaimAt, n.reclaimAt.Add(-w.cfg.Controller.InterruptionDrainMargin))
	}
	return n.reclaimAt
}

// interrupt delivers the interruption events due now (see above) and reports whether anything
// changed.
func (w *world) interrupt() (bool, error) {
	changed := false
	var planned map[string]time.Time
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if n == nil || n.reclaimAt.IsZero() || n.noticed || w.noticeAt(n).After(w.now) {
			// n == nil: removed in this loop, with the replacement it waited for
			continue
		}
		n.noticed, changed = true, true
		w.acct.interruptions++
		if w.acct.interruptionIdx == nil {
			w.acct.interruptionIdx = map[string]int{}
		}
		w.acct.interruptionIdx[name] = len(w.acct.res.InterruptionLog)
		w.acct.res.InterruptionLog = append(w.acct.res.InterruptionLog, InterruptionEvent{Node: name, Offering: n.rec.Offering,
			Notice: w.now.Sub(w.wl.Start), Reclaim: n.reclaimAt.Sub(w.wl.Start), Registered: n.obj != nil})
		w.unavailable = append(w.unavailable, provisioner.UnavailableEntry{Offering: n.rec.Offering,
			Code: provisioner.SpotInterruptionKind, Until: w.now.Add(w.cfg.Controller.UnavailableTTL)})
		if n.obj == nil {
			// Before its Node registered: the controller removes the launch at once
			// (provisioner.RemovalInterrupted), and the next batch plans its pods elsewhere.
			w.removeNode(name, removalInterrupted)
			continue
		}
		n.obj.Spec.Unschedulable = true
		if n.obj.Annotations == nil {
			n.obj.Annotations = map[string]string{}
		}
		n.obj.Annotations[api.AnnotationInterruption] = provisioner.SpotInterruptionKind
		n.obj.Annotations[api.AnnotationInterruptionDeadline] = n.reclaimAt.UTC().Format(time.RFC3339)
		if len(n.drainFor) == 0 {
			if planned == nil {
				planned = map[string]time.Time{}
			}
			planned[name] = n.reclaimAt
		}
	}
	if len(planned) > 0 {
		s := w.state()
		actions, err := provisioner.PlanInterrupted(&s, planned)
		if err != nil {
			return false, err
		}
		for _, a := range actions {
			switch {
			case a.Kind == api.ActionReplace && a.Replacement != nil:
				recs, ids := w.launchReplacements(a)
				rec := recs[0]
				for _, name := range a.Nodes {
					if n := w.nodes[name]; n != nil {
						n.drainFor, n.drainReason = slices.Clone(ids), removalInterrupted
					}
					if i, ok := w.acct.interruptionIdx[name]; ok {
						w.acct.res.InterruptionLog[i].Replacement = rec.LaunchID
						w.acct.res.InterruptionLog[i].ReplacementOffering = &rec.Offering
					}
				}
			case a.Kind == api.ActionDelete:
				for _, name := range a.Nodes {
					w.removeNode(name, removalInterrupted)
				}
			default:
				return false, fmt.Errorf("interrupted nodes %v: unexpected action %s", a.Nodes, a.Kind)
			}
		}
	}
	margin := w.cfg.Controller.InterruptionDrainMargin
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if n == nil || !n.noticed { // nil: removed in this loop, with a replacement it waited for
			continue
		}
		switch {
		case !n.reclaimAt.After(w.now):
			w.removeNode(name, removalReclaimed)
			changed = true
		case n.obj != nil && len(n.drainFor) > 0 && provisioner.InterruptionDrainDue(n.reclaimAt, w.now, margin):
			w.removeNode(name, removalInterrupted)
			changed = true
		}
	}
	if changed {
		if err := w.checkBindings(); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// checkBindings reports a live pod bound to a node the cloud no longer has (or never
// registered): a pod lost with its node instead of evicted.
func (w *world) checkBindings() error {
	for _, p := range w.livePods() {
		if name := p.obj.Spec.NodeName; name != "" {
			if n := w.nodes[name]; n == nil || n.obj == nil {
				return fmt.Errorf("pod %s is bound to node %s, which is gone: lost instead of evicted", p.key, name)
			}
		}
	}
	return nil
}

// Removal reasons of interrupted nodes (Result.Removals): drained by the interruption's action
// (replacement usable, deadline near, or no replacement), or still there when the cloud took it.
const (
	removalInterrupted = "interrupted"
	removalReclaimed   = "interrupted:reclaimed"
)
