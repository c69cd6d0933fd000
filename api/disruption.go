package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// DisruptionPlan is the answer of simulator.PlanDisruption: which managed nodes to remove, what
// (if anything) replaces them, where every moved pod is expected to land, and why every other
// node is kept. Actions are ordered: each one was planned with the ones before it done, so a
// controller carries them out in order (any prefix of the list is a valid plan on its own).
type DisruptionPlan struct {
	// CostPerHourBefore is the $/h of the managed fleet (nodes labelled tiler.dev/pool, priced
	// from the catalog, and nodes in flight); CostPerHourAfter what it costs once every action is
	// carried out.
	CostPerHourBefore float64 `json:"costPerHourBefore"`
	CostPerHourAfter  float64 `json:"costPerHourAfter"`
	// SavingsPerHour is CostPerHourBefore − CostPerHourAfter.
	SavingsPerHour float64            `json:"savingsPerHour"`
	Actions        []DisruptionAction `json:"actions"`
	// Kept lists every node of the snapshot that no action removes, with the reason.
	Kept []KeptNode `json:"kept"`
	// Candidates are the nodes an action would remove now if each had been a candidate for its
	// pool's consolidateAfter. The controller sets AnnotationCandidateSince on them (when
	// missing) and removes it from every other node.
	Candidates []string `json:"candidates"`
	// Unhealthy lists the managed nodes that show a health signal now (GPUs missing from
	// allocatable, a tainted DRA device, a repair condition, not Ready), due for repair or still in
	// their grace period. The controller sets AnnotationUnhealthySince on them (when missing) and
	// removes it from every other node, so that the grace period survives restarts.
	Unhealthy []UnhealthyNode `json:"unhealthy,omitempty"`
	// FailedImages are the images that failed on a node booted from them within its probation
	// (a health signal on a young node): the controller remembers them, and a roll onto one stays
	// paused after the node is gone (repaired, or deleted).
	FailedImages []ImageFailure `json:"failedImages,omitempty"`
	// Warnings carries notes about the input.
	Warnings []string `json:"warnings,omitempty"`
}

// DisruptionKind is what an action does.
type DisruptionKind string

// The action kinds. Several nodes into one is a Replace with several Nodes; into none, a Delete.
const (
	// ActionDelete removes the nodes; their pods fit on the rest of the cluster.
	ActionDelete DisruptionKind = "Delete"
	// ActionReplace removes the nodes after launching one node (Replacement) that takes the pods
	// the rest of the cluster cannot: a cheaper one for consolidation, any that fits for the
	// node-lifecycle reasons — and, for those only, more nodes (MoreReplacements) when one new
	// node cannot take them.
	ActionReplace DisruptionKind = "Replace"
)

// DisruptionReason is why an action removes its nodes. Empty and Underutilized are consolidation:
// they must save money. The node-lifecycle reasons (Drifted, Expired, Unhealthy, Interrupted,
// ReservationEnding)
// force the node out whatever it costs: their actions come first, need no savings and may replace
// a node by a dearer one, since they replace what exists.
type DisruptionReason string

