package backtest

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// DefaultLeadBuffer is added to the boot time to get the default lead: image pulls and
// scheduling add minutes after a node reports ready, and pre-scaling 10–15 minutes ahead of a
// ramp is the target.
const DefaultLeadBuffer = 10 * time.Minute

// DefaultScaleDownDelay is how long capacity must be unneeded before it is released, for both
// policies (the cluster autoscaler's scale-down-unneeded-time default).
const DefaultScaleDownDelay = 10 * time.Minute

// ReplayConfig describes the pool the trace is replayed through.
type ReplayConfig struct {
	// PerGPU is the load one GPU serves, in the trace's units (e.g. requests/s).
	PerGPU float64
	// Boot is the time from ordering a node to its GPU serving.
	Boot time.Duration
	// Lead is how far ahead the forecast-driven policy looks; zero means Boot+DefaultLeadBuffer.
	Lead time.Duration
	// ScaleDownDelay is how long capacity stays after it stops being needed; zero means
	// DefaultScaleDownDelay.
	ScaleDownDelay time.Duration
	// Tick is the simulation step; zero means min(series step, 1m).
	Tick time.Duration
	// Options configures the forecaster (its Horizon is set to Lead).
	Options forecast.Options
	// QueueTarget is how much work, in seconds of one GPU's service, each GPU's queue may hold
	// before the queue signal asks for capacity (forecast.QueueDemand's target per GPU, as
	// requests at one a second); zero means DefaultQueueTarget.
	QueueTarget time.Duration
	// Clairvoyant also computes the clairvoyant bound (ClairvoyantIncrease) for the result: the
	// least GPU-hours increase with which perfect foresight cuts the under-provisioning as much as
	// the target (TargetReduction) and as much as the forecast does. It costs 36 more replays.
	Clairvoyant bool
}

// DefaultQueueTarget is the work each GPU's queue may hold, in seconds of its service, when a
// replay does not say: forecast.DefaultQueueTargetPerGPU requests at one request a second.
const DefaultQueueTarget = forecast.DefaultQueueTargetPerGPU * time.Second

// The replay target: TargetReduction fewer under-provisioned GPU-minutes than reactive scaling
// for at most TargetIncrease more GPU-hours (ClairvoyantBound restates it per trace).
const (
	// TargetReduction is the target's cut in under-provisioned GPU-minutes (0.8: 80 % fewer).
	TargetReduction = 0.8
	// TargetIncrease is the most GPU-hours the target allows over reactive scaling (0.1: 10 %).
	TargetIncrease = 0.1
)

// PolicyResult is what one scaling policy cost and missed over the replay.
type PolicyResult struct {
	// UnderGPUMinutes is Σ max(0, needed−ready GPUs) over time: demand left waiting.
	UnderGPUMinutes float64 `json:"underProvisionedGPUMinutes"`
	// GPUHours is every GPU paid for (ready or booting) over time.
	GPUHours float64 `json:"gpuHours"`
	// IdleGPUHours is Σ max(0, ready−needed GPUs) over time.
	IdleGPUHours float64 `json:"idleGPUHours"`
	// PeakGPUs is the largest pool size.
	PeakGPUs int `json:"peakGPUs"`
	// MeanWaitSeconds is how long the average unit of work waited in the queue (Little's law:
	// the backlog integrated over time divided by the work that arrived). The trace is read as
	// work arriving per second, served by the ready GPUs at PerGPU each; what they cannot serve
	// waits, first in first out.
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
	// PeakQueueSeconds is the largest backlog, in seconds of the whole pool's service at the
	// time (how long the queue would take to drain at the capacity then).
	PeakQueueSeconds float64 `json:"peakQueueSeconds"`
}

