package forecast

import (
	"fmt"
	"math"
)

// Walker makes walk-forward forecasts over one series: At(o) uses only the values at indices ≤ o,
// refitting the models and their combination every Options.RefitEvery, and re-detecting the
// period at least a week apart, as o advances. It is what Predict uses for a single forecast and what a
// backtest uses for thousands.
type Walker struct {
	s     Series
	opts  Options
	h     int
	refit int
	// redetect is how often the period is re-detected: daily refits, weekly detection, since a
	// workload's cycle changes far more rarely than its level and detection costs 100 FFTs.
	redetect int
	holt     *holt
	models   map[Period]*seasonal
	kinds    *seasonal // the weekday/weekend daily model, nil until a rival needs it
	period   Period
	reason   string
	checked  int       // origin of the last period decision, -1 before the first
	ens      *ensemble // the last refit's, nil before the first
}

// NewWalker prepares walk-forward forecasts of s with the given options.
func NewWalker(s Series, opts Options) (*Walker, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if s.Len() == 0 {
		return nil, ErrNoSamples
	}
	return &Walker{
		s: s, opts: opts, h: max(1, s.Steps(opts.Horizon)), refit: max(1, s.Steps(opts.RefitEvery)),
		redetect: max(1, s.Steps(max(opts.RefitEvery, Week))),
		holt:     newHolt(s.Values), models: map[Period]*seasonal{}, checked: -1,
	}, nil
}

// HorizonSteps returns the horizon in grid steps (the forecast for origin o is for o+HorizonSteps).
func (w *Walker) HorizonSteps() int { return w.h }

// At forecasts the value HorizonSteps after origin o from the values at indices ≤ o. Origins
// must not decrease between calls for the refit schedule to hold (any order is still free of
// look-ahead).
func (w *Walker) At(o int) (Forecast, error) {
	if o < 0 || o >= w.s.Len() {
		return Forecast{}, fmt.Errorf("origin %d outside the series of %d points", o, w.s.Len())
	}
	fc := Forecast{Origin: w.s.TimeAt(o), Target: w.s.TimeAt(o + w.h)}
	w.decidePeriod(o)
	if w.period != PeriodNone {
		if e := w.ens; e == nil || o-e.at >= w.refit || o < e.at || e.experts[0].m.period != w.period {
			ens := w.refitAt(o)
			w.ens = &ens
		}
		if p, ok := w.ens.predict(o+w.h, false); ok {
			m := w.ens.model()
			fc.Point, fc.Upper, fc.Model, fc.Period, fc.Fallback = p, w.ens.upper(o+w.h, p), m.name(), m.m.period, w.reason
			return fc, nil
		}
		w.reason = fmt.Sprintf("no value at this phase in the last %d %ss", w.opts.Cycles, w.period)
	}
	p, u, ok := w.holt.predict(o, w.h, w.opts.Margin)
	if !ok {
		return Forecast{}, fmt.Errorf("forecasting from %s: %w", fc.Origin, ErrTooLittleHistory)
	}
	fc.Point, fc.Upper, fc.Model, fc.Fallback = p, u, "holt", w.reason
	return fc, nil
}

// decidePeriod re-runs detection (or applies the forced period) every refit interval, on the
// history known at o only.
func (w *Walker) decidePeriod(o int) {
	if w.checked >= 0 && o-w.checked < w.redetect && o >= w.checked {
		return
	}
	w.checked = o
	w.reason = ""
	known := Series{Start: w.s.Start, Step: w.s.Step, Values: w.s.Values[:o+1]}
	p := w.opts.Period
	if p == PeriodAuto {
		win := known
		if lo := known.Len() - known.Steps(detectWindow); lo > 0 {
			win = Series{Start: known.TimeAt(lo), Step: known.Step, Values: known.Values[lo:]}
		}
		res := DetectPeriod(win)
		if p = res.Period; p == PeriodNone {
			w.reason = "no daily or weekly cycle: " + res.Reason
		}
	}
	if p == PeriodWeek && observedSpan(known.Values) < 2*known.Steps(Week) {
		// Two weeks are needed to fit a weekly profile; a daily one still applies meanwhile.
		w.reason, p = "less than two weeks of history for the weekly cycle; daily model", PeriodDay
	}
	if p != PeriodNone && p != PeriodAuto && observedSpan(known.Values) < 2*known.Steps(p.Duration()) {
		w.reason = fmt.Sprintf("less than two %ss of history", p)
		p = PeriodNone
	}
	w.period = p
}

func (w *Walker) model(p Period) *seasonal {
	if m, ok := w.models[p]; ok {
		return m
	}
	m := newSeasonal(w.s, p, w.h, w.opts.Cycles, nil)
	w.models[p] = m
	return m
}

// dayKinds returns the daily model whose profile takes weekdays for weekday targets and weekend
// days for weekend ones, in Options.Location.
func (w *Walker) dayKinds() *seasonal {
	if w.kinds == nil {
		w.kinds = newSeasonal(w.s, PeriodDay, w.h, w.opts.Cycles, w.opts.Location)
	}
	return w.kinds
}

// observedSpan is the number of points from the first observed value to the end.
func observedSpan(v []float64) int {
	for i, x := range v {
		if !math.IsNaN(x) {
			return len(v) - i
		}
	}
	return 0
}