// The disruption reasons.
const (
	// ReasonEmpty: the nodes run no pod that needs moving (DaemonSet and mirror pods die with
	// their node).
	ReasonEmpty DisruptionReason = "Empty"
	// ReasonUnderutilized: the nodes' pods fit on the rest of the cluster, with at most one
	// cheaper new node, for less.
	ReasonUnderutilized DisruptionReason = "Underutilized"
	// ReasonDrifted: the node no longer matches its pool (the pool was removed; its instance
	// types, families, zones, capacity types or requirements exclude the node; its labels, taints
	// or GPU configuration changed; AnnotationPoolHash differs). Under the pool's budgets;
	// do-not-disrupt and PodDisruptionBudgets block it (until the pool's terminationGracePeriod,
	// when it sets one: TerminationGracePeriodSeconds).
	ReasonDrifted DisruptionReason = "Drifted"
	// ReasonExpired: the node is older than its pool's expireAfter. Under the pool's budgets;
	// do-not-disrupt and PodDisruptionBudgets block it, as for ReasonDrifted.
	ReasonExpired DisruptionReason = "Expired"
	// ReasonUnhealthy: the node's GPUs or kubelet are broken past the pool's repair grace periods.
	// Under the pool's repair budget; do-not-disrupt does not block it (a broken node loses its
	// pods anyway).
	ReasonUnhealthy DisruptionReason = "Unhealthy"
	// ReasonInterrupted: the cloud reclaims the node at the action's Deadline (a spot
	// interruption, passed in by the caller). No budget; do-not-disrupt does not block it.
	ReasonInterrupted DisruptionReason = "Interrupted"
	// ReasonReservationEnding: the node runs on a capacity reservation that ends (a capacity
	// block: policy.Reservation's endsAt), and its drainBefore has begun; the Deadline is the end.
	// No budget (the cloud ends every node of it at once); do-not-disrupt and
	// PodDisruptionBudgets still hold, as for ReasonDrifted.
	ReasonReservationEnding DisruptionReason = "ReservationEnding"
)

// Forced reports whether the reason is a node-lifecycle one: the node must go, and the action
// needs no savings.
func (r DisruptionReason) Forced() bool {
	return r == ReasonDrifted || r == ReasonExpired || r == ReasonUnhealthy || r == ReasonInterrupted || r == ReasonReservationEnding
}

// DisruptionAction removes one or more nodes of one pool.
type DisruptionAction struct {
	// ID is a hash of the action's content (kind, reason, nodes, replacement, moves): the same
	// decision on the same cluster always has the same ID, so a controller recognises an action it
	// has already started.
	ID     string           `json:"id"`
	Kind   DisruptionKind   `json:"kind"`
	Reason DisruptionReason `json:"reason"`
	// Pool is the pool of the removed nodes.
	Pool  string   `json:"pool"`
	Nodes []string `json:"nodes"`
	// Replacement is the node to launch first (Replace only): a NewNode as in purchases, with the
	// pods it takes and its fallbacks.
	Replacement *NewNode `json:"replacement,omitempty"`
	// MoreReplacements are the other nodes to launch first, with Replacement, for a
	// node-lifecycle action (Drifted, Expired, Unhealthy, Interrupted, ReservationEnding) whose
	// pods one new node of its pool cannot take (the pool now buys smaller types than the node):
	// the nodes are cordoned once every replacement is Ready. Consolidation never has any: it
	// opens one new node at most.
	MoreReplacements []NewNode `json:"moreReplacements,omitempty"`
	// Moves says where each evicted pod is expected to land, by pod.
	Moves []PodMove `json:"moves"`
	// LeftBehind are the pods of the nodes that do not move and end with them (node-lifecycle
	// reasons only, by key): pods no controller recreates, and on an unhealthy or interrupted
	// node members of a gang that runs on other nodes too. The controller does not wait for them.
	LeftBehind []string `json:"leftBehind,omitempty"`
	// Message says, for the node-lifecycle reasons, what drifted, how old the node is, which
	// health signal fired or when the node is reclaimed, and which pods stay behind.
	Message string `json:"message,omitempty"`
	// Deadline is when the cloud reclaims an interrupted node (Interrupted only): the replacement
	// must be up and the pods moved before it.
	Deadline *time.Time `json:"deadline,omitempty"`
	// TerminationGracePeriodSeconds is the pool's terminationGracePeriod, rounded up to seconds,
	// on an action for Drifted, Expired, ReservationEnding or Unhealthy of a pool that sets one (0
	// for none): the action starts even when PodDisruptionBudgets or do-not-disrupt pods would keep
	// its nodes (Message names them; an Unhealthy action starts anyway), and its drain waits for
	// them at most this long after it began; then the pods still there are deleted.
	TerminationGracePeriodSeconds int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// CostPerHourBefore is the $/h of the removed nodes; CostPerHourAfter that of the replacement
	// (0 for a Delete); SavingsPerHour their difference, negative when a forced action replaces a
	// node by a dearer one.
	CostPerHourBefore float64 `json:"costPerHourBefore"`
	CostPerHourAfter  float64 `json:"costPerHourAfter"`
	SavingsPerHour    float64 `json:"savingsPerHour"`
}

