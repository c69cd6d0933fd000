package forecast

import "math"

// evalWindow is how far back the candidate models' forecasts are scored: a week holds every day
// of the week once, so a model that misses weekends cannot hide behind five good weekdays.
const evalWindow = Week

// expert is one candidate forecaster: a profile stack with fitted weights, or its profile alone.
type expert struct {
	m       *seasonal
	profile bool
}

// profileOnly weighs the profile alone: the median of the same phase in the last cycles.
var profileOnly = weights{1}

// weightsAt returns the expert's weights as fitted at origin o (the prior before any data).
func (e expert) weightsAt(o, window int) weights {
	switch {
	case e.profile:
		return profileOnly
	case o < 0:
		return priorWeights
	}
	return e.m.weightsAt(o, window)
}

// name is the model name forecasts carry: "seasonal/" or "profile/" followed by "day", "week"
// or "weekday-weekend".
func (e expert) name() string {
	p := e.m.period.String()
	if e.m.weekend != nil {
		p = "weekday-weekend"
	}
	if e.profile {
		return "profile/" + p
	}
	return "seasonal/" + p
}

// ensemble is what a refit decides: the experts, how much each counts, and the margin.
type ensemble struct {
	at      int // the refit origin
	experts []expert
	w       []weights // each expert's weights at the refit
	mix     []float64 // combination weights, summing to 1
	q       float64   // margin quantile of relative errors over all bins
	bins    phaseBins
	qBin    []float64 // margin quantile per time-of-day bin
	ceiling float64   // the saturation level the margin does not size past, +Inf when none
}

// candidates returns the experts that may forecast at o, the detected period's stack first. A
// week of history is enough to forecast from the same time last week, though not to confirm a
// weekly cycle (that takes two), so while the cycle is daily or unconfirmed the weekly and the
// weekday/weekend stacks and profiles join as rivals once a week and a horizon of history
// exist — unless Options.Period forces the day.
func (w *Walker) candidates(o int) []expert {
	c := []expert{{m: w.model(w.period)}}
	if w.period == PeriodDay && w.opts.Period != PeriodDay && observedSpan(w.s.Values[:o+1]) >= w.s.Steps(Week)+w.h {
		wk := w.model(PeriodWeek)
		c = append(c, expert{m: wk}, expert{m: wk, profile: true})
		dk := w.dayKinds()
		c = append(c, expert{m: dk}, expert{m: dk, profile: true})
	}
	return c
}

// refitAt fits every candidate at origin o and weighs them by their out-of-sample absolute error over the last evalWindow of targets that all of them forecast (mixWeights).
func (w *Walker) refitAt(o int) ensemble {
	window := w.s.Steps(fitWindow)
	e := ensemble{at: o, experts: w.candidates(o), bins: newPhaseBins(w.s)}
	for _, x := range e.experts {
		e.w = append(e.w, x.weightsAt(o, window))
	}
	e.mix = w.mixWeights(o, e.experts)
	e.marginQuantiles(w.s.Values, window, w.opts.Margin)
	e.ceiling = ceiling(w.s.Values[max(0, o-window+1) : o+1])
	return e
}

// mixSharpness is the power the experts' inverse errors are raised to: an expert 10 % worse than
// the best gets 0.47× its weight, 25 % worse 0.17×. Plain inverse errors (power 1) still gave an
// expert twice as bad a third of the weight, which on crane's input2 mixed the daily stack's
// weekend misses into every forecast (1-day WAPE 0.154 against 0.144 with power 8).
const mixSharpness = 8

// mixWeights returns the combination weights of the experts at origin o: (1/MAEᵢ)^mixSharpness
// normalised, where MAEᵢ is expert i's mean absolute error over the targets of the last evalWindow, each
// forecast as the walker would have made it (pastForecasts). Weighing by inverse error rather
// than picking the best keeps a rival in play when the evidence is a few days old, which is all
// there is before a second week confirms or refutes a weekly cycle. With one expert, or less
// than a day of common targets, the detected model stands alone.
func (w *Walker) mixWeights(o int, experts []expert) []float64 {
	mix := make([]float64, len(experts))
	mix[0] = 1
	if len(experts) == 1 {
		return mix
	}
	errs := make([]float64, len(experts))
	n := 0
	row := make([]float64, len(experts))
	for T := max(0, o-w.s.Steps(evalWindow)+1); T <= o; T++ {
		if math.IsNaN(w.s.Values[T]) || !w.pastForecasts(experts, o, T, row) {
			continue
		}
		for i, f := range row {
			errs[i] += math.Abs(w.s.Values[T] - f)
		}
		n++
	}
	if n < w.s.Steps(Day) {
		return mix
	}
	best := math.Inf(1)
	for _, e := range errs {
		best = math.Min(best, math.Max(e, 1e-12))
	}
	sum := 0.0
	for i, e := range errs {
		mix[i] = math.Pow(best/math.Max(e, 1e-12), mixSharpness)
		sum += mix[i]
	}
	for i := range mix {
		mix[i] /= sum
	}
	return mix
}

// pastForecasts fills row with each expert's forecast for target T ≤ o from origin T−h, with the
// weights of the latest refit at or before that origin on the schedule o, o−refit, o−2·refit, …;
// false when one of them has none.
func (w *Walker) pastForecasts(experts []expert, o, T int, row []float64) bool {
	ot := T - w.h
	if ot < 0 {
		return false
	}
	g := o - (o-ot+w.refit-1)/w.refit*w.refit
	for i, x := range experts {
		f, ok := x.m.predict(T, x.weightsAt(g, w.s.Steps(fitWindow)))
		if !ok {
			return false
		}
		row[i] = f
	}
	return true
}

// predict combines the experts' forecasts for target T. With all false it renormalises the
// weights over the experts that have one (a gap a week back leaves the weekly rivals without a
// value, not the daily model) and ok is false when none has; with all true, ok is false unless
// every expert has one.
func (e ensemble) predict(T int, all bool) (float64, bool) {
	var sum, weight float64
	for i, x := range e.experts {
		if e.mix[i] == 0 {
			continue
		}
		f, ok := x.m.predict(T, e.w[i])
		if !ok && all {
			return 0, false
		}
		if ok {
			sum += e.mix[i] * f
			weight += e.mix[i]
		}
	}
	if weight == 0 {
		return 0, false
	}
	return sum / weight, true
}

// model names the expert with the largest combination weight.
func (e ensemble) model() expert {
	best := 0
	for i, m := range e.mix {
		if m > e.mix[best] {
			best = i
		}
	}
	return e.experts[best]
}
