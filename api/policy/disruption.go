package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
)

// Consolidation says which nodes of a pool the disruption plan may consolidate.
type Consolidation string

// The consolidation policies.
const (
	// WhenUnderutilized (the default) removes empty nodes and nodes whose pods fit elsewhere, with
	// at most one cheaper replacement, for less.
	WhenUnderutilized Consolidation = "whenUnderutilized"
	// WhenEmpty removes only nodes that run no pod that would have to move.
	WhenEmpty Consolidation = "whenEmpty"
	// Never keeps every node of the pool.
	Never Consolidation = "never"
)

// Defaults of a pool's disruption settings.
const (
	// DefaultConsolidateAfterGPU is how long a node of a pool with GPU types must be a candidate
	// before it is disrupted: GPU nodes are slow to boot and their workloads slow to restart.
	DefaultConsolidateAfterGPU = 10 * time.Minute
	// DefaultConsolidateAfter is the same wait for other pools.
	DefaultConsolidateAfter = 2 * time.Minute
	// DefaultSavingsThreshold is the share of the removed nodes' price an action must save, so
	// that Tiler does not churn for pennies.
	DefaultSavingsThreshold = 0.10
	// DefaultSpotToSpotMinOfferings is the number of spot offerings (type and zone) cheaper than
	// a spot node that its pool must keep for the node to be replaced by a cheaper spot node: a
	// replacement chosen among too few offerings is the one most likely to be interrupted.
	DefaultSpotToSpotMinOfferings = 5
	// DefaultBudgetNodes is the budget of a pool that sets none, as Karpenter's default.
	DefaultBudgetNodes = "10%"
)

// Disruption configures how a pool gives capacity back (simulator.PlanDisruption).
type Disruption struct {
	// Consolidation is whenUnderutilized (default), whenEmpty or never.
	Consolidation Consolidation `json:"consolidation,omitempty"`
	// ConsolidateAfter is how long a node must have existed, and have been a candidate, before
	// it is disrupted; DefaultConsolidateAfterGPU for pools with GPU types, else
	// DefaultConsolidateAfter.
	ConsolidateAfter *Duration `json:"consolidateAfter,omitempty"`
	// SavingsThreshold is the share of the removed nodes' price an action must save, as a
	// fraction (0.1) or a percentage ("10%"); DefaultSavingsThreshold when unset.
	SavingsThreshold *Fraction `json:"savingsThreshold,omitempty"`
	// SpotToSpotMinOfferings: see DefaultSpotToSpotMinOfferings; 0 lets any cheaper spot
	// offering replace a spot node.
	SpotToSpotMinOfferings *int `json:"spotToSpotMinOfferings,omitempty"`
	// Budgets bound how many of the pool's nodes are disrupted at once; the most restrictive
	// active one applies. None means one budget of DefaultBudgetNodes. They govern consolidation
	// (Empty, Underutilized), drift and expiry; repairs have their own (Repair.Budget) and
	// interrupted nodes none, since those nodes are going whatever Tiler does.
	Budgets []DisruptionBudget `json:"budgets,omitempty"`
	// ExpireAfter replaces the pool's nodes once they are that old (reason Expired), under the
	// budgets; unset means never. Long-lived nodes accumulate drift no check sees (kernel, driver,
	// AMI patches), and expiry bounds it.
	ExpireAfter *Duration `json:"expireAfter,omitempty"`
	// TerminationGracePeriod bounds how long PodDisruptionBudgets and do-not-disrupt pods may
	// hold a node of the pool that must go for Drifted, Expired or ReservationEnding, as
	// Karpenter's NodePool terminationGracePeriod. Unset (the default), they hold such a node for
	// as long as they last. Set, such a node is replaced even while they would keep it: the
	// replacement first, then the cordon and the drain, whose evictions honour the budgets and the
	// annotation until this long after the drain began; then each pod still there is deleted,
	// each early enough that its own terminationGracePeriodSeconds ends by then, and the node goes.
	// A node annotated not to be disrupted is still kept, and consolidation never forces.
	TerminationGracePeriod *Duration `json:"terminationGracePeriod,omitempty"`
	// Repair configures the replacement of nodes whose GPUs or kubelet are unhealthy (reason
	// Unhealthy); nil means the defaults (repair is on).
	Repair *Repair `json:"repair,omitempty"`
}

// DisruptionBudget is one budget, as Karpenter's NodePool budgets: at most Nodes nodes ("3") or
// that share of the pool's nodes ("10%", rounded up) disrupted at once, for the listed reasons
// (all when empty), only while the schedule's window is open when Schedule is set.
type DisruptionBudget struct {
	Nodes string `json:"nodes"`
	// Schedule is a cron expression in UTC (5 fields, or @daily, @hourly…) opening a window of
	// Duration; both or neither are set.
	Schedule string                 `json:"schedule,omitempty"`
	Duration *Duration              `json:"duration,omitempty"`
	Reasons  []api.DisruptionReason `json:"reasons,omitempty"`
}