// ReplayResult compares reactive scaling with forecast-driven pre-scaling on one trace.
type ReplayResult struct {
	// Series names the trace; PerGPU, Boot and Lead echo the configuration.
	Series string  `json:"series"`
	PerGPU float64 `json:"perGPU"`
	Boot   string  `json:"boot"`
	Lead   string  `json:"lead"`
	// Reactive scales to the demand it sees now; Forecast to max(now, upper forecast at now+Lead);
	// ForecastQueue to the larger of Forecast's and what the queue asks for
	// (forecast.QueueDemand: arrivals plus the backlog beyond QueueTarget per GPU drained within
	// the lead), as the controller does when a workload declares a queue-depth query.
	Reactive      PolicyResult `json:"reactive"`
	Forecast      PolicyResult `json:"forecast"`
	ForecastQueue PolicyResult `json:"forecastQueue"`
	// UnderReduction is 1 − Forecast.Under/Reactive.Under (0.8 means 80 % fewer GPU-minutes short).
	UnderReduction float64 `json:"underProvisionedReduction"`
	// GPUHoursIncrease is Forecast.GPUHours/Reactive.GPUHours − 1.
	GPUHoursIncrease float64 `json:"gpuHoursIncrease"`
	// QueueUnderReduction is 1 − ForecastQueue.Under/Reactive.Under, QueueGPUHoursIncrease
	// ForecastQueue.GPUHours/Reactive.GPUHours − 1, and QueueRemoves the share of Forecast's
	// remaining under-provisioned GPU-minutes the queue signal removes:
	// 1 − ForecastQueue.Under/Forecast.Under.
	QueueUnderReduction   float64 `json:"queueUnderProvisionedReduction"`
	QueueGPUHoursIncrease float64 `json:"queueGPUHoursIncrease"`
	QueueRemoves          float64 `json:"queueRemoves"`
	// Clairvoyant is the clairvoyant bound, when ReplayConfig.Clairvoyant asked for it.
	Clairvoyant *ClairvoyantBound `json:"clairvoyant,omitempty"`
	// From and To bound the replayed window (after the forecaster's warm-up).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Replay treats s as request rate and runs it through a pool whose nodes take cfg.Boot to serve,
// once with reactive scaling and once with forecast-driven pre-scaling.
func Replay(name string, s forecast.Series, cfg ReplayConfig) (ReplayResult, error) {
	cfg, err := cfg.withDefaults(s.Step)
	if err != nil {
		return ReplayResult{}, err
	}
	opts := cfg.Options
	opts.Horizon = cfg.Lead
	fs, err := forecastGrid(s)
	if err != nil {
		return ReplayResult{}, err
	}
	w, err := forecast.NewWalker(fs, opts)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("building the forecaster: %w", err)
	}
	from, to := s.TimeAt(warmUp(s)), s.End()
	d := newDemand(s)
	reactive := func(_ time.Time, q queueState) int { return q.need }
	fc := forecastPolicy{w: w, s: fs, perGPU: cfg.PerGPU, cache: make([]int, fs.Len()), averaged: fs.Step != s.Step}
	predictive := func(t time.Time, q queueState) int { return max(q.need, fc.need(t)) }
	queued := func(t time.Time, q queueState) int {
		need, err := forecast.QueueDemand(forecast.QueueState{Depth: q.depth, ArrivalRate: q.load, ServiceRatePerGPU: cfg.PerGPU, GPUs: q.ready},
			cfg.PerGPU*cfg.QueueTarget.Seconds(), cfg.Lead)
		if err != nil { // cannot happen: the configuration was validated
			return predictive(t, q)
		}
		return max(predictive(t, q), need.GPUs)
	}
	res := ReplayResult{Series: name, PerGPU: cfg.PerGPU, Boot: cfg.Boot.String(), Lead: cfg.Lead.String(), From: from, To: to}
	res.Reactive = simulate(d, cfg, from, to, reactive)
	res.Forecast = simulate(d, cfg, from, to, predictive)
	res.ForecastQueue = simulate(d, cfg, from, to, queued)
	res.UnderReduction, res.GPUHoursIncrease = compare(res.Reactive, res.Forecast)
	res.QueueUnderReduction, res.QueueGPUHoursIncrease = compare(res.Reactive, res.ForecastQueue)
	res.QueueRemoves, _ = compare(res.Forecast, res.ForecastQueue)
	if cfg.Clairvoyant {
		inc := clairvoyant(s, cfg, TargetReduction, res.UnderReduction)
		cb := &ClairvoyantBound{TargetReduction: TargetReduction, Reduction: res.UnderReduction}
		if cb.TargetReached = !math.IsInf(inc[0], 1); cb.TargetReached {
			cb.TargetIncrease = inc[0]
		}
		if cb.Reached = !math.IsInf(inc[1], 1); cb.Reached {
			cb.Increase, cb.Ratio = inc[1], (1+res.GPUHoursIncrease)/(1+inc[1])
		}
		res.Clairvoyant = cb
	}
	return res, nil
}

// compare returns 1 − b.Under/a.Under and b.GPUHours/a.GPUHours − 1 (0 when a has none).
func compare(a, b PolicyResult) (underReduction, gpuHoursIncrease float64) {
	if a.UnderGPUMinutes > 0 {
		underReduction = 1 - b.UnderGPUMinutes/a.UnderGPUMinutes
	}
	if a.GPUHours > 0 {
		gpuHoursIncrease = b.GPUHours/a.GPUHours - 1
	}
	return underReduction, gpuHoursIncrease
}

