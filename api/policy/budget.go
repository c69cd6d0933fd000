package policy

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/tiler-dev/tiler/api"
)

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
func (b DisruptionBudget) nodesOf(poolNodes int) int {
	if p, ok := strings.CutSuffix(b.Nodes, "%"); ok {
		v, _ := strconv.Atoi(p)
		return (v*poolNodes + 99) / 100
	}
	v, _ := strconv.Atoi(b.Nodes)
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
