package forecast

import (
	"fmt"
	"math"
	"time"
)

// Walker makes walk-forward forecasts over one series: At(o) uses only the values at indices ≤ o.
// Everything it decides is decided on fixed schedules counted from the first point of the series
// — the period at detection points, the models' weights at refit points (Options.RefitEvery),
// the experts' combination at mix points (every hour) — so a forecast from origin o is the same
// whether the walker got there by walking every origin before it, as a backtest does, or was
// asked for o alone, as Predict does.
type Walker struct {
	s    Series
	opts Options
	h    int
	// refit is how often the stacks' weights and the margin are refitted, in steps.
	refit int
	// redetect is how often the period is re-detected after the first detection, two days in:
	// daily refits, weekly detection, since a workload's cycle changes far more rarely than its
	// level and detection costs 100 FFTs.
	redetect int
	// mixEvery is how often the experts are reweighed and the fallback decided, in steps: every
	// hour (a divisor of refit), so that after a level shift the experts that follow it gain
	// weight within hours of the evidence instead of at the next daily refit.
	mixEvery int
	// stride is every how many steps a target is scored as evidence (evidenceStep).
	stride int
	// pairEvery is every how many evidence slots the versus sums are kept (pairSums): a mix
	// point's windows run from mix point to mix point when mixEvery is a whole number of slots
	// and the windows a whole number of mix points; every slot otherwise.
	pairEvery int
	holt      *holt
	models    map[Period]*seasonal
	kinds     map[int]*seasonal // the weekday/weekend daily models, by weekend phase, as rivals need them
	week      *weekSums         // the models' (weekSums), nil until the first is built
	phases    map[int]int       // the weekend phase in force from each day (phaseAt)
	rawPhases map[int]int       // the best weekend found at each day (rawPhase)
	phaseFrom map[int]int       // the day each day's phase has been in force since, −1 from the start
	// tracks holds every expert that has been a candidate, with its forecasts as made.
	tracks map[string]*track
	// cands memoises candidates by period and whether two days, and a week, and a horizon are
	// known.
	cands map[[5]int][]*track
	// yw is the series with transient anomalies masked (transientMasked), which the weekly
	// baselines of the mix read.
	yw []float64
	// baselines are the seasonal-naive experts (newBaselines), also in tracks.
	baselines []*track
	// fallbacks are the forecasts the mix is judged against (fallbackAt): the baselines and the
	// floor fallback's median, also in tracks.
	fallbacks []*track
	floor     *floorModel
	periods   map[int]periodDecision  // by detection point
	mixes     map[int]*mixture        // by mix point, before the fallback
	falls     map[int]*track          // the fallback decided at each mix point, nil for none
	breaks    map[int]breakKind       // the level break found at each mix point (breakAt)
	noise     map[int]float64         // the forecasts' median relative error at each mix point (breakNoiseAt)
	breakSums pairSums                // following the breaks against the plain forecast (followsBreaks)
	scratch   []float64               // breakNoiseAt's errors
	pairs     map[[2]*track]*pairSums // a track's errors against a reference's (versus)
	mixSums   [][2]pairSums           // the mix's errors against each baseline's (versusMix)
	ens       *ensemble               // the last margin refit's
	// mixPred holds the mix's forecast for target T as made at T−h (before the fallback),
	// notYet until computed, NaN when it had none.
	mixPred forecastMemo
	// caps[o] bounds every expert's forecast from origin o (forecastOf): the cap the values up
	// to o show, or twice their maximum (ceilings).
	caps []float64
	rev  *revert // the reverting expert's model, nil until a candidate
	// evidence[o] is the largest error a target forecast from origin o counts for as evidence
	// (evidenceBounds).
	evidence []float64
}