// Duration is a metav1.Duration ("10m", "1h30m") whose decoding error names its field, as the
// decoder does for type errors.
type Duration struct{ metav1.Duration }

// UnmarshalJSON decodes a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if err := d.Duration.UnmarshalJSON(b); err != nil {
		return &json.UnmarshalTypeError{Value: "duration " + string(b) + " (want e.g. 10m, 1h30m)", Type: reflect.TypeOf(d.Duration)}
	}
	return nil
}

// Fraction is a share between 0 and 1, written as a number (0.1) or a percentage ("10%").
type Fraction float64

// UnmarshalJSON accepts a number or a string "N%".
func (f *Fraction) UnmarshalJSON(b []byte) error {
	var x float64
	if err := json.Unmarshal(b, &x); err == nil {
		*f = Fraction(x)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a fraction (0.1) or a percentage (\"10%%\"): %w", err)
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return fmt.Errorf("%q is neither a fraction (0.1) nor a percentage (\"10%%\")", s)
	}
	*f = Fraction(v / 100)
	return nil
}

var budgetNodesRE = regexp.MustCompile(`^(\d+|\d+%)$`)

// validate checks the disruption settings; errors name the field relative to "disruption.".
func (d *Disruption) validate() error {
	switch d.Consolidation {
	case "", WhenUnderutilized, WhenEmpty, Never:
	default:
		return fmt.Errorf("consolidation: %q must be whenEmpty, whenUnderutilized or never", d.Consolidation)
	}
	if d.ConsolidateAfter != nil && d.ConsolidateAfter.Duration.Duration < 0 {
		return fmt.Errorf("consolidateAfter: %s must not be negative", d.ConsolidateAfter.Duration.Duration)
	}
	if t := d.SavingsThreshold; t != nil && (*t < 0 || *t > 1 || math.IsNaN(float64(*t))) {
		return fmt.Errorf("savingsThreshold: %g must be between 0 and 1 (0%%–100%%)", float64(*t))
	}
	if n := d.SpotToSpotMinOfferings; n != nil && *n < 0 {
		return fmt.Errorf("spotToSpotMinOfferings: %d must not be negative", *n)
	}
	for i := range d.Budgets {
		if err := d.Budgets[i].validate(); err != nil {
			return fmt.Errorf("budgets[%d].%w", i, err)
		}
	}
	if d.ExpireAfter != nil && d.ExpireAfter.Duration.Duration <= 0 {
		return fmt.Errorf("expireAfter: %s must be positive (leave it out to never expire nodes)", d.ExpireAfter.Duration.Duration)
	}
	if g := d.TerminationGracePeriod; g != nil && g.Duration.Duration <= 0 {
		return fmt.Errorf("terminationGracePeriod: %s must be positive (leave it out to let budgets and do-not-disrupt pods hold nodes for as long as they last)", g.Duration.Duration)
	}
	if d.Repair != nil {
		if err := d.Repair.validate(); err != nil {
			return fmt.Errorf("repair.%w", err)
		}
	}
	return nil
}

func (b *DisruptionBudget) validate() error {
	if err := validateNodeCount(b.Nodes); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if (b.Schedule == "") != (b.Duration == nil) {
		return fmt.Errorf("schedule: schedule and duration must be set together")
	}
	if b.Schedule != "" {
		if strings.Contains(b.Schedule, "TZ=") {
			return fmt.Errorf("schedule: %q: schedules are in UTC; remove the time zone", b.Schedule)
		}
		sched, err := cron.ParseStandard(b.Schedule)
		if err != nil {
			return fmt.Errorf("schedule: %q: %w", b.Schedule, err)
		}
		// cron gives up after five years without a match ("0 0 30 2 *"): such a window never
		// opens, and the budget would silently never apply.
		if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
			return fmt.Errorf("schedule: %q never fires", b.Schedule)
		}
		if b.Duration.Duration.Duration <= 0 {
			return fmt.Errorf("duration: %s must be positive", b.Duration.Duration.Duration)
		}
	}
	for i, r := range b.Reasons {
		switch r {
		case api.ReasonEmpty, api.ReasonUnderutilized, api.ReasonDrifted, api.ReasonExpired:
		case api.ReasonUnhealthy:
			return fmt.Errorf("reasons[%d]: %q must be Empty, Underutilized, Drifted or Expired: repairs have their own budget (disruption.repair.budget)", i, r)
		case api.ReasonInterrupted:
			return fmt.Errorf("reasons[%d]: %q must be Empty, Underutilized, Drifted or Expired: an interrupted node goes whatever a budget says", i, r)
		case api.ReasonReservationEnding:
			return fmt.Errorf("reasons[%d]: %q must be Empty, Underutilized, Drifted or Expired: the nodes of an ending reservation go whatever a budget says", i, r)
		default:
			return fmt.Errorf("reasons[%d]: %q must be Empty, Underutilized, Drifted or Expired", i, r)
		}
	}
	return nil
}

