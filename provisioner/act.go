package provisioner

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// act carries out a batch's Decision against the API server and the cloud, in the order the
// batch used to interleave deciding and doing: the relinked node names and the housekeeping first
// (so that a re-planned pod is not counted on a launch that is being removed), then the
// nominations, placeholders and metrics, then the launches with the tolerations beside them. What
// fails is logged, and decided again by a later batch.
//
// With wait, act waits for the batch's launch calls and Result names what they did; without (the
// controller's loop: launches.go), the calls run on after act returns, and the ProvisioningRequest
// conditions that wait for them are written once they have returned.
func (c *Controller) act(ctx context.Context, s *State, d *Decision, wait bool) *Result {
	log := c.log.With(zap.String(keyBatch, d.Batch))
	res := &Result{Pending: d.Pending, Plan: d.Plan, Decision: d}
	var running []launchResults // the launch calls act did not wait for
	started := func(calls launchResults) {
		if !wait {
			running = append(running, calls)
			return
		}
		launched, failed := calls()
		res.Launched, res.Failed = append(res.Launched, launched...), append(res.Failed, failed...)
	}
	// ProvisioningRequest conditions are written last: some wait for the launches.
	defer func() {
		if wait || len(running) == 0 {
			c.writeRequests(ctx, log, d.RequestUpdates, res.Launched, d.Now)
			return
		}
		now, later := splitAfterLaunch(d.RequestUpdates)
		c.writeRequests(ctx, log, now, nil, d.Now)
		if len(later) > 0 {
			c.launches.wg.Go(func() {
				var launched []string
				for _, calls := range running {
					l, _ := calls()
					launched = append(launched, l...)
				}
				c.writeRequests(ctx, log, later, launched, d.Now)
			})
		}
	}()
	c.relink(ctx, log, s.Records, d.Relink)
	for _, a := range d.Announce {
		c.announce(ctx, log, a, s.Now)
	}
	if d.KeepErr != nil {
		log.Warn("empty nodes are not kept for the forecast this batch", zap.Error(d.KeepErr))
	}
	for _, o := range d.MarkUnavailable {
		c.unavailable.MarkUnavailable(o, RemovalRegistrationTimeout)
	}
	// Before the removals: a disruption pass that sees the launch gone sees its image remembered.
	c.rememberImageFailures(ctx, d.Now, d.FailedImages)
	// Decide counted every removal as done: one that fails leaves its node managed (an empty one
	// still costs; a launch that never registered is not counted in the cost), and the next batch
	// decides it again.
	fleet := d.Fleet
	for _, rm := range d.Remove {
		if !wait {
			c.startRemoval(ctx, log, rm, s.Now)
			continue
		}
		if c.removeAs(ctx, log, rm, s.Now) {
			res.Deleted = append(res.Deleted, rm.Record.NodeName)
			continue
		}
		fleet.Nodes++
		if rm.Reason == RemovalEmpty {
			fleet.CostPerHour += rm.Record.PricePerHour
			if fleet.CostByPool == nil {
				fleet.CostByPool = map[PoolCapacity]float64{}
			}
			fleet.CostByPool[PoolCapacity{rm.Record.Pool, rm.Record.CapacityType}] += rm.Record.PricePerHour
		}
	}
	c.metrics.ManagedNodes.Set(float64(fleet.Nodes))
	c.metrics.ManagedCost.Set(fleet.CostPerHour)
	c.metrics.GPUAllocationRatio.Set(fleet.GPUAllocationRatio)
	c.metrics.FleetCost.Reset()
	for k, v := range fleet.CostByPool {
		c.metrics.FleetCost.WithLabelValues(k.Pool, string(k.CapacityType)).Set(v)
	}
	if d.ChargebackErr != nil {
		log.Warn("no chargeback this batch", zap.Error(d.ChargebackErr))
	}
	c.metrics.setCost(d.Chargeback)
	if len(res.Deleted) > 0 {
		c.poke()
	}
	if c.nominations != nil {
		c.nominations.apply(d.Nominations)
	}
	if d.RecheckAfter > 0 {
		c.pokeAfter(ctx, d.RecheckAfter)
	}
	if len(d.Retry) > 0 {
		log.Info("retrying launches the cloud API failed", zap.Int(keyRetries, len(d.Retry)))
		started(c.startLaunches(ctx, log, d.Retry, podIndex(s.Pods), false))
	}
	if s.ExpectedErr != nil {
		log.Warn("pre-scaling skipped for this batch", zap.Error(s.ExpectedErr))
	} else {
		c.syncPlaceholders(ctx, log, d.Placeholders)
	}
	for _, e := range d.RelayoutsEnded {
		c.endRelayout(ctx, log, e)
	}
	c.metrics.PendingPods.Set(float64(d.Pending))
	c.metrics.OldestPendingPod.Set(d.OldestPending.Seconds())
	if d.Pending == 0 {
		return res
	}
	c.metrics.UnavailableOfferings.Set(float64(d.UnavailableOfferings))
	c.metrics.SimulationDuration.Observe(d.SimulationTime.Seconds())
	if d.PlanErr != nil {
		return res
	}
	plan := d.Plan
	c.metrics.PlanCost.Set(plan.CostPerHour)
	c.metrics.PlanLowerBound.Set(plan.LowerBoundPerHour)
	log.Info("planned", zap.Int(keyPending, d.Pending), zap.Int(keyNewNodes, len(plan.NewNodes)),
		zap.Float64(keyCost, plan.CostPerHour), zap.Float64(keyLowerBound, plan.LowerBoundPerHour),
		zap.Int(keyUnschedulable, len(plan.Unschedulable)), zap.Int(keyInFlight, d.inFlight), zap.Duration(keySimulation, d.SimulationTime))
	for _, u := range plan.Unschedulable {
		log.Debug("no place", zap.String(keyPod, u.Pod), zap.String(keyReason, string(u.Code)+": "+u.Reason))
	}
	c.reportUnplaceable(plan.Unschedulable, podIndex(s.Pods), s.Now)
	// The cloud calls do not wait for the pods' reservation tolerations: those are needed before
	// the node is Ready, not before it is ordered, and the launch records written first are what
	// a restart recovers from (a pod that misses its toleration waits for the reservation to end).
	for _, r := range d.Relayouts {
		c.startRelayout(ctx, log, r)
	}
	var tolerating sync.WaitGroup
	if c.reservations != nil {
		tolerating.Go(func() { c.reservations.tolerate(ctx, log, d.Tolerations) })
	}
	c.metrics.LaunchesHeld.Set(float64(len(d.Held)))
	if len(d.Held) > 0 {
		log.Warn("launches held back: their pool's launches keep failing to register", zap.Int("held", len(d.Held)), zap.String("why", d.Held[0].Why))
		pods := podIndex(s.Pods)
		for _, h := range d.Held {
			for _, key := range h.Record.Pods {
				if p := pods[key]; p != nil {
					c.recorder.Eventf(p, corev1.EventTypeWarning, "LaunchHeld", "no node launched for the pod yet: %s", h.Why)
				}
			}
		}
	}
	if len(d.Launch) > 0 {
		started(c.startLaunches(ctx, log, c.stamped(d.Launch), d.planned, true))
	}
	tolerating.Wait()
	c.metrics.BatchDuration.Observe(c.clock.Since(s.Now).Seconds())
	return res
}