// periodDecision is the period decided at a detection point and why it is not the detected one.
type periodDecision struct {
	period Period
	reason string
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
	h := max(1, s.Steps(opts.Horizon))
	refit := max(1, s.Steps(opts.RefitEvery))
	w := &Walker{
		s: s, opts: opts, h: h, refit: refit,
		redetect: max(1, s.Steps(max(opts.RefitEvery, Week))),
		mixEvery: gcd(refit, max(1, s.Steps(time.Hour))), stride: max(1, int(evidenceSpacing(opts.Horizon)/s.Step)),
		holt: newHolt(s.Values), models: map[Period]*seasonal{}, tracks: map[string]*track{},
		periods: map[int]periodDecision{}, mixes: map[int]*mixture{}, falls: map[int]*track{}, breaks: map[int]breakKind{},
		noise: map[int]float64{},
		cands: map[[5]int][]*track{},
		kinds: map[int]*seasonal{}, phases: map[int]int{}, rawPhases: map[int]int{}, phaseFrom: map[int]int{},
	}
	w.mixPred = newForecastMemo(0, s.Len()+h+1, w.stride)
	w.pairEvery = 1
	if w.mixEvery%w.stride == 0 && s.Steps(evalWindow)%w.mixEvery == 0 && s.Steps(longEvalWindow)%w.mixEvery == 0 {
		w.pairEvery = w.mixEvery / w.stride
	}
	w.yw = transientMasked(s)
	w.caps = ceilings(s.Values)
	w.evidence = evidenceBounds(s)
	for _, b := range newBaselines(s, h, w.yw) {
		w.baselines = append(w.baselines, w.track(b))
	}
	// The floor fallback (floor.go) is judged like the baselines, after them.
	w.floor = newFloorModel(s, w.stride, w.mixEvery, refit)
	w.fallbacks = append(append([]*track(nil), w.baselines...), w.track(expert{kind: floorExpert, floor: w.floor, h: h, name: FloorMedian, period: PeriodNone}))
	w.pairs, w.mixSums = map[[2]*track]*pairSums{}, make([][2]pairSums, len(w.fallbacks))
	for j := range w.mixSums {
		for kind := range w.mixSums[j] {
			// Every slot kept: a fallback's window may start where a weekend moved, h after a
			// day's start (fallbackAt).
			w.mixSums[j][kind] = pairSums{stride: w.stride, every: 1, size: (s.Len()+w.stride-1)/w.stride + 1}
		}
	}
	return w, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// floorTo is the latest point at or before o on a schedule of every k steps from 0, and ceilTo
// the first at or after o (o ≥ 0).
func floorTo(o, k int) int { return o - o%k }

func ceilTo(o, k int) int { return floorTo(o+k-1, k) }

// HorizonSteps returns the horizon in grid steps (the forecast for origin o is for o+HorizonSteps).
func (w *Walker) HorizonSteps() int { return w.h }

// At forecasts the value HorizonSteps after origin o from the values at indices ≤ o: the mix of
// experts weighed at the last mix point, or the baseline (or floor median) it fell back to
// there, or same time yesterday (breakFollower) when the load broke away from the forecasts
// (breakActs) and following its breaks has paid (followsBreaks), with the margin of the last refit.
func (w *Walker) At(o int) (Forecast, error) {
	if o < 0 || o >= w.s.Len() {
		return Forecast{}, fmt.Errorf("origin %d outside the series of %d points", o, w.s.Len())
	}
	fc := Forecast{Origin: w.s.TimeAt(o), Target: w.s.TimeAt(o + w.h)}
	pd := w.periodAt(o)
	T := o + w.h
	e := w.ensembleAt(floorTo(o, w.refit))
	u := floorTo(o, w.mixEvery)
	m := w.mixAt(u)
	fellBack, broke, unfollowed := "", false, false
	var fell *track    // the fallback forecasting alone, nil for none
	var shifted *track // the forecast a shift moved the mix towards, nil for none
	if b, _, ok := w.fallbackForecast(u, T); ok {
		m, fellBack, fell = alone(b), b.name, b
	}
	b := w.baselines[0] // newBaselines puts same time yesterday first
	switch w.breakActs(u, T) {
	case hardBreak:
		if !w.followsBreaks(u) {
			unfollowed = true
			break
		}
		m, fellBack, broke = alone(w.breakFollower(o, T, b)), "", true
	case softBreak:
		if pd.period != PeriodNone {
			shifted = w.breakFollower(o, T, b)
			m = m.towards(shifted, softBreakShare)
		}
	}
	if p, ok := m.predict(w, T); ok {
		lead := m.model()
		fc.Point, fc.Upper, fc.Model, fc.Period, fc.Fallback = p, e.upper(T, p), lead.name, lead.period, pd.reason
		fc.Shares = m.shares(w, T)
		switch {
		case broke:
			fc.Fallback = joinReasons(fc.Fallback, fmt.Sprintf("the load has been off every forecast by more than %.1f× for %.0f hours (a large rise: %.0f): a level break, followed by %s", 1+breakBand, breakWindow.Hours(), breakRiseWindow.Hours(), lead.name))
		case fellBack == FloorMedian:
			fc.Fallback = joinReasons(fc.Fallback, fmt.Sprintf("the load sits at its floor (most of the last week under %.0f %% of its mean), and the mix of experts did not beat that median over the last eight weeks", 100*floorSkew))
		case fellBack != "" && fell.kind == reshapedExpert:
			fc.Fallback = joinReasons(fc.Fallback, "the mix of experts did not beat "+w.baselines[0].name+" over the last eight weeks, and "+fellBack+" (same time yesterday re-shaped by the weekday/weekend profile) did")
		case fellBack != "":
			fc.Fallback = joinReasons(fc.Fallback, "the mix of experts did not beat "+fellBack+" over the last eight weeks")
		}
		if unfollowed {
			fc.Fallback = joinReasons(fc.Fallback, fmt.Sprintf("the load has been off every forecast by more than %.1f× for %.0f hours, but following its earlier breaks with same time yesterday lost to this forecast by more than its usual error: not followed", 1+breakBand, breakWindow.Hours()))
		}
		if shifted != nil {
			fc.Fallback = joinReasons(fc.Fallback, fmt.Sprintf("the load has been off every forecast the same way by more than %.0f %% for %.0f hours: a level shift, the forecast moved %.0f %% of the way to %s", 100*softBreakBand, breakWindow.Hours(), 100*softBreakShare, shifted.name))
		}
		return fc, nil
	}
	reason := pd.reason
	if pd.period != PeriodNone {
		reason = fmt.Sprintf("no value at this phase in the last %d %ss", w.opts.Cycles, pd.period)
	}
	p, up, ok := w.holt.predict(o, w.h, w.opts.Margin)
	if !ok {
		return Forecast{}, fmt.Errorf("forecasting from %s: %w", fc.Origin, ErrTooLittleHistory)
	}
	p = math.Min(p, w.caps[o]) // as every expert's (forecastOf)
	fc.Point, fc.Upper, fc.Model, fc.Period, fc.Fallback = p, up, "holt", PeriodNone, reason
	fc.Shares = []Share{{Model: "holt", Weight: 1}}
	return fc, nil
}

// joinReasons joins two fallback reasons with "; ", either may be empty.
func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// periodAt returns the period decided at the detection point of origin o: two days into the
// series (a daily cycle is testable from two), then every redetect interval after that; none
// before. Detection (or the forced period) sees the history known at that point only. Detecting
// at every refit of the first week as well cost the short crane traces' backtests twice their
// time, for the same figures on the tune set: every cycle's experts are candidates anyway.
func (w *Walker) periodAt(o int) periodDecision {
	d := 0
	if two := 2 * w.s.Steps(Day); o >= two {
		d = two + floorTo(o-two, w.redetect)
	}
	if pd, ok := w.periods[d]; ok {
		return pd
	}
	var pd periodDecision
	known := Series{Start: w.s.Start, Step: w.s.Step, Values: w.s.Values[:d+1]}
	p := w.opts.Period
	if p == PeriodAuto {
		win := known
		if lo := known.Len() - known.Steps(detectWindow); lo > 0 {
			win = Series{Start: known.TimeAt(lo), Step: known.Step, Values: known.Values[lo:]}
		}
		res := DetectPeriod(win)
		if p = res.Period; p == PeriodNone {
			pd.reason = "no daily or weekly cycle: " + res.Reason
		}
	}
	if p == PeriodWeek && observedSpan(known.Values) < 2*known.Steps(Week) {
		// Two weeks are needed to fit a weekly profile; a daily one still applies meanwhile.
		pd.reason, p = "less than two weeks of history for the weekly cycle; daily model", PeriodDay
	}
	if p != PeriodNone && p != PeriodAuto && observedSpan(known.Values) < 2*known.Steps(p.Duration()) {
		pd.reason = fmt.Sprintf("less than two %ss of history", p)
		p = PeriodNone
	}
	pd.period = p
	w.periods[d] = pd
	return pd
}

func (w *Walker) model(p Period) *seasonal {
	if m, ok := w.models[p]; ok {
		return m
	}
	m := newKindsSeasonal(w.s, p, w.h, w.opts.Cycles, nil, 0, w.weekSums())
	m.stride = w.stride
	w.models[p] = m
	return m
}

// weekSums returns the prefix sums every model's lastWeek reads, built on first use.
func (w *Walker) weekSums() *weekSums {
	if w.week == nil {
		w.week = newWeekSums(w.s.Values, wholePeriods(w.s.Steps(Week), w.h))
	}
	return w.week
}

// dayKinds returns the daily model whose profile takes weekdays for weekday targets and weekend
// days for weekend ones, in Options.Location, the weekend starting at hour phase of the week (0:
// Saturday 00:00; kinds.go), built on first use.
func (w *Walker) dayKinds(phase int) *seasonal {
	m, ok := w.kinds[phase]
	if !ok {
		m = newKindsSeasonal(w.s, PeriodDay, w.h, w.opts.Cycles, w.opts.Location, phase, w.weekSums())
		m.stride = w.stride
		w.kinds[phase] = m
	}
	return m
}

// phaseAt returns the weekend phase (kinds.go) in force at o, decided at each day boundary on the
// values up to it: the one in force the day before while it still holds (weekendHolds), else the
// best weekend of the weeks (bestPhase) when the day before found it too, within two hours (a
// weekend read once may be chance), else the calendar's.
func (w *Walker) phaseAt(o int) int {
	day := max(1, w.s.Steps(phaseEvery))
	d := floorTo(o, day)
	if p, ok := w.phases[d]; ok {
		return p
	}
	// Decide the days in order from the last one decided: each reads the one before it.
	first := d
	for first >= day {
		if _, ok := w.phases[first-day]; ok {
			break
		}
		first -= day
	}
	for e := first; e <= d; e += day {
		prev := 0
		if e >= day {
			prev = w.phases[e-day]
		}
		means := weekMeans(w.s, w.opts.Location, e)
		p := 0
		switch {
		case means == nil:
		case prev != 0 && weekendHolds(means, prev):
			p = prev
		default:
			p = bestPhase(means)
			w.rawPhases[e] = p
			if p != 0 {
				if e < day || !near(w.rawPhase(e-day), p) {
					p = 0
				}
			}
		}
		w.phases[e] = p
		switch {
		case e < day:
			w.phaseFrom[e] = -1
		case p != prev:
			w.phaseFrom[e] = e
		default:
			w.phaseFrom[e] = w.phaseFrom[e-day]
		}
	}
	return w.phases[d]
}

// weekendAt returns the weekend phase the weekday/weekend experts use at o: phaseAt on a load
// with a daily or weekly cycle, the calendar's (0) on one without, where a weekend read from the
// load is noise.
func (w *Walker) weekendAt(o int) int {
	if p := w.periodAt(o).period; p != PeriodDay && p != PeriodWeek {
		return 0
	}
	return w.phaseAt(o)
}

// weekendSince returns the day boundary from which the weekend in use at o (weekendAt) has been
// in force, −1 when it has been since the start or the calendar's is used.
func (w *Walker) weekendSince(o int) int {
	if p := w.periodAt(o).period; p != PeriodDay && p != PeriodWeek {
		return -1
	}
	w.phaseAt(o)
	return w.phaseFrom[floorTo(o, max(1, w.s.Steps(phaseEvery)))]
}

// rawPhase is bestPhase on the weeks up to index d, memoised.
func (w *Walker) rawPhase(d int) int {
	if p, ok := w.rawPhases[d]; ok {
		return p
	}
	p := 0
	if means := weekMeans(w.s, w.opts.Location, d); means != nil {
		p = bestPhase(means)
	}
	w.rawPhases[d] = p
	return p
}

// near tells whether two weekend phases, both found, are within two hours of each other.
func near(a, b int) bool {
	if a == 0 || b == 0 {
		return false
	}
	dist := (a - b + hoursInWeek) % hoursInWeek
	return dist <= 2 || dist >= hoursInWeek-2
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
