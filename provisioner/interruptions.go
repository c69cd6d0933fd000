package provisioner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator"
)

// Interruptions: the cloud announces that it reclaims an instance (an EC2 spot interruption two
// minutes ahead, a GCP preemption as it happens, an EC2 rebalance recommendation with no
// deadline, a state change to stopping or terminated). The node is handed to the disruption
// executor (disruption.go) as an Interrupted action, so that its pods are replaced before they
// go:
//
//  1. At the notice (pollInterruptions): the offering is marked unavailable, so that the
//     replacement is planned on another spot pool or on-demand when the pool allows it
//     (failover); for a state change, only when the instance says the cloud ended it for want
//     of capacity (markIfCapacityLost: a person stopping or terminating an instance says nothing
//     about capacity), and a state change of an instance Tiler is removing is its own doing and
//     no interruption. An instance whose Node has not registered yet is removed at once (instance and
//     launch record, RemovalInterrupted): the next batch plans its pods elsewhere. Otherwise the
//     node is cordoned and annotated with the notice's kind and deadline
//     (api.AnnotationInterruption, api.AnnotationInterruptionDeadline); the disruption loop is
//     woken. The notice is acknowledged (cloudprovider.InterruptionAcker) only then, once the
//     annotation, which is what survives a restart, is written: a controller that dies or loses
//     leadership in between gets the notice again after the source's visibility timeout, and
//     handling it again is harmless (the earlier deadline stands, a removal under way is not
//     started twice).
//  2. The next disruption pass (startInterrupted) plans the node's pods as pending against the
//     rest of the cluster and at most one replacement (simulator.PlanDisruption with
//     Options.Interrupted) and starts the action: the replacement is launched through the launch
//     path (launch record first), or, when the pods need none, the node drains at once.
//  3. The executor drains the node (Eviction API: PodDisruptionBudgets hold) when the replacement
//     is Ready or when the deadline is within Config.InterruptionDrainMargin, whichever comes
//     first, then deletes the instance, unless the cloud took it first.
//
// Interruptions are not bound by the pools' disruption budgets, consolidation's settledness or
// maxActions, nor by the other actions under way: the node goes whatever Tiler does, and the
// only choice left is whether its pods have somewhere to go first. Do-not-disrupt pods are not
// evicted (they stay until the cloud reclaims the node), and a drain refused by a
// PodDisruptionBudget is retried until the node is gone, never abandoned.

// watchInterruptions polls the interruption source until ctx ends, in a loop of its own so that
// a slow poll (an SQS long poll waits up to 20 s for a message) never holds a batch. A poll starts
// at most every ResyncPeriod; a source that blocks until notices come (SQS) is polled again at
// once.
func (c *Controller) watchInterruptions(ctx context.Context) {
	var backlog []cloudprovider.Interruption
	for ctx.Err() == nil {
		start := c.clock.Now()
		backlog = c.pollInterruptions(ctx, backlog)
		if wait := c.cfg.ResyncPeriod - c.clock.Since(start); wait > 0 {
			select {
			case <-ctx.Done():
			case <-c.clock.After(wait):
			}
		}
	}
}

// pollInterruptions polls the source once and hands each notice, and each of the backlog, to the
// disruption loop (see above); it returns the notices it could not act on yet (the launch
// records or the informers could not be read, a node could not be annotated) for the next poll,
// and acknowledges the others to an InterruptionAcker source. The returned ones stay
// unacknowledged there, so that the source delivers them again should this backlog be lost. The
// node is the record's Node, which may have registered under another name than the planned one;
// a launch without a Node has nothing to drain (only its offering is marked). A StateChange to
// "running" is no interruption.
func (c *Controller) pollInterruptions(ctx context.Context, backlog []cloudprovider.Interruption) []cloudprovider.Interruption {
	notices := c.pollNotices(ctx, backlog)
	retry := c.handleInterruptions(ctx, notices)
	if acker, ok := c.interruptions.(cloudprovider.InterruptionAcker); ok && len(notices) > len(retry) {
		done := slices.DeleteFunc(slices.Clone(notices), func(n cloudprovider.Interruption) bool { return slices.Contains(retry, n) })
		if err := acker.Ack(ctx, done); err != nil && ctx.Err() == nil {
			c.log.Named("interruptions").Warn("acknowledging interruption notices; they come again and are handled again", zap.Error(err))
		}
	}
	return retry
}