// startRemoval removes a launch (Decision.Remove) in a goroutine the controller tracks
// (launches.go), so that a Delete or List the cloud holds holds no batch; a removal already under
// way is not started again. The batches after count the launch as gone meanwhile
// (State.Removing); one that fails leaves the record, and the next batch decides again. A removal
// that succeeds asks for a batch, as act's do.
func (c *Controller) startRemoval(ctx context.Context, log *zap.Logger, rm Removal, now time.Time) {
	if !c.launches.begin(rm.Record.LaunchID, callRemove) {
		return
	}
	c.launches.wg.Go(func() {
		defer c.launches.end(rm.Record.LaunchID)
		if c.removeAs(ctx, log, rm, now) {
			c.poke()
		}
	})
}

// removeAs carries out a removal the batch decided: an empty node through removeEmpty (a pod may
// have come since); a launch whose Node is gone (RemovalNodeGone) once the cloud is asked why, so
// that an instance it ended for want of capacity marks its offering unavailable
// (markIfCapacityLost), with a Warning Event NodeGone; any other through remove.
func (c *Controller) removeAs(ctx context.Context, log *zap.Logger, rm Removal, now time.Time) bool {
	switch rm.Reason {
	case RemovalEmpty:
		return c.removeEmpty(ctx, log, rm, now)
	case RemovalNodeGone:
		r := rm.Record
		l := log.With(zap.String(keyLaunchID, r.LaunchID), zap.String(keyInstanceID, r.InstanceID))
		why := "the cloud does not know its instance"
		if r.InstanceID != "" {
			if inst := c.askInstance(ctx, l, r.InstanceID); inst != nil {
				why = "the cloud reports its instance " + r.InstanceID + " as " + c.endedBecause(l, r, inst, inst.State)
			}
		}
		l.Info("removing a launch whose Node is gone after it was Ready", zap.String("why", why))
		c.recorder.Eventf(nodeRef(r.NodeName), corev1.EventTypeWarning, "NodeGone",
			"node %s was Ready and its Node is gone (%s); the launch is removed and its pods bought for again", r.NodeName, why)
	}
	return c.remove(ctx, log, rm.Record, rm.Node, rm.Reason)
}