// PodMove is one evicted pod and the node it is expected to land on: an existing node or the
// action's replacement.
type PodMove struct {
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to"`
}

// KeepReason classifies why a node is kept.
type KeepReason string

// The keep reasons. The first group are properties of the node or its pods, checked before any
// simulation; the second the outcome of the search; the last what the caller asked.
const (
	// KeepUnmanaged: the node has no tiler.dev/pool label, or its pool is not in the policy.
	KeepUnmanaged KeepReason = "Unmanaged"
	// KeepUnpriced: the catalog has no price for the node's instance type, zone and capacity type.
	KeepUnpriced KeepReason = "Unpriced"
	// KeepDoNotDisrupt: the node is annotated do-not-disrupt (tiler.dev, karpenter.sh) or
	// cluster-autoscaler.kubernetes.io/scale-down-disabled.
	KeepDoNotDisrupt KeepReason = "DoNotDisrupt"
	// KeepPodDoNotDisrupt: a pod is annotated do-not-disrupt, or safe-to-evict "false".
	KeepPodDoNotDisrupt KeepReason = "PodDoNotDisrupt"
	// KeepPodWithoutController: a pod has no controller to recreate it elsewhere.
	KeepPodWithoutController KeepReason = "PodWithoutController"
	// KeepLocalStorage: a pod uses emptyDir (not in memory) or hostPath storage and is not
	// annotated safe-to-evict "true".
	KeepLocalStorage KeepReason = "LocalStorage"
	// KeepPDB: a PodDisruptionBudget selecting one of the pods allows no disruption now.
	KeepPDB KeepReason = "PDB"
	// KeepGang: the node runs members of a gang whose other members run on nodes that cannot move
	// with it; a gang moves whole or not at all.
	KeepGang KeepReason = "Gang"
	// KeepUnplaceablePod: a pod on the node cannot be simulated (an invalid selector or claim, an
	// incomplete gang), so no place for it elsewhere can be vouched for.
	KeepUnplaceablePod KeepReason = "UnplaceablePod"
	// KeepConsolidationDisabled: the pool's consolidation is never, or whenEmpty and the node is
	// not empty.
	KeepConsolidationDisabled KeepReason = "ConsolidationDisabled"
	// KeepTooYoung: the node was created less than its pool's consolidateAfter ago.
	KeepTooYoung KeepReason = "TooYoung"
	// KeepDisrupting: the node is already being disrupted (listed by the caller, deleting,
	// cordoned or not Ready); it counts against the pool's budget.
	KeepDisrupting KeepReason = "Disrupting"
	// KeepKept: the caller keeps the node (a forecast wants it); the message says why.
	KeepKept KeepReason = "Kept"
	// KeepRollPaused: the node must go (drifted, expired), and the roll onto the image its
	// replacement would boot from is paused: a node booted from that image is unhealthy, or the
	// image is remembered as failed (DisruptionOptions.FailedImages), since a bad driver would
	// otherwise be rolled over the whole fleet; the message names the node or the failure.
	KeepRollPaused KeepReason = "RollPaused"
	// KeepTooManyUnhealthy: the node is due for repair, and more of its pool's nodes show a health
	// signal than the pool's repair.maxUnhealthy allows: a fault that wide is not the nodes', so
	// none is repaired until it narrows; the message gives the counts.
	KeepTooManyUnhealthy KeepReason = "TooManyUnhealthy"

	// KeepNoCheaperFit: the node's pods do not fit on the rest of the cluster with at most one new
	// node that costs less than the nodes it replaces.
	KeepNoCheaperFit KeepReason = "NoCheaperFit"
	// KeepBelowThreshold: a move was found but saves less than the pool's savings threshold.
	KeepBelowThreshold KeepReason = "BelowThreshold"
	// KeepSpotDiversity: the only cheaper replacement is spot for a spot node, and the pool has
	// fewer cheaper spot offerings than its spotToSpotMinOfferings.
	KeepSpotDiversity KeepReason = "SpotDiversity"
	// KeepMinNodes: removing the node would take its pool below minNodes.
	KeepMinNodes KeepReason = "MinNodes"
	// KeepBudget: the pool's disruption budget is used up (or 0 now).
	KeepBudget KeepReason = "Budget"
	// KeepNotCandidateLongEnough: an action would remove the node, but it has not been a
	// candidate (AnnotationCandidateSince) for its pool's consolidateAfter yet.
	KeepNotCandidateLongEnough KeepReason = "NotCandidateLongEnough"
	// KeepNoReplacement: the node must go (drifted, expired, unhealthy, interrupted), but a pod of
	// it fits neither on the rest of the cluster nor, with the pods the rest cannot take, on one
	// new node. Drift and expiry wait; for the others the message says so, and the pods become
	// pending when the node goes.
	KeepNoReplacement KeepReason = "NoReplacement"
)