// ConsolidationOf returns the pool's consolidation policy, WhenUnderutilized by default.
func (pl *Pool) ConsolidationOf() Consolidation {
	if pl.Disruption == nil || pl.Disruption.Consolidation == "" {
		return WhenUnderutilized
	}
	return pl.Disruption.Consolidation
}

// ConsolidateAfterOf returns the pool's consolidateAfter; hasGPUs says whether the pool has GPU
// types, which decides the default.
func (pl *Pool) ConsolidateAfterOf(hasGPUs bool) time.Duration {
	if pl.Disruption != nil && pl.Disruption.ConsolidateAfter != nil {
		return pl.Disruption.ConsolidateAfter.Duration.Duration
	}
	if hasGPUs {
		return DefaultConsolidateAfterGPU
	}
	return DefaultConsolidateAfter
}

// SavingsThresholdOf returns the pool's savings threshold, DefaultSavingsThreshold by default.
func (pl *Pool) SavingsThresholdOf() float64 {
	if pl.Disruption == nil || pl.Disruption.SavingsThreshold == nil {
		return DefaultSavingsThreshold
	}
	return float64(*pl.Disruption.SavingsThreshold)
}

// SpotToSpotMinOfferingsOf returns the pool's spotToSpotMinOfferings, by default
// DefaultSpotToSpotMinOfferings.
func (pl *Pool) SpotToSpotMinOfferingsOf() int {
	if pl.Disruption == nil || pl.Disruption.SpotToSpotMinOfferings == nil {
		return DefaultSpotToSpotMinOfferings
	}
	return *pl.Disruption.SpotToSpotMinOfferings
}

// AllowedDisruptions returns how many of the pool's nodes may be disrupted at once, at now, for
// the reason: the least over the budgets that apply to the reason and are active, each "N" or
// ⌈P % × poolNodes⌉ (rounded up, as Karpenter and PodDisruptionBudgets do, so that 10 % of five
// nodes is one); a pool without budgets has one of DefaultBudgetNodes. Nodes already being
// disrupted count against the result: the caller subtracts them. math.MaxInt means no active
// budget applies.
func (pl *Pool) AllowedDisruptions(now time.Time, reason api.DisruptionReason, poolNodes int) int {
	budgets := []DisruptionBudget{{Nodes: DefaultBudgetNodes}}
	if pl.Disruption != nil && len(pl.Disruption.Budgets) > 0 {
		budgets = pl.Disruption.Budgets
	}
	allowed := math.MaxInt
	for _, b := range budgets {
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) || !b.Active(now) {
			continue
		}
		allowed = min(allowed, b.nodesOf(poolNodes))
	}
	return allowed
}

// nodesOf resolves the budget's nodes against the pool's size. Validation guarantees the form.
func (b DisruptionBudget) nodesOf(poolNodes int) int { return nodeCountOf(b.Nodes, poolNodes) }

// validateNodeCount checks a count of nodes, "3", or a share of a pool's nodes, "10%" (at most
// 100 %).
func validateNodeCount(s string) error {
	if !budgetNodesRE.MatchString(s) {
		return fmt.Errorf("%q must be a number of nodes (\"3\") or a percentage (\"10%%\")", s)
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		if v, err := strconv.Atoi(p); err != nil || v > 100 {
			return fmt.Errorf("%q is more than 100%%", s)
		}
	} else if _, err := strconv.Atoi(s); err != nil {
		return fmt.Errorf("%q is too large a number of nodes", s)
	}
	return nil
}

// nodeCountOf resolves a valid count against the pool's size: "N" is N, "P%" is ⌈P % × poolNodes⌉
// (rounded up, as Karpenter and PodDisruptionBudgets do, so that 10 % of five nodes is one).
func nodeCountOf(s string, poolNodes int) int {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, _ := strconv.Atoi(p)
		return (v*poolNodes + 99) / 100
	}
	v, _ := strconv.Atoi(s)
	return v
}

// Active reports whether the budget applies at now: always without a schedule; with one, when
// the schedule (in UTC) fired at most Duration before now — the first firing after now−Duration
// is not after now, which is Karpenter's rule. An invalid schedule (which validation rejects)
// is never active.
func (b DisruptionBudget) Active(now time.Time) bool {
	if b.Schedule == "" || b.Duration == nil {
		return true
	}
	sched, err := cron.ParseStandard("TZ=UTC " + b.Schedule)
	if err != nil {
		return false
	}
	now = now.UTC()
	next := sched.Next(now.Add(-b.Duration.Duration.Duration))
	return !next.IsZero() && !next.After(now)
}
