package simulator

import (
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// NodeImage is the image a node booted from and the image its provider launches now for a node
// like it, and likewise the digest of its other launch settings (cloudprovider.Instance.Settings:
// network, security groups, identity, bootstrap); each empty when the provider does not say.
type NodeImage struct {
	Booted, Now           string
	Settings, SettingsNow string
}

// drifted reports whether the node booted from another image than its provider launches now.
func (m NodeImage) drifted() bool { return m.Booted != "" && m.Now != "" && m.Booted != m.Now }

// settingsDrifted reports whether the node was launched with other settings than a launch gets now.
func (m NodeImage) settingsDrifted() bool {
	return m.Settings != "" && m.SettingsNow != "" && m.Settings != m.SettingsNow
}

// BootedAs names how the node booted (BootName of its image and settings), NowAs how a node like
// it boots now: a roll is paused, and a failure remembered, by these names.
func (m NodeImage) BootedAs() string { return BootName(m.Booted, m.Settings) }

// NowAs names how a node like it boots now.
func (m NodeImage) NowAs() string { return BootName(m.Now, m.SettingsNow) }

// BootName names a boot by its image, with its launch settings when the provider records them,
// so that a roll onto new settings that do not boot, or make sick nodes, is paused and remembered
// as a roll onto a bad image is. "" when neither is known.
func BootName(image, settings string) string {
	switch {
	case settings == "":
		return image
	case image == "":
		return "launch settings " + settings
	}
	return image + " with launch settings " + settings
}

// DisruptionOptions tune a disruption decision. Now is required (or the snapshot's Now).
type DisruptionOptions struct {
	// Now is the decision's time: node ages, candidate waits and budget windows are measured
	// against it; the simulator reads no clock.
	Now time.Time
	// Seed makes the names of replacement nodes unique across decisions, as Options.Seed does.
	Seed string
	// NodeNamePrefix starts every replacement's name; default "tiler-".
	NodeNamePrefix string
	// InFlight are nodes being launched: capacity pods may move to, never candidates.
	InFlight []InFlightNode
	// Keep lists nodes the caller keeps, with why (a forecast wants the node): api.KeepKept.
	Keep map[string]string
	// Disrupting lists nodes already under an action: not candidates, not destinations, and
	// counted against their pool's budget.
	Disrupting []string
	// MaxActions bounds the actions of the plan; 0 means no bound beyond the budgets.
	MaxActions int
	// IgnoreCandidateWait plans as if every wait recorded in an annotation were over (what-if use:
	// a snapshot without them): every node has been a candidate for its pool's consolidateAfter
	// (api.AnnotationCandidateSince), and GPUs missing from allocatable have been missing for the
	// repair grace period (api.AnnotationUnhealthySince). Node age (api.KeepTooYoung) and the
	// NotReady grace period, which the snapshot itself shows, still apply.
	IgnoreCandidateWait bool
	// Interrupted lists the nodes the cloud is about to reclaim (a spot interruption notice), with
	// the time it does: each gets an Interrupted action — its pods on the rest of the cluster and
	// at most one new node — before any other, under no budget.
	Interrupted map[string]time.Time
	// Images are, by node, the image a managed node booted from and the image its provider
	// launches now for a node like it, as the caller asks the cloud (the snapshot does not show
	// them). A node whose two images or two settings differ is Drifted, as a node whose pool
	// changed, when no more urgent reason holds; and a drifted or expired node is kept
	// (KeepRollPaused) while a node booted as its replacement would boot (NodeImage.NowAs) shows a
	// health signal.
	Images map[string]NodeImage
	// FailedImages are boots (NodeImage.BootedAs) the caller remembers as failed, with why (a launch from the image
	// that never registered; a node booted from it that fell sick young, reported by an earlier
	// plan's FailedImages): a roll onto one is paused (KeepRollPaused) as onto an image whose node
	// shows a health signal now, though no such node is left to show it.
	FailedImages map[string]string
	// ImageProbation is how young a node's health signal judges the image it booted from: a node
	// younger than this with a health signal is reported in the plan's FailedImages (a driver that
	// fails soon after boot, rather than worn hardware). 0 reports none.
	ImageProbation time.Duration
	// ClusterAutoscalerRule plans with the Cluster Autoscaler's scale-down rule instead of Tiler's
	// (see caStyle): the baseline a replay compares with (package replay, policy whole-gpu).
	ClusterAutoscalerRule bool

	// caStyle plans with the Cluster Autoscaler's rule instead, for comparisons in tests: a node
	// under 50 % utilised (GPU-aware) whose pods all fit on other nodes is deleted; no
	// replacement, no multi-node search, no savings threshold.
	caStyle bool
}

// DisruptionInput is everything a disruption decision reads.
type DisruptionInput struct {
	Snapshot *snapshot.Snapshot
	Catalog  *catalog.Catalog
	// Policy is the cost policy; nil means policy.Default().
	Policy  *policy.CostPolicy
	Options DisruptionOptions
}

// PlanDisruption decides which managed nodes to give back: it is the disruption counterpart of
// Simulate, a pure function of its input (the same input gives the same plan). The simulation
// state is built once with every pod that may move placed where it runs; each candidate set is
// then tried in place — its nodes removed, their pods re-placed on the rest of the cluster with
// at most one new node, the price compared — and kept or undone (disrupt_search.go). Everything a
// purchase honours holds after a move. The error is reserved for bad input.
func PlanDisruption(in DisruptionInput) (*api.DisruptionPlan, error) {
	if in.Snapshot == nil || in.Catalog == nil {
		return nil, fmt.Errorf("plan disruption: snapshot and catalog are required")
	}
	if in.Options.Now.IsZero() {
		in.Options.Now = in.Snapshot.Now
	}
	if in.Options.Now.IsZero() {
		return nil, fmt.Errorf("plan disruption: Options.Now (or Snapshot.Now) is required: node ages and budget windows are measured against it")
	}
	if in.Policy == nil {
		in.Policy = policy.Default()
	}
	if in.Options.ClusterAutoscalerRule {
		in.Options.caStyle = true
	}
	d, err := newDisruptor(in)
	if err != nil {
		return nil, fmt.Errorf("plan disruption: %w", err)
	}
	return d.plan(), nil
}

// plan runs the search and, when some action uses a node that has not been a candidate for long
// enough, runs it again without such nodes (so that no emitted action depends on one). The
// candidates of the first run are what the controller marks.
func (d *disruptor) plan() *api.DisruptionPlan {
	mark := d.s.checkpoint()
	first := d.search(nil, nil)
	waiting := map[string]bool{}
	for _, a := range first.actions {
		for _, name := range a.Nodes {
			if !d.byName[name].ready {
				waiting[name] = true
			}
		}
	}
	if len(waiting) == 0 {
		return d.result(first, first)
	}
	d.s.revert(mark)
	exclude := map[string]bool{}
	for _, f := range d.facts {
		if f.keep == nil && !f.ready {
			exclude[f.node.Name] = true
		}
	}
	second := d.search(exclude, func(second *pass) {
		for name := range exclude {
			if waiting[name] {
				second.keep(d.byName[name], api.KeepNotCandidateLongEnough, d.waitMessage(d.byName[name]))
			} else if k := first.reasons[name]; k != nil {
				second.reasons[name] = k
			}
		}
	})
	return d.result(first, second)
}

// search runs a pass in Karpenter's order and, from the same state, a deletesFirst pass, and
// returns the one whose actions save more (Karpenter's order on a tie). Neither order wins
// everywhere: merging several nodes into one new node first can leave, on a shrunk fleet, pods
// on a replacement that deleting nodes one by one into the others' room would not have needed.
// The simulation state is left as the second pass left it. preset, when not nil, prepares each
// pass before it runs.
func (d *disruptor) search(exclude map[string]bool, preset func(*pass)) *pass {
	mark := d.s.checkpoint()
	var best *pass
	for _, deletesFirst := range []bool{false, true} {
		if deletesFirst && d.in.Options.caStyle {
			break
		}
		d.s.revert(mark)
		p := d.newPass(exclude)
		p.deletesFirst = deletesFirst
		if preset != nil {
			preset(p)
		}
		p.run()
		if best == nil || p.saving() > best.saving()+1e-9 {
			best = p
		}
	}
	return best
}

// waitMessage explains how long a node has been a candidate and must be.
func (d *disruptor) waitMessage(f *nodeFacts) string {
	if f.since.IsZero() {
		return fmt.Sprintf("an action would remove it; it must first be a candidate (%s) for %s", api.AnnotationCandidateSince, f.consolidateAfter)
	}
	return fmt.Sprintf("a candidate since %s (%s), it must be one for %s", f.since.UTC().Format(time.RFC3339),
		d.now.Sub(f.since).Round(time.Second), f.consolidateAfter)
}

// result builds the plan from the pass whose actions are emitted (last) and the pass that found
// the candidates (first; the same pass when no node had to wait).
func (d *disruptor) result(first, last *pass) *api.DisruptionPlan {
	plan := &api.DisruptionPlan{Actions: last.actions, Kept: d.kept(last), Candidates: candidates(first, last),
		Unhealthy: d.unhealthyList(), FailedImages: d.failedImages()}
	if plan.Actions == nil {
		plan.Actions = []api.DisruptionAction{}
	}
	plan.CostPerHourBefore = round6(d.fleetPrice())
	for _, a := range plan.Actions {
		plan.SavingsPerHour += a.SavingsPerHour
	}
	plan.SavingsPerHour = round6(plan.SavingsPerHour)
	plan.CostPerHourAfter = round6(plan.CostPerHourBefore - plan.SavingsPerHour)
	plan.Warnings = append(append([]string(nil), d.s.warnings...), d.warnings...)
	return plan
}

// candidates lists, sorted, the nodes the consolidation actions of either pass remove (the wait
// is consolidation's; forced actions need none).
func candidates(first, last *pass) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, p := range []*pass{first, last} {
		for _, a := range p.actions {
			if a.Reason.Forced() {
				continue
			}
			for _, n := range a.Nodes {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// kept lists every node the pass does not remove, in name order, with its reason: the static
// one, else what the search found; and, for a node that must go, why (Due).
func (d *disruptor) kept(last *pass) []api.KeptNode {
	out := []api.KeptNode{}
	for _, f := range d.facts {
		if last.removed[f.node.Name] {
			continue
		}
		var kept api.KeptNode
		switch k := last.reasons[f.node.Name]; {
		case f.keep != nil:
			kept = *f.keep
		case k != nil:
			kept = *k
		default:
			// Only a node no method could try (not in the simulation) gets here.
			kept = api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: api.KeepNoCheaperFit, Message: "not tried"}
		}
		if f.forced != nil {
			kept.Due = f.forced.reason
		}
		out = append(out, kept)
	}
	return out
}

// fleetPrice is the $/h of the managed fleet: priced managed nodes and nodes in flight (once
// each). Unpriced managed nodes are left out, with a warning.
func (d *disruptor) fleetPrice() float64 {
	total, unpriced := 0.0, 0
	for _, f := range d.facts {
		if f.pol != nil {
			total += f.price
			if f.price <= 0 {
				unpriced++
			}
		}
	}
	for _, f := range d.in.Options.InFlight {
		if d.byName[f.Name] == nil || d.byName[f.Name].price <= 0 {
			total += f.PricePerHour
		}
	}
	if unpriced > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%d managed nodes have no catalog price; the fleet's cost leaves them out", unpriced))
	}
	return total
}
