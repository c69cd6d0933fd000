package backtest

import (
	"math"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// TestQueueAccounting replays a step in demand by hand: 10 units/s (one GPU's worth) for half an
// hour, then 30 for an hour, through GPUs that take five minutes to boot. Reactive scaling orders
// two GPUs at the step and is two short for five minutes: 10 GPU-minutes, and 20 units/s pile up
// for 300 s, a backlog of 6000 that capacity equal to demand never drains. The mean wait is the
// backlog integrated over time over the work that arrived: 60·(1200+2400+3600+4800+6000+55·6000)
// / (60·(30·10+60·30)) = 165.7 s. With the queue signal the backlog asks for the GPUs that drain
// it, and the wait collapses.
func TestQueueAccounting(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s := forecast.Series{Start: start, Step: time.Minute, Values: make([]float64, 90)}
	for i := range s.Values {
		s.Values[i] = 10
		if i >= 30 {
			s.Values[i] = 30
		}
	}
	cfg, err := ReplayConfig{PerGPU: 10, Boot: 5 * time.Minute}.withDefaults(s.Step)
	if err != nil {
		t.Fatal(err)
	}
	d := newDemand(s)
	reactive := simulate(d, cfg, start, s.End(), func(_ time.Time, q queueState) int { return q.need })
	if reactive.UnderGPUMinutes != 10 || math.Abs(reactive.MeanWaitSeconds-20880000.0/126000) > 1e-6 {
		t.Errorf("reactive: %.1f GPU-minutes short, mean wait %.3f s; want 10 and %.3f", reactive.UnderGPUMinutes, reactive.MeanWaitSeconds, 20880000.0/126000)
	}
	if math.Abs(reactive.PeakQueueSeconds-6000.0/10) > 1e-9 { // 6000 units at the 10/s of one GPU, before the boot
		t.Errorf("peak queue %.1f s of service, want 600", reactive.PeakQueueSeconds)
	}
	var queueErr error
	queued := simulate(d, cfg, start, s.End(), func(at time.Time, q queueState) int {
		need, err := forecast.QueueDemand(forecast.QueueState{Depth: q.depth, ArrivalRate: q.load, ServiceRatePerGPU: cfg.PerGPU, GPUs: q.ready},
			cfg.PerGPU*cfg.QueueTarget.Seconds(), cfg.Lead)
		if err != nil {
			queueErr = err
		}
		return max(q.need, need.GPUs)
	})
	if queueErr != nil {
		t.Fatal(queueErr)
	}
	t.Logf("mean wait %.1f s reactive, %.1f s with the queue signal (%.1f against %.1f GPU-hours)", reactive.MeanWaitSeconds, queued.MeanWaitSeconds, reactive.GPUHours, queued.GPUHours)
	if queued.MeanWaitSeconds > 0.25*reactive.MeanWaitSeconds || queued.UnderGPUMinutes > reactive.UnderGPUMinutes {
		t.Errorf("with the queue signal: mean wait %.1f s, %.1f GPU-minutes short; want at most a quarter of reactive's %.1f s and no more than its %.1f",
			queued.MeanWaitSeconds, queued.UnderGPUMinutes, reactive.MeanWaitSeconds, reactive.UnderGPUMinutes)
	}
}