// ClairvoyantBound restates the replay target against what perfect foresight costs on the trace.
type ClairvoyantBound struct {
	// TargetReduction is the target's cut in under-provisioned GPU-minutes, and TargetIncrease the
	// least GPU-hours increase over reactive scaling with which a clairvoyant policy reaches it:
	// the target restated for this trace is that increase, not 10 %. TargetReached is false (and
	// TargetIncrease 0) when none of them does.
	TargetReduction float64 `json:"targetReduction"`
	TargetIncrease  float64 `json:"targetGPUHoursIncrease"`
	TargetReached   bool    `json:"targetReached"`
	// Reduction is the cut the forecast reached, Increase the least GPU-hours increase with which
	// a clairvoyant policy cuts as much, and Ratio the forecast's GPU-hours over that policy's:
	// how far the forecast is from the bound at the same cut (1 is the bound; 0 when no
	// clairvoyant policy cuts as much, Reached false).
	Reduction float64 `json:"reduction"`
	Increase  float64 `json:"gpuHoursIncrease"`
	Reached   bool    `json:"reached"`
	Ratio     float64 `json:"ratio"`
}

// ClairvoyantIncrease is the cheapest replay, in GPU-hours over reactive scaling, of a family of
// policies that know the future demand: each sizes capacity at max(demand now, m × the
// q-quantile of the one-minute demand over the last a of the lead window [now+lead−a,
// now+lead]), for m in 0.9–1.05, q in {median, upper quartile, max} and a in {0, 5, 10} minutes,
// all under the replay's boot time and scale-down delay. It returns the least GPU-hours increase
// among those that cut the under-provisioned GPU-minutes by at least minReduction, +Inf when
// none does. No forecaster can do better than perfect foresight, so it bounds what a target on
// this trace can ask: a miss beyond it is the trace's, not the forecaster's.
func ClairvoyantIncrease(s forecast.Series, cfg ReplayConfig, minReduction float64) float64 {
	return clairvoyant(s, cfg, minReduction)[0]
}

// clairvoyant returns ClairvoyantIncrease for each cut, from one set of replays.
func clairvoyant(s forecast.Series, cfg ReplayConfig, minReductions ...float64) []float64 {
	best := make([]float64, len(minReductions))
	for i := range best {
		best[i] = math.Inf(1)
	}
	cfg, err := cfg.withDefaults(s.Step)
	if err != nil {
		return best
	}
	from, to := s.TimeAt(warmUp(s)), s.End()
	d := newDemand(s)
	reactive := simulate(d, cfg, from, to, func(_ time.Time, q queueState) int { return q.need })
	for _, a := range []time.Duration{0, 5 * time.Minute, 10 * time.Minute} {
		for _, q := range []float64{0.5, 0.75, 1} {
			for _, m := range []float64{0.9, 0.95, 1, 1.05} {
				var future []float64
				r := simulate(d, cfg, from, to, func(t time.Time, qs queueState) int {
					future = future[:0]
					for u := t.Add(cfg.Lead - a); !u.After(t.Add(cfg.Lead)); u = u.Add(cfg.Tick) {
						future = append(future, d.at(u))
					}
					sort.Float64s(future)
					return max(qs.need, gpusFor(m*future[int(q*float64(len(future)-1))], cfg.PerGPU))
				})
				reduction, increase := compare(reactive, r)
				for i, min := range minReductions {
					if reduction >= min-1e-9 {
						best[i] = math.Min(best[i], increase)
					}
				}
			}
		}
	}
	return best
}

func (c ReplayConfig) withDefaults(step time.Duration) (ReplayConfig, error) {
	if c.PerGPU <= 0 || math.IsNaN(c.PerGPU) {
		return c, fmt.Errorf("perGPU %g: must be positive", c.PerGPU)
	}
	if c.Boot < 0 {
		return c, fmt.Errorf("boot %s: must not be negative", c.Boot)
	}
	if c.Lead == 0 {
		c.Lead = c.Boot + DefaultLeadBuffer
	}
	if c.Lead < c.Boot {
		return c, fmt.Errorf("lead %s: must be at least the boot time %s, or capacity arrives late", c.Lead, c.Boot)
	}
	if c.ScaleDownDelay == 0 {
		c.ScaleDownDelay = DefaultScaleDownDelay
	}
	if c.Tick == 0 {
		c.Tick = min(step, time.Minute)
	}
	if c.QueueTarget == 0 {
		c.QueueTarget = DefaultQueueTarget
	}
	if c.QueueTarget < 0 {
		return c, fmt.Errorf("queueTarget %s: must not be negative", c.QueueTarget)
	}
	return c, nil
}

// demand is the trace read as a step function: the value of the grid point containing t, or the
// last observed one across a gap.
type demand struct {
	s forecast.Series
	// filled[i] is the value at point i or the last observed one before it, 0 before any: the
	// replays read it at every tick of every policy.
	filled []float64
}

func newDemand(s forecast.Series) demand {
	d := demand{s: s, filled: make([]float64, s.Len())}
	last := 0.0
	for i, v := range s.Values {
		if !math.IsNaN(v) {
			last = v
		}
		d.filled[i] = last
	}
	return d
}

