package backtest

import (
	"fmt"
	"math"
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
}

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
}

// ReplayResult compares reactive scaling with forecast-driven pre-scaling on one trace.
type ReplayResult struct {
	// Series names the trace; PerGPU, Boot and Lead echo the configuration.
	Series string  `json:"series"`
	PerGPU float64 `json:"perGPU"`
	Boot   string  `json:"boot"`
	Lead   string  `json:"lead"`
	// Reactive scales to the demand it sees now; Forecast to max(now, upper forecast at now+Lead).
	Reactive PolicyResult `json:"reactive"`
	Forecast PolicyResult `json:"forecast"`
	// UnderReduction is 1 − Forecast.Under/Reactive.Under (0.8 means 80 % fewer GPU-minutes short).
	UnderReduction float64 `json:"underProvisionedReduction"`
	// GPUHoursIncrease is Forecast.GPUHours/Reactive.GPUHours − 1.
	GPUHoursIncrease float64 `json:"gpuHoursIncrease"`
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
	d := demand{s: s}
	reactive := func(t time.Time) int { return d.need(t, cfg.PerGPU) }
	fc := forecastPolicy{w: w, s: fs, perGPU: cfg.PerGPU, cache: map[int]int{}, averaged: fs.Step != s.Step}
	predictive := func(t time.Time) int { return max(d.need(t, cfg.PerGPU), fc.need(t)) }
	res := ReplayResult{Series: name, PerGPU: cfg.PerGPU, Boot: cfg.Boot.String(), Lead: cfg.Lead.String(), From: from, To: to}
	res.Reactive = simulate(d, cfg, from, to, reactive)
	res.Forecast = simulate(d, cfg, from, to, predictive)
	if res.Reactive.UnderGPUMinutes > 0 {
		res.UnderReduction = 1 - res.Forecast.UnderGPUMinutes/res.Reactive.UnderGPUMinutes
	}
	if res.Reactive.GPUHours > 0 {
		res.GPUHoursIncrease = res.Forecast.GPUHours/res.Reactive.GPUHours - 1
	}
	return res, nil
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
	return c, nil
}

// demand is the trace read as a step function: the value of the grid point containing t, or the
// last observed one across a gap.
type demand struct{ s forecast.Series }

func (d demand) at(t time.Time) float64 {
	for i := min(d.s.Index(t), d.s.Len()-1); i >= 0; i-- {
		if v := d.s.Values[i]; !math.IsNaN(v) {
			return v
		}
	}
	return 0
}

func (d demand) need(t time.Time, perGPU float64) int {
	return gpusFor(d.at(t), perGPU)
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
	cache  map[int]int
	// averaged means s is coarser than the trace, so the bucket containing t is not complete at t.
	averaged bool
}

func (p forecastPolicy) need(t time.Time) int {
	o := p.s.Index(t)
	if p.averaged {
		o = p.s.Index(t.Add(time.Nanosecond - p.s.Step)) // the last bucket complete at t
	}
	if n, ok := p.cache[o]; ok {
		return n
	}
	n := 0
	if fc, err := p.w.At(o); err == nil {
		n = gpusFor(fc.Upper, p.perGPU)
	}
	p.cache[o] = n
	return n
}

// simulate runs one policy: every tick it promotes booted nodes, orders nodes up to the desired
// count, releases nodes that have been surplus for the scale-down delay (booting ones first),
// and books the tick.
func simulate(d demand, cfg ReplayConfig, from, to time.Time, desired func(time.Time) int) PolicyResult {
	var res PolicyResult
	ready := d.need(from, cfg.PerGPU)
	var booting []time.Time
	var surplusSince time.Time
	hours := cfg.Tick.Hours()
	for t := from; t.Before(to); t = t.Add(cfg.Tick) {
		for len(booting) > 0 && !booting[0].After(t) {
			booting, ready = booting[1:], ready+1
		}
		want := desired(t)
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
		need := d.need(t, cfg.PerGPU)
		res.UnderGPUMinutes += float64(max(0, need-ready)) * cfg.Tick.Minutes()
		res.IdleGPUHours += float64(max(0, ready-need)) * hours
		res.GPUHours += float64(ready+len(booting)) * hours
		res.PeakGPUs = max(res.PeakGPUs, ready+len(booting))
	}
	return res
}
