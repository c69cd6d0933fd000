package provisioner

import (
	"context"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// The instance sweep holds the launch records and the cloud's instances to each other while the
// controller runs, as Recover does at a start. Without it, an instance the cloud ended with no
// interruption notice (deleted from the console, a spot request that failed after launch, a
// provider without a notice queue) kept its record: before its Node registered, as capacity in
// flight until the registration timeout (10 min), with no purchase for the pods it "covered";
// after, until the Node went NotReady, and then removed as a registration timeout. And an
// instance no record names (a launch call that created it after its record was removed) ran
// until the next restart's Recover. Every Config.InstanceSweepPeriod the leader lists the
// instances, then the records (a record is written before its launch call, so an instance the
// list shows has its record in the later read unless it was removed), and:
//   - a record whose instance the cloud lists as terminating or terminated, or no longer lists
//     and answers for by ID as ending or ended (withEnded), is removed at once (instance, Node,
//     record) as RemovalInstanceGone;
//   - a record that names an instance the cloud neither lists nor knows is removed on the second
//     sweep running that finds it so (an eventually consistent list, an informer that lags), and
//     only while its Node is missing or not Ready: a Ready Node is not removed on the absence of
//     evidence, its readiness says more than a list;
//   - an instance that no record names and that is not ending is deleted on the second sweep
//     running that finds it so;
//   - a launch with a call under way (launch or removal) and a node under a disruption action
//     (the executor's to delete, and it knows when the cloud took the node first) are left alone.
//     A disruption's replacement is not: the executor never removes one, and a replacement
//     keeps its record's DisruptionAction for life. One the cloud ended while booting is removed
//     like any launch, and the executor, finding its replacement's record gone, abandons the
//     action at its next pass (an interrupted node's is planned again) instead of waiting out
//     the registration timeout.
//
// A removed launch's offering is marked unavailable when the cloud says it ended the instance for
// want of capacity (markIfCapacityLost), so that its pods are bought for on another offering.
//
// A record with no instance ID and no instance is a launch whose call failed; its retries and
// the registration timeout handle it (housekeep).

// sweepFindings is what one sweep found: the records to remove and the instances to delete now,
// and what to look at again next sweep (suspects, keyed by suspectKey).
type sweepFindings struct {
	Gone     []strayRecord
	Orphans  []*cloudprovider.Instance
	Suspects map[string]bool
}

// strayRecord is a launch whose instance is gone or ending, and the Node to delete with it.
type strayRecord struct {
	Record LaunchRecord
	Node   string
	// State is the instance's state, "gone" when the cloud does not list it.
	State string
	// Instance is the ending instance as the cloud listed or answered for it (withEnded); nil
	// when it does neither.
	Instance *cloudprovider.Instance
}

// suspectKey names a record or an instance in sweepFindings.Suspects.
func suspectKey(kind, id string) string { return kind + "/" + id }

// findStrays decides one sweep (see above): busy are the launch IDs with a call under way, prev
// the suspects of the sweep before.
func findStrays(recs []LaunchRecord, insts []*cloudprovider.Instance, idx nodeIndex, busy, prev map[string]bool) sweepFindings {
	out := sweepFindings{Suspects: map[string]bool{}}
	byLaunch := liveByLaunch(insts)
	named := map[string]bool{}
	for _, r := range recs {
		named[r.LaunchID] = true
		n := idx.forRecord(r)
		if busy[r.LaunchID] || (n != nil && n.Annotations[api.AnnotationDisruptionAction] != "") {
			continue
		}
		inst := byLaunch[r.LaunchID]
		switch {
		case inst != nil && inst.Ending():
			r.InstanceID = inst.ID
			out.Gone = append(out.Gone, strayRecord{Record: r, Node: idx.nodeToDelete(r), State: inst.State, Instance: inst})
		case inst == nil && r.InstanceID != "" && (n == nil || !snapshot.IsNodeReady(n)):
			key := suspectKey("record", r.LaunchID)
			if prev[key] {
				out.Gone = append(out.Gone, strayRecord{Record: r, Node: idx.nodeToDelete(r), State: "gone"})
			} else {
				out.Suspects[key] = true
			}
		}
	}
	for _, i := range insts {
		if named[i.LaunchID] || busy[i.LaunchID] || i.Ending() {
			continue
		}
		key := suspectKey("instance", i.ID)
		if prev[key] {
			out.Orphans = append(out.Orphans, i)
		} else {
			out.Suspects[key] = true
		}
	}
	return out
}

// liveByLaunch indexes the instances by launch ID; should the cloud list two under one launch ID,
// the live one counts (an ending one listed after it would otherwise have its record removed, and
// the live instance, known by its launch ID, would never be deleted as an orphan: it would leak).
func liveByLaunch(insts []*cloudprovider.Instance) map[string]*cloudprovider.Instance {
	out := map[string]*cloudprovider.Instance{}
	for _, i := range insts {
		if o := out[i.LaunchID]; o == nil || o.Ending() {
			out[i.LaunchID] = i
		}
	}
	return out
}

// runSweep sweeps every Config.InstanceSweepPeriod until ctx ends (Run starts it on the leader;
// Recover has done the same work at the start, so the first sweep comes one period later).
func (c *Controller) runSweep(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.InstanceSweepPeriod)
	defer t.Stop()
	var suspects map[string]bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			suspects = c.sweep(ctx, suspects)
		}
	}
}

