package provisioner

import (
	"context"
	"fmt"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// Result reports what one batch did.
type Result struct {
	Pending  int
	Plan     *api.Plan
	Launched []string
	Failed   []string
	Deleted  []string
}

// Reconcile runs one batch: housekeeping of launches and empty nodes, then, when pods are
// provisionable, snapshot → simulate → launch. Tests call it directly instead of Run.
func (c *Controller) Reconcile(ctx context.Context) (*Result, error) {
	start := c.clock.Now()
	c.mu.Lock()
	c.batches++
	batch := fmt.Sprintf("%d-%d", start.Unix(), c.batches)
	c.mu.Unlock()
	log := c.log.With(zap.String(keyBatch, batch))
	c.refreshPolicy(ctx)
	res := &Result{}
	all, err := c.pods()
	if err != nil {
		return nil, err
	}
	// Placeholder pods stand for expected pods the pre-scaler returns anyway: no batch sees them.
	pods, placeholders := splitPlaceholders(all)
	nodes, err := c.nodes()
	if err != nil {
		return nil, err
	}
	recs, err := c.records.List(ctx)
	if err != nil {
		return nil, err
	}
	idx := newNodeIndex(nodes)
	recs = c.relink(ctx, log, recs, idx)
	c.handleInterruptions(ctx, log, recs, idx, pods)
	res.Deleted = c.housekeeping(ctx, log, recs, idx, nodes, pods)
	if len(res.Deleted) > 0 {
		if recs, err = c.records.List(ctx); err != nil {
			return nil, err
		}
		recs = c.relink(ctx, log, recs, idx)
	}
	c.nominate(ctx, log, recs, nodes, pods)
	pending := c.provisionablePods(pods)
	if c.prescaler != nil {
		extra, err := c.prescaler.ExpectedPods(ctx, pods)
		if err != nil {
			log.Warn("pre-scaling skipped for this batch", zap.Error(err))
		} else {
			c.syncPlaceholders(ctx, log, placeholders)
		}
		pending = append(pending, extra...)
	} else if len(placeholders) > 0 {
		c.syncPlaceholders(ctx, log, placeholders) // pre-scaling is off: none is wanted
	}
	res.Pending = len(pending)
	c.metrics.PendingPods.Set(float64(len(pending)))
	if len(pending) == 0 {
		return res, nil
	}
	snap, err := c.snapshot(pods, pending, nodes)
	if err != nil {
		return nil, err
	}
	cat, unavailable := c.unavailable.apply(c.currentCatalog())
	c.metrics.UnavailableOfferings.Set(float64(unavailable))
	simStart := c.clock.Now()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: c.currentPolicy(),
		Options: simulator.Options{Now: start, Seed: batch, InFlight: c.inFlight(recs, idx, snap.ResourceSlices)}})
	c.metrics.SimulationDuration.Observe(c.clock.Since(simStart).Seconds())
	if err != nil {
		return nil, fmt.Errorf("simulating batch %s: %w", batch, err)
	}
	res.Plan = plan
	c.metrics.PlanCost.Set(plan.CostPerHour)
	c.metrics.PlanLowerBound.Set(plan.LowerBoundPerHour)
	log.Info("planned", zap.Int(keyPending, len(pending)), zap.Int(keyNewNodes, len(plan.NewNodes)),
		zap.Float64(keyCost, plan.CostPerHour), zap.Float64(keyLowerBound, plan.LowerBoundPerHour),
		zap.Int(keyUnschedulable, len(plan.Unschedulable)), zap.Int(keyInFlight, len(recs)))
	for _, u := range plan.Unschedulable {
		log.Debug("no place", zap.String(keyPod, u.Pod), zap.String(keyReason, string(u.Code)+": "+u.Reason))
	}
	c.reservations.tolerate(ctx, log, plan, recs, idx)
	res.Launched, res.Failed = c.launch(ctx, log, plan, snap)
	c.metrics.BatchDuration.Observe(c.clock.Since(start).Seconds())
	return res, nil
}

