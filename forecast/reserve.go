package forecast

import (
	"fmt"
	"math"
	"time"
)

// ReservationInput is what the controller measured for one workload at one reconcile.
type ReservationInput struct {
	// Forecast is the forecast of the load at now + lead time (see WorkloadForecast.Lead).
	Forecast Forecast
	// Actual is the load now (the current value of loadQuery).
	Actual float64
	// PreviousPoint is the point forecast that was made one lead time ago for now; NaN when
	// there was none. It gives the forecast error reported in the explanation.
	PreviousPoint float64
	// Queue is the measured queue, nil when the workload has no queueDepthQuery.
	Queue *QueueState
	// CurrentReplicas is the workload's replicas now.
	CurrentReplicas int
	// Pool bounds the GPUs (min, max, budget).
	Pool Pool
}

// Reservation is how many replicas' worth of capacity to hold a lead time ahead, and why.
type Reservation struct {
	// TargetReplicas is the replicas the capacity is sized for.
	TargetReplicas int
	// Reserve is max(0, TargetReplicas − CurrentReplicas): the replicas to buy nodes for now.
	Reserve int
	// GPUs is TargetReplicas·GPUsPerReplica.
	GPUs int
	// Explanation says where the numbers came from.
	Explanation Explanation
}

// Explanation is the record of one reservation decision, for an Event message and for metrics
// (forecast value, actual, error).
type Explanation struct {
	// Workload names the workload.
	Workload string
	// Model and Fallback come from the forecast.
	Model, Fallback string
	// Target is the time the forecast is for.
	Target time.Time
	// Forecast is the point forecast and Sized the value capacity is sized for (after margin).
	Forecast, Sized float64
	// Actual is the load now.
	Actual float64
	// Error is (Actual − PreviousPoint)/Actual, the relative error of the forecast made for now;
	// NaN when there was no previous forecast or the actual is zero.
	Error float64
	// ForecastReplicas and QueueReplicas are what each signal asked for.
	ForecastReplicas, QueueReplicas int
	// Bound names the limit that clamped the target, if any.
	Bound Bound
}

// Message renders the explanation as one Event line.
func (e Explanation) Message() string {
	msg := fmt.Sprintf("%s: forecast %.4g (sized %.4g) at %s by %s, actual %.4g, error %+.1f%%; replicas forecast %d, queue %d",
		e.Workload, e.Forecast, e.Sized, e.Target.Format(time.RFC3339), e.Model, e.Actual, 100*e.Error, e.ForecastReplicas, e.QueueReplicas)
	if e.Bound != BoundNone {
		msg += "; clamped by " + string(e.Bound)
	}
	if e.Fallback != "" {
		msg += "; fallback: " + e.Fallback
	}
	return msg
}

// Lead returns the declared lead time, or the pool's boot time plus LeadBuffer.
func (f WorkloadForecast) Lead(pool Pool) time.Duration {
	if f.LeadTime.Duration > 0 {
		return f.LeadTime.Duration
	}
	return DefaultLead(pool.BootTime)
}

// Reserve turns a forecast and the current replicas into a reservation:
//
//	sized            = Point·Multiplier when a multiplier margin is declared, else Upper
//	forecastReplicas = ⌈sized / PerReplica⌉
//	queueReplicas    = ⌈QueueDemand(...).GPUs / GPUsPerReplica⌉ (0 without a queue)
//	target           = max of both, clamped to [MinReplicas, MaxReplicas] and then to the pool's
//	                   GPU bounds and budget (TargetCapacity), in whole replicas
//	Reserve          = max(0, target − CurrentReplicas)
func (f WorkloadForecast) Reserve(in ReservationInput) (Reservation, error) {
	if err := f.Validate(); err != nil {
		return Reservation{}, fmt.Errorf("workload forecast for %s: %w", f.Workload, err)
	}
	exp := Explanation{
		Workload: f.Workload.String(), Model: in.Forecast.Model, Fallback: in.Forecast.Fallback,
		Target: in.Forecast.Target, Forecast: in.Forecast.Point, Sized: f.sized(in.Forecast),
		Actual: in.Actual, Error: relativeError(in.Actual, in.PreviousPoint),
	}
	exp.ForecastReplicas = ceilDiv(exp.Sized, f.PerReplica)
	if in.Queue != nil {
		need, err := QueueDemand(*in.Queue, f.queueTarget(), f.Lead(in.Pool))
		if err != nil {
			return Reservation{}, fmt.Errorf("queue model for %s: %w", exp.Workload, err)
		}
		exp.QueueReplicas = ceilDiv(float64(need.GPUs), float64(f.GPUsPerReplica))
	}
	replicas, bound := f.clampReplicas(max(exp.ForecastReplicas, exp.QueueReplicas))
	t, err := TargetCapacity(replicas*f.GPUsPerReplica, 0, in.Pool)
	if err != nil {
		return Reservation{}, fmt.Errorf("pool bounds for %s: %w", exp.Workload, err)
	}
	if t.Bound != BoundNone && t.GPUs != replicas*f.GPUsPerReplica {
		replicas, bound = t.GPUs/f.GPUsPerReplica, t.Bound
	}
	exp.Bound = bound
	return Reservation{
		TargetReplicas: replicas, Reserve: max(0, replicas-in.CurrentReplicas),
		GPUs: replicas * f.GPUsPerReplica, Explanation: exp,
	}, nil
}

func (f WorkloadForecast) sized(fc Forecast) float64 {
	if f.Margin.Multiplier > 0 {
		return fc.Point * f.Margin.Multiplier
	}
	return fc.Upper
}

func (f WorkloadForecast) queueTarget() float64 {
	if f.QueueTargetPerGPU > 0 {
		return f.QueueTargetPerGPU
	}
	return DefaultQueueTargetPerGPU
}

// Options returns the forecaster options the declaration implies for a pool (a TimeZone that
// Validate refuses falls back to UTC).
func (f WorkloadForecast) Options(pool Pool) Options {
	loc, err := f.location()
	if err != nil {
		loc = time.UTC
	}
	return Options{Horizon: f.Lead(pool), Margin: f.Margin.Quantile, Location: loc}
}

func (f WorkloadForecast) clampReplicas(r int) (int, Bound) {
	switch {
	case r < f.MinReplicas:
		return f.MinReplicas, BoundMin
	case r > f.MaxReplicas:
		return f.MaxReplicas, BoundMax
	}
	return r, BoundNone
}

func ceilDiv(x, per float64) int {
	return int(math.Ceil(math.Max(0, x)/per - 1e-9))
}

func relativeError(actual, predicted float64) float64 {
	if math.IsNaN(predicted) || actual == 0 {
		return math.NaN()
	}
	return (actual - predicted) / actual
}