// sweep runs one sweep (see above) and returns its suspects. When the cloud or the caches cannot
// be read, it does nothing and keeps the suspects it had.
func (c *Controller) sweep(ctx context.Context, prev map[string]bool) map[string]bool {
	log := c.log.Named("sweep")
	insts, err := c.provider.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("listing instances; the sweep waits for the next period", zap.Error(err))
		}
		return prev
	}
	recs, err := c.records.List(ctx)
	if err != nil {
		log.Warn("reading the launch records; the sweep waits for the next period", zap.Error(err))
		return prev
	}
	nodes, err := c.nodes()
	if err != nil {
		log.Warn("listing nodes; the sweep waits for the next period", zap.Error(err))
		return prev
	}
	busy := c.launches.active(callLaunch)
	for id := range c.launches.active(callRemove) {
		if busy == nil {
			busy = map[string]bool{}
		}
		busy[id] = true
	}
	insts = c.withEnded(ctx, log, recs, insts, busy)
	f := findStrays(recs, insts, newNodeIndex(nodes), busy, prev)
	now := c.clock.Now()
	for _, g := range f.Gone {
		l := log.With(zap.String(keyLaunchID, g.Record.LaunchID), zap.String(keyInstanceID, g.Record.InstanceID), zap.String("state", g.State))
		why := c.endedBecause(l, g.Record, g.Instance, g.State)
		l.Info("removing a launch whose instance the cloud ended")
		c.recorder.Eventf(nodeRef(g.Record.NodeName), corev1.EventTypeWarning, "InstanceGone",
			"the cloud reports instance %s of node %s as %s; the launch is removed and its pods bought for again", g.Record.InstanceID, g.Record.NodeName, why)
		c.startRemoval(ctx, l, Removal{Record: g.Record, Node: g.Node, Reason: RemovalInstanceGone}, now)
	}
	for _, i := range f.Orphans {
		l := log.With(zap.String(keyInstanceID, i.ID), zap.String(keyLaunchID, i.LaunchID))
		l.Warn("deleting an instance no launch record names")
		if err := c.provider.Delete(ctx, i.ID); err != nil && !cloudprovider.IsNotFound(err) {
			l.Error("deleting the orphan instance; tried again next sweep", zap.Error(err))
			f.Suspects[suspectKey("instance", i.ID)] = true
			continue
		}
		c.metrics.Deletions.WithLabelValues("orphan").Inc()
	}
	return f.Suspects
}

// withEnded returns insts, the cloud's list, with the instances of the records it does not list
// as the cloud answers for them by ID: a list shows only instances that are not terminated, and an
// instance that ended a while ago (EC2 answers for one for about an hour) is then known as ended,
// with the cloud's reason, at once, rather than as missing until a second sweep. An instance the
// cloud does not know, or cannot be asked for (logged), stays missing; records with a call under
// way (skip) are not asked for.
func (c *Controller) withEnded(ctx context.Context, log *zap.Logger, recs []LaunchRecord, insts []*cloudprovider.Instance, skip map[string]bool) []*cloudprovider.Instance {
	listed := map[string]bool{}
	for _, i := range insts {
		listed[i.ID] = true
	}
	for _, r := range recs {
		if r.InstanceID == "" || listed[r.InstanceID] || skip[r.LaunchID] {
			continue
		}
		if got := c.askInstance(ctx, log, r.InstanceID); got != nil {
			listed[got.ID] = true
			insts = append(insts, got)
		}
	}
	return insts
}

// askInstance returns the cloud's answer for the instance id; nil when the cloud does not know it
// or cannot be asked (logged).
func (c *Controller) askInstance(ctx context.Context, log *zap.Logger, id string) *cloudprovider.Instance {
	got, err := c.provider.Get(ctx, id)
	if err != nil {
		if !cloudprovider.IsNotFound(err) && ctx.Err() == nil {
			log.Warn("asking the cloud for an instance", zap.String(keyInstanceID, id), zap.Error(err))
		}
		return nil
	}
	return got
}

// endedBecause is markIfCapacityLost told for an Event: the instance's state, and the cloud's
// code when the offering was marked.
func (c *Controller) endedBecause(log *zap.Logger, r LaunchRecord, inst *cloudprovider.Instance, state string) string {
	if code := c.markIfCapacityLost(log, r, inst); code != "" {
		return state + " (" + code + ": capacity lost, offering marked unavailable)"
	}
	return state
}

// markIfCapacityLost marks the offering of r unavailable when the cloud ended r's instance inst
// for want of capacity (Instance.CapacityLost: EC2's Server.InsufficientInstanceCapacity on a
// launch that lost its capacity, a spot instance taken back with no notice), as a launch refused
// for it would be, so that the pods are bought for elsewhere rather than on the same offering
// again. An instance a person deleted says nothing about capacity and marks nothing, nor does a
// nil inst (the cloud does not know the instance). It returns the cloud's code when it marked, ""
// otherwise.
func (c *Controller) markIfCapacityLost(log *zap.Logger, r LaunchRecord, inst *cloudprovider.Instance) string {
	if inst == nil || !inst.CapacityLost {
		return ""
	}
	code := inst.EndCode
	if code == "" {
		code = "capacity-lost"
	}
	c.unavailable.MarkUnavailable(r.Offering, code)
	log.Info("the cloud ended the instance for want of capacity: offering marked unavailable", zap.String("code", code))
	return code
}