// provisionablePods returns the pods that may trigger a purchase now. GPU pods younger than
// GPUTriggerDelay wait for the next batch, so a rollout's pods are planned together.
func (c *Controller) provisionablePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	now := c.clock.Now()
	held := false
	for _, p := range pods {
		if !provisionable(p) {
			continue
		}
		if c.cfg.GPUTriggerDelay > 0 && requestsGPU(p) {
			if cond, ok := unschedulableSince(p); ok && now.Sub(cond.LastTransitionTime.Time) < c.cfg.GPUTriggerDelay {
				held = true
				continue
			}
		}
		out = append(out, p)
	}
	if held {
		go func() {
			<-c.clock.After(c.cfg.GPUTriggerDelay)
			c.poke()
		}()
	}
	return out
}

// snapshot copies the informers' state into a simulator snapshot: every node, every bound pod,
// and only the pending pods that may trigger a purchase (others are still the scheduler's to try).
func (c *Controller) snapshot(pods, pending []*corev1.Pod, nodes []*corev1.Node) (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{Now: c.clock.Now(), Nodes: nodes}
	for _, p := range pods {
		if snapshot.IsActive(p) {
			s.Pods = append(s.Pods, p)
		}
	}
	s.Pods = append(s.Pods, pending...)
	var err error
	f := c.factory
	if s.DaemonSets, err = f.Apps().V1().DaemonSets().Lister().List(everything()); err != nil {
		return nil, err
	}
	if s.PriorityClasses, err = f.Scheduling().V1().PriorityClasses().Lister().List(everything()); err != nil {
		return nil, err
	}
	if s.DeviceClasses, err = f.Resource().V1().DeviceClasses().Lister().List(everything()); err != nil {
		return nil, err
	}
	if s.ResourceClaims, err = f.Resource().V1().ResourceClaims().Lister().List(everything()); err != nil {
		return nil, err
	}
	if s.ResourceClaimTemplates, err = f.Resource().V1().ResourceClaimTemplates().Lister().List(everything()); err != nil {
		return nil, err
	}
	if s.ResourceSlices, err = f.Resource().V1().ResourceSlices().Lister().List(everything()); err != nil {
		return nil, err
	}
	return s, nil
}

// inFlight turns launch records into capacity the simulation counts: records whose Node has not
// registered, is not Ready, or has not published the GPUs it was bought for (the device-plugin
// gap, when a node looks GPU-less and peers buy again). An in-flight node is named as its Node,
// once registered (under whatever name), so that the simulator takes it for that Node and counts
// the pods bound there; until then it keeps the planned name.
func (c *Controller) inFlight(recs []LaunchRecord, idx nodeIndex, slices []*resourcev1.ResourceSlice) []simulator.InFlightNode {
	sliced := map[string]bool{}
	for _, s := range slices {
		if s.Spec.NodeName != nil {
			sliced[*s.Spec.NodeName] = true
		}
	}
	var out []simulator.InFlightNode
	for _, r := range recs {
		name := r.NodeName
		if n := idx.forRecord(r); n != nil {
			// A GPU node is in flight until its devices show: device-plugin resources in its
			// allocatable, or ResourceSlices for GPUs that only the DRA driver publishes.
			if snapshot.IsNodeReady(n) && (devicesPublished(n, r) || sliced[n.Name]) {
				continue
			}
			name = n.Name
		}
		out = append(out, simulator.InFlightNode{
			PricedOffering: r.PricedOffering,
			Name:           name,
			Pool:           r.Pool,
			GPU:            r.GPU,
			Pods:           r.Pods,
		})
	}
	return out
}

// devicesPublished reports whether a GPU node advertises GPU resources yet.
func devicesPublished(n *corev1.Node, r LaunchRecord) bool {
	if r.GPUs == 0 {
		return true
	}
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), "nvidia.com/") && !q.IsZero() {
			return true
		}
	}
	return false
}
