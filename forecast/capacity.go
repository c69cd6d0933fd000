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

// DefaultQueueTargetPerGPU is the queued requests per GPU at which Tiler adds capacity when a
// workload does not say: LLM servers batch 5–10 requests per GPU before latency grows, so 8 keeps
// batches full without letting waits build.
const DefaultQueueTargetPerGPU = 8

// QueueState is what the controller measured about a workload's request queue.
type QueueState struct {
	// Depth is the number of requests waiting.
	Depth float64
	// ArrivalRate is requests per second arriving.
	ArrivalRate float64
	// ServiceRatePerGPU is requests per second one GPU completes, measured.
	ServiceRatePerGPU float64
	// GPUs is the number of GPUs serving now.
	GPUs int
}

// QueueNeed is the capacity the queue asks for, with its parts for the explanation.
type QueueNeed struct {
	// GPUs is the whole number of GPUs needed: ⌈max(RateGPUs, BacklogGPUs)⌉.
	GPUs int
	// RateGPUs is the GPUs that keep up with arrivals and drain the excess backlog in time.
	RateGPUs float64
	// BacklogGPUs is the GPUs that keep queued requests per GPU at the target.
	BacklogGPUs float64
}

// QueueDemand sizes capacity from a request queue:
//
//	excess      = max(0, Depth − target·GPUs)          requests beyond what current GPUs may hold
//	RateGPUs    = (ArrivalRate + excess/drain) / ServiceRatePerGPU
//	BacklogGPUs = Depth / target
//	GPUs        = ⌈max(RateGPUs, BacklogGPUs)⌉
//
// RateGPUs rises as soon as arrivals outpace service (the queue is building) even while the
// queue is still short, which is what lets capacity arrive before latency spikes; BacklogGPUs
// keeps each GPU's batch at the target once the backlog exists. drain is how soon the excess
// should be gone — the lead time, since no new GPU serves sooner.
func QueueDemand(q QueueState, targetPerGPU float64, drain time.Duration) (QueueNeed, error) {
	if err := q.validate(targetPerGPU, drain); err != nil {
		return QueueNeed{}, err
	}
	excess := math.Max(0, q.Depth-targetPerGPU*float64(q.GPUs))
	need := QueueNeed{
		RateGPUs:    (q.ArrivalRate + excess/drain.Seconds()) / q.ServiceRatePerGPU,
		BacklogGPUs: q.Depth / targetPerGPU,
	}
	need.GPUs = int(math.Ceil(math.Max(need.RateGPUs, need.BacklogGPUs) - 1e-9))
	return need, nil
}

func (q QueueState) validate(targetPerGPU float64, drain time.Duration) error {
	switch {
	case !(q.ServiceRatePerGPU > 0):
		return fmt.Errorf("serviceRatePerGPU %g: must be positive", q.ServiceRatePerGPU)
	case !(q.Depth >= 0):
		return fmt.Errorf("queue depth %g: must not be negative", q.Depth)
	case !(q.ArrivalRate >= 0):
		return fmt.Errorf("arrival rate %g: must not be negative", q.ArrivalRate)
	case q.GPUs < 0:
		return fmt.Errorf("gpus %d: must not be negative", q.GPUs)
	case !(targetPerGPU > 0):
		return fmt.Errorf("queueTargetPerGPU %g: must be positive", targetPerGPU)
	case drain <= 0:
		return fmt.Errorf("drain time %s: must be positive", drain)
	}
	return nil
}
