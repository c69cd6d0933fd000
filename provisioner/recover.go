package provisioner

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// RemovalInstanceGone is the removal, by Recover or the instance sweep (sweep.go), of a launch
// whose instance the cloud no longer has or is ending (terminating or terminated): a controller
// killed in the middle of a removal (after the instance's deletion began, before its record was
// deleted), or an instance the cloud ended with no notice.
const RemovalInstanceGone = "instance-gone"

// Recover reconciles launch records with the cloud after a (re)start: a record without an
// instance ID and without an instance is launched again with the same launch ID (the provider
// returns the instance if the first call got through, so nothing is bought twice); a record whose
// instance ID the cloud no longer lists, or whose instance is ending, is removed with its Node,
// never relaunched (its instance was deleted: a relaunch would buy the node a second time, and
// the Node, with any disruption action on it, may be gone already); a record that is older than the
// registration timeout and has no instance is dropped; an instance of this cluster that no record
// names is an orphan and is deleted, so nothing leaks. A record whose Node registered under
// another name than the planned one (found by its provider ID) is relinked to it (see relink).
// Call it after Start: it reads the Nodes from the informer.
func (c *Controller) Recover(ctx context.Context) error { return c.recover(ctx, true) }

// recover is Recover; without wait, the relaunches run on after it returns (launches.go).
func (c *Controller) recover(ctx context.Context, wait bool) error {
	recs, err := c.records.List(ctx)
	if err != nil {
		return err
	}
	nodes, err := c.nodes()
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	insts, err := c.provider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	byLaunch := liveByLaunch(c.withEnded(ctx, c.log, recs, insts, nil))
	known := map[string]bool{}
	now := c.clock.Now()
	var kept []LaunchRecord
	var relaunches []launchResults
	defer func() {
		for _, calls := range relaunches {
			if wait {
				calls()
			}
		}
	}()
	for _, r := range recs {
		known[r.LaunchID] = true
		inst := byLaunch[r.LaunchID]
		switch {
		case inst != nil && inst.Ending(), inst == nil && r.InstanceID != "":
			// Not relaunched: the launch ID was bought once already (see RemovalInstanceGone).
			// Its record must go now: it would count as capacity in flight, and a Node that is
			// gone reads as one not registered yet, until the registration timeout.
			// remove deletes the instance by its ID too, so one the cloud's list does not show yet
			// (an eventually consistent API) is not left running.
			state := "gone"
			if inst != nil {
				r.InstanceID, state = inst.ID, inst.State
			}
			l := c.log.With(zap.String(keyLaunchID, r.LaunchID), zap.String(keyInstanceID, r.InstanceID), zap.String("state", state))
			l.Info("removing a launch whose instance is gone")
			c.markIfCapacityLost(l, r, inst)
			// A removal that fails (logged) leaves the record to housekeeping's registration
			// timeout: the Node is gone or goes NotReady with its instance.
			c.remove(ctx, c.log, r, r.NodeName, RemovalInstanceGone)
			continue
		case inst != nil && (r.InstanceID == "" || r.Image == "" && inst.Image != "" || r.Settings == "" && inst.Settings != ""):
			// Linked to its instance; or a record kept before the image or the settings were (the
			// controller was upgraded), which learns them here so that the node can drift by them.
			r.InstanceID, r.Image, r.Settings = inst.ID, inst.Image, inst.Settings
			if err := c.records.Put(ctx, r); err != nil {
				return err
			}
		case inst == nil && now.Sub(r.CreatedAt) > c.cfg.RegistrationTimeout:
			if err := c.records.Delete(ctx, r.LaunchID); err != nil {
				return err
			}
			continue
		case inst == nil:
			c.log.Info("relaunching a recorded launch", zap.String(keyLaunchID, r.LaunchID))
			relaunches = append(relaunches, c.startLaunches(ctx, c.log, []LaunchRecord{r}, nil, false))
			continue
		}
		kept = append(kept, r)
	}
	_, moved := newNodeIndex(nodes).relink(kept)
	c.relink(ctx, c.log, kept, moved)
	for _, i := range insts {
		if !known[i.LaunchID] {
			c.log.Warn("deleting an orphan instance", zap.String(keyInstanceID, i.ID), zap.String(keyLaunchID, i.LaunchID))
			if err := c.provider.Delete(ctx, i.ID); err != nil && !cloudprovider.IsNotFound(err) {
				return fmt.Errorf("deleting orphan %s: %w", i.ID, err)
			}
			c.metrics.Deletions.WithLabelValues("orphan").Inc()
		}
	}
	return nil
}
