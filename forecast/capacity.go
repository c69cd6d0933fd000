package forecast

import (
	"fmt"
	"math"
	"time"
)

// LeadBuffer is added to a pool's observed node boot time to get the default lead time: image
// pulls and scheduling follow the boot, and the goal is capacity ready 10–15 minutes before an
// anticipated increase.
const LeadBuffer = 10 * time.Minute

// DefaultLead returns the lead time for a pool whose nodes take boot to become ready.
func DefaultLead(boot time.Duration) time.Duration { return boot + LeadBuffer }

// Pool is the part of a node pool's policy that bounds capacity.
type Pool struct {
	// MinGPUs and MaxGPUs bound the pool's GPUs; MaxGPUs 0 means unbounded.
	MinGPUs, MaxGPUs int
	// PricePerGPUHour is what one GPU costs; with BudgetPerHour it caps the pool.
	PricePerGPUHour float64
	// BudgetPerHour caps the pool's spend; 0 means no budget.
	BudgetPerHour float64
	// BootTime is the observed time from ordering a node to it running pods.
	BootTime time.Duration
}

// Bound names the limit that set a target, if any.
type Bound string

// The limits a target can be clamped by.
const (
	// BoundNone means the target is what the forecast and queue asked for.
	BoundNone Bound = ""
	// BoundMin means a minimum raised the target.
	BoundMin Bound = "min"
	// BoundMax means a maximum lowered the target.
	BoundMax Bound = "max"
	// BoundBudget means the budget lowered the target.
	BoundBudget Bound = "budget"
)

// Target is the capacity to have a lead time ahead.
type Target struct {
	// GPUs is the clamped target.
	GPUs int
	// ForecastGPUs and QueueGPUs are what each signal asked for before clamping.
	ForecastGPUs, QueueGPUs int
	// Bound names the limit that changed the target.
	Bound Bound
}

// TargetCapacity is max(forecastGPUs, queueGPUs) clamped to [MinGPUs, min(MaxGPUs, budget GPUs)],
// where budget GPUs = ⌊BudgetPerHour / PricePerGPUHour⌋. The maximum and the budget win over the
// minimum: a budget is a promise to the bill payer.
func TargetCapacity(forecastGPUs, queueGPUs int, pool Pool) (Target, error) {
	if err := pool.validate(); err != nil {
		return Target{}, err
	}
	t := Target{ForecastGPUs: forecastGPUs, QueueGPUs: queueGPUs, GPUs: max(forecastGPUs, queueGPUs, 0)}
	if t.GPUs < pool.MinGPUs {
		t.GPUs, t.Bound = pool.MinGPUs, BoundMin
	}
	if pool.MaxGPUs > 0 && t.GPUs > pool.MaxGPUs {
		t.GPUs, t.Bound = pool.MaxGPUs, BoundMax
	}
	if b := pool.budgetGPUs(); b >= 0 && t.GPUs > b {
		t.GPUs, t.Bound = b, BoundBudget
	}
	return t, nil
}

// budgetGPUs is the GPUs the budget pays for, −1 when there is no budget.
func (p Pool) budgetGPUs() int {
	if p.BudgetPerHour <= 0 || p.PricePerGPUHour <= 0 {
		return -1
	}
	return int(math.Floor(p.BudgetPerHour/p.PricePerGPUHour + 1e-9))
}

func (p Pool) validate() error {
	switch {
	case p.MinGPUs < 0:
		return fmt.Errorf("minGPUs %d: must not be negative", p.MinGPUs)
	case p.MaxGPUs < 0:
		return fmt.Errorf("maxGPUs %d: must not be negative", p.MaxGPUs)
	case p.MaxGPUs > 0 && p.MaxGPUs < p.MinGPUs:
		return fmt.Errorf("maxGPUs %d: must be at least minGPUs %d", p.MaxGPUs, p.MinGPUs)
	case p.BudgetPerHour < 0:
		return fmt.Errorf("budgetPerHour %g: must not be negative", p.BudgetPerHour)
	case p.PricePerGPUHour < 0:
		return fmt.Errorf("pricePerGPUHour %g: must not be negative", p.PricePerGPUHour)
	}
	return nil
}