// pollNotices polls the source once and returns the backlog followed by the new notices. A
// notice delivered again replaces its copy in the backlog: the source wants the newest receipt
// (SQS's), and the backlog does not gain a copy at every redelivery while a node cannot be
// annotated.
func (c *Controller) pollNotices(ctx context.Context, backlog []cloudprovider.Interruption) []cloudprovider.Interruption {
	notices, err := c.interruptions.Poll(ctx)
	if err != nil && ctx.Err() == nil {
		c.log.Named("interruptions").Warn("polling interruptions", zap.Error(err))
	}
	backlog = slices.DeleteFunc(backlog, func(b cloudprovider.Interruption) bool {
		return slices.ContainsFunc(notices, func(n cloudprovider.Interruption) bool { return sameNotice(b, n) })
	})
	return append(backlog, notices...)
}

// sameNotice reports whether a and b announce the same thing, whatever their receipts.
func sameNotice(a, b cloudprovider.Interruption) bool {
	return a.InstanceID == b.InstanceID && a.Kind == b.Kind && a.State == b.State && a.At.Equal(b.At) && a.Deadline.Equal(b.Deadline)
}

// handleInterruptions acts on notices as pollInterruptions says and returns those it could not
// act on yet.
func (c *Controller) handleInterruptions(ctx context.Context, notices []cloudprovider.Interruption) []cloudprovider.Interruption {
	log := c.log.Named("interruptions")
	if len(notices) == 0 {
		return nil
	}
	recs, err := c.records.List(ctx)
	if err != nil {
		log.Error("reading the launch records of interrupted instances; retried at the next poll", zap.Error(err))
		return notices
	}
	nodes, err := c.nodes()
	if err != nil {
		log.Error("listing nodes; retried at the next poll", zap.Error(err))
		return notices
	}
	idx := newNodeIndex(nodes)
	removing := c.launches.active(callRemove)
	var retry []cloudprovider.Interruption
	for _, n := range notices {
		r, ok := recordByInstance(recs, n.InstanceID)
		if !ok {
			continue // another cluster's, or already gone
		}
		nd := idx.forRecord(r)
		name := ""
		if nd != nil {
			name = nd.Name
		}
		l := log.With(zap.String(keyNode, name), zap.String(keyInstanceID, n.InstanceID), zap.String(keyReason, string(n.Kind)))
		if n.Kind == cloudprovider.StateChange && (n.State == "running" || removing[r.LaunchID]) {
			continue // no interruption, or Tiler's own removal
		}
		c.metrics.Interruptions.WithLabelValues(string(n.Kind)).Inc()
		marked := true
		if n.Kind == cloudprovider.StateChange {
			// A state change does not say why; the instance does (see markIfCapacityLost).
			marked = c.markIfCapacityLost(l, r, c.askInstance(ctx, l, r.InstanceID)) != ""
		} else {
			c.unavailable.MarkUnavailable(r.Offering, string(n.Kind))
		}
		l = l.With(zap.Bool("offeringMarkedUnavailable", marked))
		deadline := noticeDeadline(n)
		if nd == nil {
			if deadline.IsZero() {
				l.Info("rebalance recommended before the node registered")
				continue
			}
			// The instance goes before it ever serves: its launch is removed now (instance and
			// record), so that the next batch plans its pods on another offering instead of
			// counting them in flight on it until the RegistrationTimeout.
			l.Info("instance interrupted before its node registered: launch removed")
			c.startRemoval(ctx, l, Removal{Record: r, Reason: RemovalInterrupted}, c.clock.Now())
			continue
		}
		ann := map[string]*string{api.AnnotationInterruption: ptr.To(string(n.Kind))}
		if old, ok := parseDeadline(nd); ok && (deadline.IsZero() || old.Before(deadline)) {
			deadline = old // an earlier notice's deadline stands
		}
		if !deadline.IsZero() {
			ann[api.AnnotationInterruptionDeadline] = ptr.To(deadline.UTC().Format(time.RFC3339))
		}
		if err := c.annotate(ctx, name, ann, ptr.To(true)); err != nil {
			l.Error("annotating the interrupted node; retried at the next poll", zap.Error(err))
			retry = append(retry, n)
			continue
		}
		msg := "no deadline"
		if !deadline.IsZero() {
			msg = "reclaimed at " + deadline.UTC().Format(time.RFC3339)
		}
		c.recorder.Eventf(nodeRef(name), corev1.EventTypeWarning, "Interrupted", "%s notice for instance %s (%s): cordoned; its pods are replaced before they go",
			n.Kind, n.InstanceID, msg)
		l.Info("instance interrupted: node cordoned, handed to the disruption executor", zap.Time("deadline", deadline))
	}
	c.wakeDisruption()
	return retry
}