// HealthSignal is what marks a node unhealthy.
type HealthSignal string

// The health signals.
const (
	// SignalGPUsMissing: allocatable GPUs (nvidia.com/gpu, nvidia.com/gpu.shared,
	// nvidia.com/mig-*) below capacity; the device plugin reports devices unhealthy. Due after the
	// pool's repair gracePeriod, counted from AnnotationUnhealthySince.
	SignalGPUsMissing HealthSignal = "GPUsMissing"
	// SignalDeviceTainted: a DRA device of the node (its ResourceSlices) carries a NoSchedule or
	// NoExecute taint, as the DRA driver taints devices it finds broken. Due at once.
	SignalDeviceTainted HealthSignal = "DeviceTainted"
	// SignalCondition: the node has one of the pool's repair conditions (by default
	// AcceleratedHardwareReady=False, XID errors). Due at once.
	SignalCondition HealthSignal = "Condition"
	// SignalNotReady: the node's Ready condition is False or Unknown. Due after the pool's
	// notReadyGracePeriod, counted from the condition's lastTransitionTime.
	SignalNotReady HealthSignal = "NotReady"
)

// UnhealthyNode is a managed node with a health signal.
type UnhealthyNode struct {
	Name    string       `json:"name"`
	Pool    string       `json:"pool,omitempty"`
	Signal  HealthSignal `json:"signal"`
	Message string       `json:"message"`
	// Due: the grace period is over, so the node is repaired (an Unhealthy action) or kept with
	// the reason that stops it.
	Due bool `json:"due"`
}

// ImageFailure is an image that failed on a node booted from it.
type ImageFailure struct {
	Image string `json:"image"`
	// Node is the node it failed on.
	Node string `json:"node"`
	// Message says how: the health signal and the node's age.
	Message string `json:"message"`
}

// KeptNode is a node no action removes, and why.
type KeptNode struct {
	Name    string     `json:"name"`
	Pool    string     `json:"pool,omitempty"`
	Reason  KeepReason `json:"reason"`
	Message string     `json:"message,omitempty"`
	// Due is why the node must go (Drifted, Expired, Unhealthy, Interrupted) when it must and
	// Reason holds it nonetheless: a roll onto a new image that a PodDisruptionBudget, a
	// do-not-disrupt pod or the budgets hold back shows here. Empty for a node only not
	// consolidated.
	Due DisruptionReason `json:"due,omitempty"`
}

// ActionID returns the deterministic ID of an action: "d-" and the first 16 hex digits of the
// SHA-256 of its JSON without the ID, the prices (which follow from the rest) and the message
// (which may name ages and durations that change from one decision to the next).
func ActionID(a DisruptionAction) string {
	a.ID, a.Message = "", ""
	a.CostPerHourBefore, a.CostPerHourAfter, a.SavingsPerHour = 0, 0, 0
	b, _ := json.Marshal(a) // a plain struct of strings, maps and numbers: never fails
	sum := sha256.Sum256(b)
	return "d-" + hex.EncodeToString(sum[:8])
}

