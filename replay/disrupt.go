package replay

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator"
)

// disrupt plans consolidation with simulator.PlanDisruption on the settled cluster and carries the
// actions out: a Delete evicts the pods of its nodes and deletes them; a Replace launches the
// replacement (recorded as the controller records launches) and cordons its nodes, which are
// drained and deleted once the replacement is usable. Candidates are marked as the controller
// marks them (tiler.dev/disruption-candidate-since), so the pool's consolidateAfter is waited
// for. The cluster is settled when no pod is pending, no launch is in flight and no replacement is
// awaited: disrupting while a purchase is under way would judge a cluster that is about to change.
// It reports whether it changed anything.
func (w *world) disrupt() (bool, error) {
	for _, p := range w.live {
		if p.obj.Spec.NodeName == "" {
			return false, nil
		}
	}
	for _, n := range w.nodes {
		if !n.usable() || len(n.drainFor) > 0 || n.noticed {
			return false, nil
		}
	}
	if len(w.nodes) == 0 {
		return false, nil
	}
	snap := &snapshot.Snapshot{Now: w.now, PodGroups: w.groups}
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		switch {
		case !n.candidateSince.IsZero() && n.obj.Annotations == nil:
			n.obj.Annotations = map[string]string{api.AnnotationCandidateSince: n.candidateSince.Format(time.RFC3339)}
		case !n.candidateSince.IsZero():
			n.obj.Annotations[api.AnnotationCandidateSince] = n.candidateSince.Format(time.RFC3339)
		default:
			delete(n.obj.Annotations, api.AnnotationCandidateSince)
		}
		snap.Nodes = append(snap.Nodes, n.obj)
	}
	for _, p := range w.livePods() {
		snap.Pods = append(snap.Pods, p.obj)
	}
	cat := w.cfg.Catalog
	if len(w.unavailable) > 0 {
		cat, _ = provisioner.PlanningCatalog(cat, w.unavailable, w.now)
	}
	plan, err := simulator.PlanDisruption(simulator.DisruptionInput{Snapshot: snap, Catalog: cat, Policy: w.pol.Cost,
		Options: simulator.DisruptionOptions{Now: w.now, Seed: "d" + strconv.FormatInt(w.now.Unix(), 10),
			ClusterAutoscalerRule: w.pol.Consolidation == ConsolidateCA, Keep: w.pre.keep()}})
	if err != nil {
		return false, fmt.Errorf("plan disruption: %w", err)
	}
	candidates := map[string]bool{}
	for _, c := range plan.Candidates {
		candidates[c] = true
	}
	for name, n := range w.nodes {
		switch {
		case !candidates[name]:
			n.candidateSince = time.Time{}
		case n.candidateSince.IsZero():
			n.candidateSince = w.now
		}
	}
	for _, a := range plan.Actions {
		switch a.Kind {
		case api.ActionDelete:
			for _, name := range a.Nodes {
				w.removeNode(name, "consolidation:"+string(a.Reason))
			}
		case api.ActionReplace:
			if a.Replacement == nil {
				return false, fmt.Errorf("action %s: Replace without a replacement", a.ID)
			}
			_, ids := w.launchReplacements(a)
			for _, name := range a.Nodes {
				if n := w.nodes[name]; n != nil {
					n.drainFor, n.drainReason = slices.Clone(ids), "consolidation:"+string(a.Reason)
					n.obj.Spec.Unschedulable = true
				}
			}
		}
	}
	return len(plan.Actions) > 0, nil
}

// launchReplacements launches a Replace action's new nodes and returns their records and names
// (their launch IDs), Replacement first.
func (w *world) launchReplacements(a api.DisruptionAction) ([]provisioner.LaunchRecord, []string) {
	var recs []provisioner.LaunchRecord
	var ids []string
	for _, nn := range a.Replacements() {
		rec := provisioner.RecordFor(nn, w.now, w.pol.Cost)
		w.launch(rec, nn)
		recs = append(recs, rec)
		ids = append(ids, nn.Name)
	}
	return recs, ids
}
