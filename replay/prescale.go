package replay

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/provisioner/prescale"
)

// prescaler is a forecasting policy's pre-scaler: the controller's own (prescale.Size each round,
// prescale.Hold in between), fed the workload's load series up to the virtual now instead of
// Prometheus' answers.
type prescaler struct {
	// refreshed is the last round; demand its demand, one per forecast sized.
	refreshed time.Time
	demand    []prescale.Demand
	// expected are the expected pods of the last batch (State.LastExpected of the next).
	expected []*corev1.Pod
	// kept are the nodes the last batch kept for the forecast: disruption keeps them too.
	kept []string
}

// keep is the disruption plan's Keep: the nodes kept for the forecast, as the controller passes
// them (nil: none).
func (p *prescaler) keep() map[string]string {
	if len(p.kept) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.kept))
	for _, n := range p.kept {
		out[n] = "kept for the forecast: a plan of the expected pods needs it"
	}
	return out
}

// expectedPods is the pre-scaler's answer to a batch (Prescaler.ExpectedPods): every
// PrescaleInterval each forecast is sized again by prescale.Size on its load's history before now
// (PrescaleHistory of it), the load's latest value as the actual and the Deployment's live
// replicas; in between, the last round's demand is held (prescale.Hold). A forecast that cannot
// be made (too little history) expects nothing this round, as the controller's skips the workload.
func (w *world) expectedPods(pods []*corev1.Pod) []*corev1.Pod {
	p := &w.pre
	if p.refreshed.IsZero() || w.now.Sub(p.refreshed) >= w.cfg.PrescaleInterval {
		p.refreshed = w.now
		p.demand = p.demand[:0]
		for i := range w.wl.Forecasts {
			f := &w.wl.Forecasts[i]
			w.acct.forecastRounds++
			d, ok := w.sizeForecast(f, pods)
			if !ok {
				w.acct.forecastErrors++
				continue
			}
			p.demand = append(p.demand, d)
		}
	}
	p.expected = prescale.Hold(p.demand, pods)
	w.acct.expectedPods += len(p.expected)
	return p.expected
}

// sizeForecast is one forecast's round at now.
func (w *world) sizeForecast(f *Forecast, pods []*corev1.Pod) (prescale.Demand, bool) {
	hist, actual, ok := loadUntil(f.Load, w.now, w.cfg.PrescaleHistory)
	if !ok {
		return prescale.Demand{}, false
	}
	tmpl := podTemplate(&f.Replica, w.pol.ShareGPUs)
	replicas := 0
	for _, p := range w.live {
		if p.spec.Workload == f.Replica.Workload {
			replicas++
		}
	}
	boot := w.cfg.BootDelay
	if f.Replica.NumGPUs > 0 {
		boot = w.cfg.GPUBootDelay + w.cfg.DeviceDelay
	}
	pool := prescale.PoolFor(w.pol.Cost.Pools, w.pol.Cost.Budget, tmpl, boot, w.cfg.Catalog)
	_, d, err := prescale.Size(f.Spec, prescale.Workload{Name: f.Replica.Workload, Namespace: Namespace, Template: tmpl, Replicas: replicas},
		pool, prescale.Load{History: hist, Actual: actual}, w.now, pods)
	return d, err == nil
}

// loadUntil is what a pre-scaler standing at now sees of a load series: the grid points of the
// history window [now−history, now] and the latest value at or before now. It reports false when
// no value is known yet.
func loadUntil(load forecast.Series, now time.Time, history time.Duration) (forecast.Series, float64, bool) {
	last := load.Index(now)
	if last < 0 {
		return forecast.Series{}, 0, false
	}
	last = min(last, load.Len()-1)
	first := max(0, load.Index(now.Add(-history)))
	if first > last {
		return forecast.Series{}, 0, false
	}
	actual := load.Values[last]
	if actual != actual { // NaN: no sample at the latest point
		return forecast.Series{}, 0, false
	}
	return forecast.Series{Start: load.TimeAt(first), Step: load.Step, Values: load.Values[first : last+1]}, actual, true
}