// WriteJSON writes the disruption plan's JSON contract, indented, with a trailing newline.
func (p *DisruptionPlan) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the disruption plan: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the disruption plan for people: the fleet's price before and after, the
// actions with their savings and where their pods go, the kept nodes with their reasons and the
// candidates.
func (p *DisruptionPlan) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pct := 0.0
	if p.CostPerHourBefore > 0 {
		pct = 100 * p.SavingsPerHour / p.CostPerHourBefore
	}
	removed := 0
	for _, a := range p.Actions {
		removed += len(a.Nodes)
	}
	fmt.Fprintf(tw, "Managed fleet: $%.4f/h → $%.4f/h (saves $%.4f/h, %.1f%%)\n", p.CostPerHourBefore, p.CostPerHourAfter, p.SavingsPerHour, pct)
	fmt.Fprintf(tw, "Actions: %d, nodes removed: %d, kept: %d\n", len(p.Actions), removed, len(p.Kept))
	if len(p.Actions) > 0 {
		fmt.Fprintln(tw, "\nACTION\tKIND\tREASON\tPOOL\tNODES\tREPLACEMENT\t$/H BEFORE\t$/H AFTER\tSAVES\tMOVES")
		for _, a := range p.Actions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.4f\t%s\n", a.ID, a.Kind, a.Reason, a.Pool,
				strings.Join(a.Nodes, ", "), replacementString(a), a.CostPerHourBefore, a.CostPerHourAfter,
				a.SavingsPerHour, movesSummary(a.Moves))
		}
		for _, a := range p.Actions {
			if a.Message != "" {
				fmt.Fprintf(tw, "  %s %s: %s\n", a.ID, a.Reason, a.Message)
			}
		}
	}
	if len(p.Kept) > 0 {
		fmt.Fprintln(tw, "\nKEPT NODE\tPOOL\tREASON\tMESSAGE")
		for _, k := range p.Kept {
			pool := k.Pool
			if pool == "" {
				pool = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, pool, k.Reason, k.Message)
		}
	}
	if len(p.Candidates) > 0 {
		fmt.Fprintf(tw, "\nCandidates (%s): %s\n", AnnotationCandidateSince, strings.Join(p.Candidates, ", "))
	}
	if len(p.Unhealthy) > 0 {
		fmt.Fprintf(tw, "\nUNHEALTHY NODE (%s)\tPOOL\tSIGNAL\tDUE\tMESSAGE\n", AnnotationUnhealthySince)
		for _, u := range p.Unhealthy {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\n", u.Name, u.Pool, u.Signal, u.Due, u.Message)
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", warn)
	}
	return tw.Flush()
}

// replacementString renders a replacement as name (type/zone/capacity type), or "-".
func replacementString(a DisruptionAction) string {
	ns := a.Replacements()
	if len(ns) == 0 {
		return "-"
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%s (%s)", n.Name, n.Offering)
	}
	return strings.Join(out, ", ")
}

// Replacements are the action's new nodes: Replacement, then MoreReplacements; none for a Delete.
func (a DisruptionAction) Replacements() []NewNode {
	if a.Replacement == nil {
		return nil
	}
	return append([]NewNode{*a.Replacement}, a.MoreReplacements...)
}

// IsReplacement reports whether node is one of the action's new nodes.
func (a DisruptionAction) IsReplacement(node string) bool {
	return a.Replacement != nil && a.Replacement.Name == node || slices.ContainsFunc(a.MoreReplacements, func(n NewNode) bool { return n.Name == node })
}

// movesSummary counts the moves per destination: "5 pods: 3 → node-a, 2 → node-b", "1 pod: 1 →
// node-a".
func movesSummary(moves []PodMove) string {
	if len(moves) == 0 {
		return "-"
	}
	count := map[string]int{}
	var dests []string
	for _, m := range moves {
		if count[m.To] == 0 {
			dests = append(dests, m.To)
		}
		count[m.To]++
	}
	sort.Strings(dests)
	parts := make([]string, len(dests))
	for i, d := range dests {
		parts[i] = fmt.Sprintf("%d → %s", count[d], d)
	}
	noun := "pods"
	if len(moves) == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("%d %s: %s", len(moves), noun, strings.Join(parts, ", "))
}