func (d demand) at(t time.Time) float64 {
	if i := min(d.s.Index(t), d.s.Len()-1); i >= 0 {
		return d.filled[i]
	}
	return 0
}

// gpusFor is ⌈load/perGPU⌉, with a 1e-9 tolerance so 2.0000000001 GPUs' worth is 2.
func gpusFor(load, perGPU float64) int {
	return int(math.Ceil(math.Max(0, load)/perGPU - 1e-9))
}

// forecastStep is the grid the replay's forecaster runs on: the five-minute means a controller
// would read from Prometheus, not one-minute samples whose noise no model can predict and whose
// error quantile would inflate the margin.
const forecastStep = 5 * time.Minute

// forecastGrid averages s to forecastStep when it is finer.
func forecastGrid(s forecast.Series) (forecast.Series, error) {
	if s.Step >= forecastStep || forecastStep%s.Step != 0 {
		return s, nil
	}
	fs, err := s.Resample(forecastStep)
	if err != nil {
		return forecast.Series{}, fmt.Errorf("averaging the trace for the forecaster: %w", err)
	}
	return fs, nil
}

// forecastPolicy asks the walker, standing at the grid point containing t (whose value the
// controller has just observed; with an averaged grid, the last complete bucket), for the
// forecast one lead ahead and sizes capacity for its upper value, as the controller's
// reservations do (forecast.WorkloadForecast.Reserve).
type forecastPolicy struct {
	w      *forecast.Walker
	s      forecast.Series
	perGPU float64
	// cache[o] is 1 + the GPUs sized from origin o, 0 until asked: the three policies ask for
	// the same origins.
	cache []int
	// averaged means s is coarser than the trace, so the bucket containing t is not complete at t.
	averaged bool
}

func (p forecastPolicy) need(t time.Time) int {
	o := p.s.Index(t)
	if p.averaged {
		o = p.s.Index(t.Add(time.Nanosecond - p.s.Step)) // the last bucket complete at t
	}
	inGrid := o >= 0 && o < len(p.cache)
	if inGrid && p.cache[o] > 0 {
		return p.cache[o] - 1
	}
	n := 0
	if fc, err := p.w.At(o); err == nil {
		n = gpusFor(fc.Upper, p.perGPU)
	}
	if inGrid {
		p.cache[o] = n + 1
	}
	return n
}

// queueState is what a policy sees at a tick: the backlog (in units of work), the GPUs serving,
// and the work arriving (load, a rate) and the GPUs it needs (gpusFor).
type queueState struct {
	depth float64
	ready int
	load  float64
	need  int
}

// simulate runs one policy: every tick it promotes booted nodes, orders nodes up to the desired
// count, releases nodes that have been surplus for the scale-down delay (booting ones first),
// serves the queue — the work arriving in the tick plus the backlog, up to the ready GPUs'
// capacity — and books the tick.
func simulate(d demand, cfg ReplayConfig, from, to time.Time, desired func(time.Time, queueState) int) PolicyResult {
	var res PolicyResult
	ready := gpusFor(d.at(from), cfg.PerGPU)
	var booting []time.Time
	var surplusSince time.Time
	hours, secs := cfg.Tick.Hours(), cfg.Tick.Seconds()
	var queue, waited, arrived float64
	for t := from; t.Before(to); t = t.Add(cfg.Tick) {
		for len(booting) > 0 && !booting[0].After(t) {
			booting, ready = booting[1:], ready+1
		}
		load := d.at(t)
		need := gpusFor(load, cfg.PerGPU)
		want := desired(t, queueState{depth: queue, ready: ready, load: load, need: need})
		total := ready + len(booting)
		switch {
		case want > total:
			for range want - total {
				booting = append(booting, t.Add(cfg.Boot))
			}
			surplusSince = time.Time{}
		case want < total && surplusSince.IsZero():
			surplusSince = t
		case want < total && t.Sub(surplusSince) >= cfg.ScaleDownDelay:
			drop := min(total-want, len(booting))
			booting = booting[:len(booting)-drop]
			ready -= total - want - drop
			surplusSince = time.Time{}
		case want == total:
			surplusSince = time.Time{}
		}
		capacity := float64(ready) * cfg.PerGPU
		queue = math.Max(0, queue+(load-capacity)*secs)
		arrived += load * secs
		waited += queue * secs
		if capacity > 0 {
			res.PeakQueueSeconds = math.Max(res.PeakQueueSeconds, queue/capacity)
		}
		res.UnderGPUMinutes += float64(max(0, need-ready)) * cfg.Tick.Minutes()
		res.IdleGPUHours += float64(max(0, ready-need)) * hours
		res.GPUHours += float64(ready+len(booting)) * hours
		res.PeakGPUs = max(res.PeakGPUs, ready+len(booting))
	}
	if arrived > 0 {
		res.MeanWaitSeconds = waited / arrived
	}
	return res
}