// noticeDeadline is when the noticed instance goes: the notice's Deadline, else two minutes
// after an EC2 spot interruption, at once for a preemption or a state change, none for a
// rebalance recommendation.
func noticeDeadline(n cloudprovider.Interruption) time.Time {
	switch {
	case !n.Deadline.IsZero():
		return n.Deadline
	case n.Kind == cloudprovider.SpotInterruption:
		return n.At.Add(cloudprovider.SpotInterruptionNotice)
	case n.Kind == cloudprovider.RebalanceRecommendation:
		return time.Time{}
	}
	return n.At
}

// parseDeadline reads the node's api.AnnotationInterruptionDeadline.
func parseDeadline(n *corev1.Node) (time.Time, bool) {
	v, ok := n.Annotations[api.AnnotationInterruptionDeadline]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// wakeDisruption asks the disruption loop for a pass now; wakes while one is pending coalesce.
func (c *Controller) wakeDisruption() {
	select {
	case c.disruptWake <- struct{}{}:
	default:
	}
}

// interruptedNodes returns the interrupted nodes (api.AnnotationInterruption) that carry no
// disruption action yet, with their deadline (zero: none).
func interruptedNodes(nodes []*corev1.Node) map[string]time.Time {
	out := map[string]time.Time{}
	for _, n := range nodes {
		if _, ok := n.Annotations[api.AnnotationInterruption]; !ok || n.Annotations[api.AnnotationDisruptionAction] != "" || n.DeletionTimestamp != nil {
			continue
		}
		d, _ := parseDeadline(n)
		out[n.Name] = d
	}
	return out
}

// startInterrupted starts an Interrupted action for every interrupted node without one, as
// PlanInterrupted decides. Other actions under way, the pools' budgets and settledness do not hold
// it back. It returns the IDs of the actions started.
func (c *Controller) startInterrupted(ctx context.Context, s *State, idx nodeIndex, interrupted map[string]time.Time, now time.Time) ([]string, error) {
	at := *s
	at.Now = now
	actions, err := PlanInterrupted(&at, interrupted)
	if err != nil {
		return nil, err
	}
	var started []string
	for _, a := range actions {
		if err := c.startAction(ctx, s, idx, a, now); err != nil {
			c.log.Warn("interrupted node: action not started", zap.Strings(keyNodes, a.Nodes), zap.Error(err))
			continue
		}
		started = append(started, a.ID)
	}
	return started, nil
}

// PlanInterrupted decides, at s.Now, the action of every interrupted node (by name, with the time
// the cloud reclaims it; zero: no deadline), in node-name order: the plan's Interrupted action —
// the node's pods on the rest of the cluster and at most one replacement
// (simulator.PlanDisruption with Options.Interrupted, over s.Catalog with s.Unavailable marked, so
// that the replacement fails over from an offering a notice marked unavailable) — or, when the
// plan finds no place for some pod, a Delete action that drains the node at once (its pods become
// pending, and the batches buy for them as for any pending pod). A node the plan keeps as
// unmanaged gets none. Nodes already under an action (api.AnnotationDisruptionAction) are neither
// candidates nor destinations. It is the pure half of the controller's interruption handling; a
// replay calls it as the controller does.
func PlanInterrupted(s *State, interrupted map[string]time.Time) ([]api.DisruptionAction, error) {
	now := s.Now
	var disrupting []string
	for _, n := range s.Nodes {
		if n.Annotations[api.AnnotationDisruptionAction] != "" {
			disrupting = append(disrupting, n.Name)
		}
	}
	cat, _ := PlanningCatalog(s.Catalog, s.Unavailable, now)
	dp, err := simulator.PlanDisruption(simulator.DisruptionInput{Snapshot: s.snapshot(nil), Catalog: cat, Policy: s.Policy,
		Options: simulator.DisruptionOptions{Now: now, Seed: fmt.Sprintf("i%d", now.UnixNano()), Interrupted: interrupted,
			Disrupting: disrupting, MaxActions: 1}})
	if err != nil {
		return nil, fmt.Errorf("planning the replacement of interrupted nodes: %w", err)
	}
	planned := map[string]api.DisruptionAction{}
	for _, a := range dp.Actions {
		if a.Reason == api.ReasonInterrupted && len(a.Nodes) == 1 {
			planned[a.Nodes[0]] = a
		}
	}
	kept := map[string]api.KeptNode{}
	for _, k := range dp.Kept {
		kept[k.Name] = k
	}
	var out []api.DisruptionAction
	for _, name := range sortedKeys(interrupted) {
		a, ok := planned[name]
		if !ok {
			k := kept[name]
			if k.Reason == api.KeepUnmanaged {
				continue
			}
			a = api.DisruptionAction{Kind: api.ActionDelete, Reason: api.ReasonInterrupted, Pool: k.Pool, Nodes: []string{name},
				Message: fmt.Sprintf("no replacement (%s: %s); drained at once", k.Reason, k.Message)}
			if d := interrupted[name]; !d.IsZero() {
				a.Deadline = &d
			}
			a.ID = api.ActionID(a)
		}
		out = append(out, a)
	}
	return out, nil
}

// InterruptionDrainDue reports whether an interrupted node whose replacement is not usable yet
// must drain now: its deadline (zero: none) is within margin (Config.InterruptionDrainMargin).
func InterruptionDrainDue(deadline, now time.Time, margin time.Duration) bool {
	return !deadline.IsZero() && !now.Before(deadline.Add(-margin))
}

// PlanningCatalog is the catalog a plan made at now reads: cat with the offerings of unavailable
// that are still unavailable at now marked (cloudprovider.MarkCatalog), and how many it marked.
func PlanningCatalog(cat *catalog.Catalog, unavailable []UnavailableEntry, now time.Time) (*catalog.Catalog, int) {
	return cloudprovider.MarkCatalog(cat, unavailable, now)
}

// UnavailableEntry is an offering marked unavailable (State.Unavailable), named here for callers
// that keep the list themselves and may not import the cloud providers (a replay).
type UnavailableEntry = cloudprovider.UnavailableEntry

// The EC2 spot interruption as the controller reads it, for the same callers: the notice's kind
// (the value of api.AnnotationInterruption) and the time from the notice to the reclaim.
const (
	SpotInterruptionKind   = string(cloudprovider.SpotInterruption)
	SpotInterruptionNotice = cloudprovider.SpotInterruptionNotice
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func recordByInstance(recs []LaunchRecord, id string) (LaunchRecord, bool) {
	for _, r := range recs {
		if r.InstanceID == id {
			return r, true
		}
	}
	return LaunchRecord{}, false
}
