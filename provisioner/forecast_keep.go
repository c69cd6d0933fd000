package provisioner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator"
)

// keptForForecast returns the managed nodes that the forecast demand still needs: the nodes a
// plan of the pre-scaler's last expected pods (those of the batch before, planned with the real
// provisionable pods as a batch plans them, in-flight launches counted) puts expected pods on,
// empty or not. Housekeeping does not count an empty one as empty, so it is not removed while the
// forecast still wants it, and its empty-node TTL starts only once the forecast falls and the
// expected pods go; disruption keeps every one of them (the Keep of PlanDisruption), so that room
// held for the forecast on a partly used node is not consolidated away and bought again at the
// next rise. It plans whenever expected pods are remembered; nil otherwise, and on error (the
// nodes are then judged as if none were expected).
func keptForForecast(s *State, recs []LaunchRecord, idx nodeIndex) (map[string]bool, error) {
	if len(s.LastExpected) == 0 || len(recs) == 0 {
		return nil, nil
	}
	keys := make(map[string]bool, len(s.LastExpected))
	pending := make([]*corev1.Pod, 0, len(s.LastExpected))
	for _, p := range s.Pods {
		if provisionable(p) {
			pending = append(pending, p)
		}
	}
	for _, p := range s.LastExpected {
		keys[p.Namespace+"/"+p.Name] = true
		pending = append(pending, p)
	}
	snap := s.snapshot(pending)
	cat, _ := cloudprovider.MarkCatalog(s.Catalog, s.Unavailable, s.Now)
	flying, bought := inFlight(recs, idx, snap.ResourceSlices)
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: s.Policy,
		// The seed predates the name "forecast demand"; it stays so that the plan does not change.
		Options: simulator.Options{Now: s.Now, Seed: "reservations", InFlight: flying, Bought: bought}})
	if err != nil {
		return nil, fmt.Errorf("planning the last expected pods: %w", err)
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
	return out, nil
}
