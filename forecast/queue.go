package forecast

import (
	"fmt"
	"math"
	"time"
)

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
