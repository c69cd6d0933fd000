package provisioner

import (
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/simulator"
)

// keptForForecast returns the managed nodes that hold no pod but that the forecast demand still
// needs: the nodes a plan of the pre-scaler's last expected pods (those of the last batch,
// planned with the real provisionable pods as a batch plans them, in-flight launches counted)
// puts expected pods on. Housekeeping does not count them as empty, so they are not removed while
// the forecast still wants them and their empty-node TTL starts only once the forecast falls and
// the expected pods go. It plans only when some managed node is empty and expected pods are held;
// nil otherwise.
func (c *Controller) keptForForecast(log *zap.Logger, recs []LaunchRecord, idx nodeIndex, nodes []*corev1.Node,
	pods []*corev1.Pod, busy map[string]bool) map[string]bool {
	holder, ok := c.prescaler.(ExpectedPodsHolder)
	if !ok {
		return nil
	}
	empty := false
	for _, r := range recs {
		if n := idx.forRecord(r); n != nil && !busy[n.Name] {
			empty = true
			break
		}
	}
	if !empty {
		return nil
	}
	held := holder.LastExpectedPods()
	if len(held) == 0 {
		return nil
	}
	keys := make(map[string]bool, len(held))
	pending := make([]*corev1.Pod, 0, len(held))
	for _, p := range pods {
		if provisionable(p) {
			pending = append(pending, p)
		}
	}
	for _, p := range held {
		keys[p.Namespace+"/"+p.Name] = true
		pending = append(pending, p)
	}
	snap, err := c.snapshot(pods, pending, nodes)
	if err != nil {
		log.Warn("planning the forecast demand; empty nodes are not kept for it this batch", zap.Error(err))
		return nil
	}
	cat, _ := c.unavailable.apply(c.currentCatalog())
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: c.currentPolicy(),
		// The seed predates the name "forecast demand"; it stays so that the plan does not change.
		Options: simulator.Options{Now: c.clock.Now(), Seed: "reservations", InFlight: c.inFlight(recs, idx, snap.ResourceSlices)}})
	if err != nil {
		log.Warn("planning the forecast demand; empty nodes are not kept for it this batch", zap.Error(err))
		return nil
	}
	out := map[string]bool{}
	for _, n := range plan.ExistingNodes {
		for _, k := range n.Pods {
			if keys[k] {
				out[n.Name] = true
				break
			}
		}
	}
	return out
}