// removeTracked is remove with the launch marked as being removed (State.Removing), so that no
// batch and no instance sweep decides on it meanwhile (the sweep would otherwise see its instance
// terminating and its Node gone halfway through, and remove it a second time); it removes
// nothing, and reports false, when a call of the launch is under way already.
func (c *Controller) removeTracked(ctx context.Context, log *zap.Logger, r LaunchRecord, node, reason string) bool {
	if !c.launches.begin(r.LaunchID, callRemove) {
		return false
	}
	defer c.launches.end(r.LaunchID)
	return c.remove(ctx, log, r, node, reason)
}

// pokeAfter asks for a batch after d, unless ctx ends first; the returned channel is closed when
// its goroutine ends. A wake-up already due no later is enough: then no goroutine is started (the
// channel is closed), since the batch it wakes asks again for what is still due (every batch
// sets its RecheckAfter), and a batch per call of every batch would pile up goroutines while the
// cloud is in trouble.
func (c *Controller) pokeAfter(ctx context.Context, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	at := c.clock.Now().Add(d)
	c.mu.Lock()
	if !c.wakeAt.IsZero() && !at.Before(c.wakeAt) {
		c.mu.Unlock()
		close(done)
		return done
	}
	c.wakeAt = at
	c.mu.Unlock()
	go func() {
		defer close(done)
		defer func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.wakeAt.Equal(at) {
				c.wakeAt = time.Time{}
			}
		}()
		select {
		case <-ctx.Done():
		case <-c.clock.After(d):
			c.poke()
		}
	}()
	return done
}

// announce records a Normal "Provisioned" Event on a launched node the first time it is Ready,
// its boot time and, in its launch record, ReadyAt (a failed write is logged: this process still
// knows, Memory.Announced), and sets its tiler.dev/pool-hash from the launch record when the node has
// none (a failed write is logged; the node is then judged for drift by its labels and taints).
func (c *Controller) announce(ctx context.Context, log *zap.Logger, a Announcement, now time.Time) {
	r := a.Record
	if r.PoolHash != "" && a.Node.Annotations[api.AnnotationPoolHash] == "" {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.AnnotationPoolHash: r.PoolHash}}})
		if _, err := c.kube.CoreV1().Nodes().Patch(ctx, a.Node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			log.Warn("setting the node's pool hash", zap.String(keyNode, a.Node.Name), zap.Error(err))
		}
	}
	if r.ReadyAt.IsZero() {
		// From now on the launch is no longer in flight, across restarts too.
		if err := c.records.SetReadyAt(ctx, r.LaunchID, now); err != nil {
			log.Warn("recording that the node is Ready", zap.String(keyNode, a.Node.Name), zap.Error(err))
		}
	}
	c.recordBoot(r.Pool, a.BootTime)
	c.recorder.Eventf(a.Node, corev1.EventTypeNormal, "Provisioned", "launched by Tiler as %s in %s (%s, $%.4f/h) for %d pods; Ready %.0fs after launch",
		r.InstanceType, r.Zone, r.CapacityType, r.PricePerHour, len(r.Pods), now.Sub(r.CreatedAt).Seconds())
}
