package forecast

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// evalWindow is how far back the experts' forecasts count twice when they are weighed, and must
// hold a day of an expert's forecasts for it to be weighed at all: a week holds every day of the
// week once, so an expert that misses weekends cannot hide behind five good weekdays, and the
// errors of a regime older than a week (the level before a shift, a holiday, a missing day)
// count half as much after a week and not at all after longEvalWindow.
const evalWindow = Week

// longEvalWindow is the longer memory the experts are also weighed on: each one's errors over the
// last evalWindow are added to its errors over the last four weeks, so the last week counts
// twice and the three before it once. A week of hourly errors is a small sample: between experts
// that are equally good on average (the stacks and profiles and the four-week mean on a steady
// weekly load) it picks a different leader every week, and the mix pays for following each
// one. With four weeks behind it the weights settle while a regime change still moves them in
// the first week. On the tune set (the 1-day hourly backtest of TestGeneralisation), over the
// weekday/weekend profile of every day of the kind, the median ratio to the best baseline went
// from 0.878 to 0.881, the series above 1.0 from two to one (outage-1 1.034 → 1.000) and the
// worst from 1.034 to 1.011 (migration-2), the geometric mean of the ratios from 0.847 to 0.845;
// a longer memory is slower after a level shift (shift-3 0.690 → 0.723, holiday-1 0.787 →
// 0.844). Two weeks instead of four gave a median of 0.876 and a worst of 1.016 with two series
// above 1.0; weighing the mixes of one and of four weeks by their own recent errors, 0.875 and
// 1.013 with three, for twice the bookkeeping.
const longEvalWindow = 4 * Week

// fallbackWindow is how far back the mix and the baselines are compared to decide the fallback
// (fallbackAt): the eight weeks the models are fitted on. A week was tried (on the tune set: the
// crane and NYC traces and the tune seeds of forecast/synth) and locked in a baseline for a week
// whenever one event made the mix trail it for a day or two — after an outage, "same time last
// week" led for the week in which it then repeated the outage; eight weeks let such an event
// count for what it is, one day among many (tune-set 1-day WAPE ratio over 1.0 on six series
// with a week, on three with eight weeks).
const fallbackWindow = fitWindow

// mixSharpness is the power the experts' inverse errors are raised to: an expert 10 % worse than
// the best gets 0.47× its weight, 25 % worse 0.17×. Plain inverse errors (power 1) still gave an
// expert twice as bad a third of the weight, which on crane's input2 mixed the daily stack's
// weekend misses into every forecast (1-day WAPE 0.154 against 0.144 with power 8). Powers of 4
// to 12 give the same tune-set figures within 0.01 of the median ratio.
const mixSharpness = 8

// priorDays is the evidence every candidate's error ratio starts from: a day's worth of the
// reference's error at a ratio of 1. Without it an expert that joins late — the weekly ones
// after a week of history — and is lucky on its first day takes the whole mix from experts
// judged on a week (synthetic batch-3 of the tune set: ratio 1.06 without, 0.99 with).
const priorDays = 1

// evidenceStep is the least spacing of the targets scored as evidence (weights, fallback,
// margin) and of the rows the fits read (the stacks' weights, the levelled expert's share, the
// reverting expert's φ) on grids finer than it: one-minute errors five minutes apart say nearly
// the same, and scoring every fifth keeps a backtest of one-minute data as fast as one of
// five-minute data. At longer horizons the spacing is a quarter of the horizon, up to
// maxEvidenceStep (evidenceSpacing): forecasts for targets a quarter of the horizon apart are made
// from origins that far apart, over horizons that overlap by three quarters, and err alike.
//
// Measured on the crane traces (one-minute samples; forecast/backtest's BenchmarkBacktest and
// BenchmarkReplay, WAPE ratio to the best baseline, against every fifth minute for the evidence
// and every minute for the fits): an hour ahead input0 0.7577 → 0.7591, input1 0.8419 → 0.8402,
// input2 0.9089 → 0.9075 (a sixth of the horizon, 10 minutes: 0.7542, 0.8414, 0.9096); 15
// minutes ahead, where only the fits' rows change, 0.6516 → 0.6521, 0.7022 → 0.7024, 0.8942 →
// 0.8940; the replays (five-minute means) unchanged. Every 15 minutes at 15 minutes ahead, tried
// too, cost input2 0.894 → 0.944: errors a whole horizon apart do not say the same.
const (
	evidenceStep    = 5 * time.Minute
	maxEvidenceStep = 15 * time.Minute
)

// evidenceSpacing is the spacing of the evidence and of the fits' rows at horizon h
// (evidenceStep).
func evidenceSpacing(h time.Duration) time.Duration {
	return max(evidenceStep, min(h/4, maxEvidenceStep))
}

// minShare is the smallest combination weight kept: a smaller one changes a forecast by less
// than 0.1 % but would cost its expert's forecast at every target.
const minShare = 1e-3

// expertKind says how an expert forecasts.
type expertKind int8

const (
	stackExpert    expertKind = iota // a profile stack with fitted weights
	profileExpert                    // its profile alone: the robust mean of the same phase in the last cycles
	baselineExpert                   // a seasonal-naive baseline: the mean of y(T−lag) over its lags
	holtExpert                       // Holt's damped trend, for no cycle at all
	levelExpert                      // its profile moved a fitted share of the way to the last day's level against it
	revertExpert                     // the recent level drawn back towards the usual one, for no cycle (revert.go)
	floorExpert                      // the median of the last week, a fallback for a load at its floor (floor.go)
	reshapedExpert                   // same time yesterday re-shaped by the profile, which follows a level break (break.go)
	smoothExpert                     // the weekday/weekend profile smoothed over the hour either side
)

// Names of the baseline experts: the seasonal-naive forecasts a backtest scores the forecaster
// against (forecast/backtest uses the same names), so that on any series the mix can fall back
// to the best of them.
const (
	// BaselineNaiveDay repeats the value one day (or the first whole number of days ≥ the
	// horizon) before the target.
	BaselineNaiveDay = "seasonalNaiveDay"
	// BaselineNaiveWeek repeats the value one week (or the first whole number of weeks ≥ the
	// horizon) before the target.
	BaselineNaiveWeek = "seasonalNaiveWeek"
	// BaselineMeanWeeks averages the same time of week 1–4 weeks before the target (as many as
	// were observed).
	BaselineMeanWeeks = "seasonalMean1to4Weeks"
)

// expert is one candidate forecaster.
type expert struct {
	kind   expertKind
	m      *seasonal // stack and profile experts
	lags   []int     // baseline experts: whole days or weeks, each at least the horizon
	y      []float64 // baseline experts read the series
	holt   *holt     // the Holt expert
	h      int
	name   string // the Model forecasts carry, see Forecast.Model
	period Period // the cycle it repeats, PeriodNone for Holt
	// trended marks the trended expert: a levelled one whose profile is carried forward by the
	// load's growth (seasonal.growthAt).
	trended bool
	rev     *revert     // the reverting expert's model
	floor   *floorModel // the floor fallback's
}

// profileOnly weighs the profile alone: the robust mean of the same phase in the last cycles
// (seasonal.centre).
var profileOnly = weights{1}

// The levelled expert moves the profile towards the level of the last day against it:
// p·(1 + β·(r₂₄ − 1)), r₂₄ being the last day's level against it (dayLevel: the median of its
// hourly ratios Σy/Σp, each hour weighed by its Σp, over the 24 hours before the origin). A
// day's level persists into the next (weather and events move a day's load, and the next day's
// too: synthetic noise has ρ = 0.6 a day, calibrated on NYC taxi), and the oracle that knows the
// generator's noise state gains up to 0.09 of the ratio from it (forecast/synth,
// TestOracleFloor). The stacks hold a like predictor (the profile scaled by the day's ratio
// Σy/Σp), but their ridge keeps them near a prior that also weighs the noisy one- and six-hour
// ratios and same time yesterday. β is fitted at every refit on the targets known then
// (seasonal.levelAt); levelShare is β until a day of them is known.
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation), as an expert of the
// weekday/weekend model only, when a cycle is detected. A fixed β of 0.3, 0.5 and 0.7 took the
// median from 0.881 to 0.872, 0.873 and 0.874 and the mean from 0.851 to 0.850, 0.849 and 0.848,
// and 0.7 took outage-1 above 1.0 (1.010). A fitted β kept the median at 0.873 and took the mean
// to 0.845 and the series nearest 1.0 away from it (outage-1 0.996 at β = 0.5 → 0.931, drift-2
// 1.000 → 0.977, batch-3 0.972 → 0.947): after an outage the last day's level says little of
// the next day's, and the fit learns how much it says on each series. Shrinking the fit towards
// 0.5 by 3, 7 or 14 days' worth of evidence gave means of 0.845–0.847 at the same median; waiting
// for a week of targets before fitting took outage-1 back to 0.983. With no cycle detected the
// expert made drift-1 1.045 (at β = 0.5), so it is then no candidate; nor at horizons under
// levelHorizon.
const levelShare = 0.5

// levelHorizon is the shortest horizon the levelled expert forecasts at. Nearer the origin the
// stacks' one- and six-hour ratios and their persistence terms carry the level, and the expert
// only unsettled the mix: crane's input0 an hour ahead went from 0.772 to 0.885 of its best
// baseline, 15 minutes ahead from 0.652 to 0.730 (the real tune traces' table of the README).
const levelHorizon = 12 * time.Hour

// levelWeights are the levelled expert's weights until β is fitted: the profile (predictor 0 of
// the stack) and, in slot 2, the profile scaled by the last day's level (dayLevel), at levelShare.
var levelWeights = weights{1 - levelShare, 0, levelShare}

// stack and profile return the experts of model m: "seasonal/" or "profile/" followed by "day",
// "week" or "weekday-weekend".
func stack(m *seasonal) expert {
	return expert{kind: stackExpert, m: m, name: "seasonal/" + m.label(), period: m.period}
}

func profile(m *seasonal) expert {
	return expert{kind: profileExpert, m: m, name: "profile/" + m.label(), period: m.period}
}

// smoothed returns the smoothed expert of model m, "smoothed/" and its label: its profile
// smoothed over the hour either side (seasonal.smoothProfile). The weekday/weekend profile of a
// load with one or two weeks of history pools only five or ten weekdays and two or four weekend
// days, and one of six weeks twelve weekend days: each hour's mean keeps much of its days'
// noise, and on a smooth daily shape the hours either side say nearly the same. On a batch
// load the hours either side of a job's start or end do not, and smoothing smears its edges
// (on the synthetic batch series of the tune set, the smoothed profile alone errs two to four
// times as much as the profile on weekdays), so it is one more expert, weighed by the mix, not
// the profile itself. With the levelled experts, at horizons of levelHorizon or more (the
// 15-minute and 1-hour walks and the replays are unchanged: walk.golden), on series sampled
// hourly or finer: on a coarser grid the steps either side are no longer the hour either side.
func smoothed(m *seasonal) expert {
	return expert{kind: smoothExpert, m: m, name: "smoothed/" + m.label(), period: m.period}
}

// level returns the levelled expert of model m: "levelled/" followed by the cycle's name.
func level(m *seasonal) expert {
	return expert{kind: levelExpert, m: m, name: "levelled/" + m.label(), period: m.period}
}

// trended returns the trended expert of model m, "trended/" and its label: the levelled expert
// with its profile carried forward by the load's growth over the profile's mean age,
// p·e^(g·age) (seasonal.growthAt), then moved a fitted share β towards the last day's level:
// (1−β)·p·e^(g·age) + β·p·r₂₄. The levelled expert reverts to the profile, three weeks old on
// average; on a growing load that is a level the load has left. A candidate beside the levelled
// expert when it is, once growthMinDays days are known: before, it would be the levelled expert
// again, and two copies of one expert weigh it twice (which, kept, gave tune a median of 0.859
// with 28 days, as if the levelled expert deserved twice its weight on short histories: a
// question for the mix, not a reason for a copy).
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation), against the
// forecaster without it (median ratio 0.865, mean 0.8401): median 0.858, mean 0.8363, worst
// 1.000; 7 series better by more than 0.005 (outage-2 0.826 → 0.779, trend-3 −0.033, gaps-3
// −0.021), 2 worse (batch-3 +0.014, shift-3 +0.006). Growth read once 10, 21, 28 or 35 days
// are known (growthMinDays; 14 kept): medians 0.855, 0.863, 0.861 and 0.868, means 0.8370,
// 0.8369, 0.8376 and 0.8389. Replacing the levelled expert instead of joining it (28 days):
// median 0.858, mean 0.8381, web-1, web-2 and gaps-1 worse by 0.007–0.013. Slopes between every
// pair of days, not only days a whole number of weeks apart, read outage-1's weekends as a
// growth of −3.5 % a week on a load that does not grow.
func trended(m *seasonal) expert {
	return expert{kind: levelExpert, m: m, name: "trended/" + m.label(), period: m.period, trended: true}
}

// label names a seasonal model's cycle.
func (m *seasonal) label() string {
	if m.weekend != nil && m.phase != 0 {
		return "weekday-weekend from " + phaseLabel(m.phase)
	}
	if m.weekend != nil {
		return "weekday-weekend"
	}
	return m.period.String()
}

// weightsAt returns the expert's weights as fitted at origin o (the prior before any data); only
// stacks and levelled experts have fitted weights.
func (e *expert) weightsAt(o, window int) weights {
	switch {
	case e.kind == levelExpert:
		if o < 0 {
			return levelWeights
		}
		return e.m.levelAt(o, window, e.trended)
	case e.kind == revertExpert:
		if o < 0 {
			return weights{revertPrior}
		}
		return weights{e.rev.phiAt(o, window)}
	case e.kind != stackExpert:
		return weights{}
	case o < 0:
		return priorWeights
	}
	return e.m.weightsAt(o, window)
}

// predict returns the expert's forecast for target T (from origin T−h), a stack with weights w.
func (e *expert) predict(T int, w weights) (float64, bool) {
	switch e.kind {
	case stackExpert:
		return e.m.predict(T, w)
	case profileExpert:
		return e.m.predict(T, profileOnly)
	case reshapedExpert:
		return e.m.predict(T, reshapedOnly)
	case smoothExpert:
		return e.m.smoothProfile(T)
	case levelExpert:
		return e.m.levelPredict(T, w)
	case revertExpert:
		return e.rev.predict(T, w[0])
	case floorExpert:
		return e.floor.predict(T, e.h)
	case baselineExpert:
		sum, n := 0.0, 0
		for _, l := range e.lags {
			if i := T - l; i >= 0 && i < len(e.y) && !math.IsNaN(e.y[i]) {
				sum += e.y[i]
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	default:
		return e.holt.point(T-e.h, e.h)
	}
}

// firstTarget is a target before which the expert has no forecast: a seasonal model's base (no
// profile before it), a baseline's shortest lag.
func (e *expert) firstTarget() int {
	switch {
	case e.m != nil:
		return e.m.base
	case e.kind == baselineExpert:
		return slices.Min(e.lags)
	}
	return 0
}

// notYet marks a forecast not computed yet in a track (NaN means there is none).
var notYet = math.Inf(-1)

// track is an expert with its forecasts as made: pred holds its forecast for target T from
// origin T−h, a stack's with the weights of the refit point at or before T−h.
type track struct {
	expert
	pred forecastMemo // from the first target it can forecast (firstTarget)
	// wAt and w are the refit point of the last weights forecastOf used and those weights (wAt
	// −1 before any): targets mostly advance, so they are mostly the next target's too.
	wAt int
	w   weights
}

// track returns the walker's track of expert e, creating it on first use.
func (w *Walker) track(e expert) *track {
	if t, ok := w.tracks[e.name]; ok {
		return t
	}
	base := min(e.firstTarget(), w.s.Len()+w.h+1)
	t := &track{expert: e, pred: newForecastMemo(base, w.s.Len()+w.h+1, w.stride), wAt: -1}
	w.tracks[e.name] = t
	return t
}

// forecastOf returns t's forecast for target T as made at origin T−h, memoised.
func (w *Walker) forecastOf(t *track, T int) (float64, bool) {
	memo := t.pred.at(T)
	if T-w.h < 0 || memo == nil {
		return 0, false
	}
	if f := *memo; f != notYet {
		return f, !math.IsNaN(f)
	}
	if g := floorTo(T-w.h, w.refit); g != t.wAt {
		t.wAt, t.w = g, t.weightsAt(g, w.s.Steps(fitWindow))
	}
	f, ok := t.predict(T, t.w)
	if !ok {
		f = math.NaN()
	} else if c := w.caps[min(T-w.h, len(w.caps)-1)]; f > c {
		f = c
	}
	*memo = f // nothing above asks t for another target, so the slot is still T's
	return f, ok
}

// mixture is a combination of experts as weighed at one mix point.
type mixture struct {
	tracks []*track
	mix    []float64 // combination weights, summing to 1
	// informed says the weights come from the evidence: a day or more of scored forecasts from
	// at least two experts. An uninformed mixture is the detected model alone.
	informed bool
	// order lists the experts by decreasing weight (shares), nil until first needed.
	order []int
}

// ensemble is what a refit decides besides the weights: the margin the upper forecast adds.
type ensemble struct {
	at      int // the refit point
	q       float64
	bins    phaseBins
	qBin    []float64 // margin quantile per time-of-day bin
	ceiling float64   // the saturation level the margin does not size past, +Inf when none
}

// candidates returns the experts that may forecast at o, the detected period's model first (it
// forecasts alone while the evidence is too thin to weigh: mixAt), memoised:
//
//   - A detected daily or weekly cycle: its stack and profile, then as rivals the stacks and
//     profiles of the other cycles — the weekly ones (a week of history already allows a forecast
//     from the same time last week, though two are needed to confirm a weekly cycle) and the
//     weekday/weekend ones (which know the weekend from its first one, and bring their
//     levelled expert: levelShare) — and Holt. On 16-day
//     synthetic series whose first scored day is a Saturday, the rivals that know the weekend
//     carry it (1-day WAPE ratio 0.82–0.89 against 1.54–1.95 with the rivals held back until
//     a week and a horizon are known). Options.Period forcing a cycle leaves its stack, its
//     profile and Holt.
//   - No cycle found: Holt leads, and once two days and a horizon are known all the stacks and
//     profiles are rivals, and the reverting expert (revert.go): a cycle too weak to pass the
//     test can still carry a forecast, and if it does not, the rivals lose weight.
//
// The seasonal-naive baselines are candidates whatever the period: the weights and the fallback
// to the best baseline are what keeps the forecaster from losing to them. A candidate takes part
// once it has a day of forecasts to be judged on (mixAt).
func (w *Walker) candidates(o int) []*track {
	period := w.periodAt(o).period
	span := observedSpan(w.s.Values[:o+1])
	twoDays, weekKnown := 0, 0
	if span >= 2*w.s.Steps(Day)+w.h {
		twoDays = 1
	}
	if span >= w.s.Steps(Week)+w.h {
		weekKnown = 1 // before, the weekly experts have no forecast to be judged on
	}
	growthKnown := 0
	if span >= w.s.Steps(growthMinDays*Day)+w.h {
		growthKnown = 1 // before, the trended expert would be the levelled one again
	}
	phase := w.weekendAt(o)
	key := [5]int{int(period), twoDays, weekKnown, growthKnown, phase}
	if c, ok := w.cands[key]; ok {
		return c
	}
	d, dk := w.model(PeriodDay), w.dayKinds(phase)
	weekly := func() []expert {
		if weekKnown == 0 {
			return nil
		}
		wk := w.model(PeriodWeek)
		return []expert{stack(wk), profile(wk)}
	}
	levelled := func(m *seasonal) []expert {
		if w.h < w.s.Steps(levelHorizon) {
			return nil
		}
		var out []expert
		if w.s.Step <= time.Hour {
			out = append(out, smoothed(m))
		}
		if out = append(out, level(m)); growthKnown == 1 {
			out = append(out, trended(m))
		}
		return out
	}
	var c []expert
	switch {
	case period == PeriodDay && w.opts.Period == PeriodDay:
		c = []expert{stack(d), profile(d), w.holtExpert()}
	case period == PeriodWeek && w.opts.Period == PeriodWeek:
		wk := w.model(PeriodWeek)
		c = []expert{stack(wk), profile(wk), w.holtExpert()}
	case period == PeriodDay:
		c = append([]expert{stack(d), profile(d)}, weekly()...)
		c = append(append(c, stack(dk), profile(dk)), levelled(dk)...)
		c = append(c, w.holtExpert())
	case period == PeriodWeek:
		wk := w.model(PeriodWeek)
		c = append([]expert{stack(wk), profile(wk), stack(d), profile(d), stack(dk), profile(dk)}, levelled(dk)...)
		c = append(c, w.holtExpert())
	case twoDays == 1:
		c = append(append([]expert{w.holtExpert(), stack(d), profile(d)}, weekly()...), stack(dk), profile(dk))
		c = append(c, w.revertExpert())
	default:
		c = []expert{w.holtExpert()}
	}
	out := make([]*track, 0, len(c)+len(w.baselines))
	for _, e := range c {
		out = append(out, w.track(e))
	}
	out = append(out, w.baselines...)
	w.cands[key] = out
	return out
}

// revertExpert returns the reverting expert, "reverting" (revert.go), building its model on
// first use.
func (w *Walker) revertExpert() expert {
	if w.rev == nil {
		w.rev = newRevert(w.s, w.h, w.stride)
	}
	return expert{kind: revertExpert, rev: w.rev, h: w.h, name: "reverting", period: PeriodNone}
}

func (w *Walker) holtExpert() expert {
	return expert{kind: holtExpert, holt: w.holt, h: w.h, name: "holt", period: PeriodNone}
}

// newBaselines returns the seasonal-naive experts for a horizon of h steps; the weekly ones read
// yw, the series with transient anomalies masked (transientMasked).
func newBaselines(s Series, h int, yw []float64) []expert {
	day, week := s.Steps(Day), s.Steps(Week)
	dayShift, weekShift := wholePeriods(day, h), wholePeriods(week, h)
	if weekShift-h < s.Steps(transientLookahead) {
		yw = s.Values // the mask of the points read would look past the origin
	}
	return []expert{
		{kind: baselineExpert, y: s.Values, h: h, lags: []int{dayShift}, name: "baseline/" + BaselineNaiveDay, period: PeriodDay},
		{kind: baselineExpert, y: yw, h: h, lags: []int{weekShift}, name: "baseline/" + BaselineNaiveWeek, period: PeriodWeek},
		{kind: baselineExpert, y: yw, h: h, lags: []int{weekShift, weekShift + week, weekShift + 2*week, weekShift + 3*week},
			name: "baseline/" + BaselineMeanWeeks, period: PeriodWeek},
	}
}

// evidenceCap bounds each target's error as evidence — in the weights (mixAt) and the fallback
// (fallbackAt) — at this multiple of the load's mean over the week before the target's origin
// (evidenceBound). One five-minute spike of 300 times the load makes every expert's error at
// that hour as large as all their other errors of the week together, and same time yesterday,
// which repeats it a day later, twice that: the evidence then says nothing of which expert
// follows the load. On NAB's ec2_network_in_257a54 (tune/nab) such a spike came the day its
// load fell to a quarter for good; the mix kept the profiles, three days behind the fall, and
// was 4.4 times as far off as same time yesterday. An error of six times the load's mean is
// all the evidence one target gives: any expert that far off at a target is as wrong as one
// further off. The reported scores (forecast/backtest) are not capped. Chosen on tune, where
// the other 37 series moved by no more than 0.005 with a cap of 4, 5, 6, 8 or 10: 257a54 1.000
// with all but 10 (1.068); ec2_disk_write_bytes_c0d644 1.241, 1.257, 1.081 (6, kept), 1.111
// and 1.106.
const evidenceCap = 6

// evidenceBounds returns, for every origin o of s, the largest error a target forecast from o
// counts for as evidence: evidenceCap times the mean of |y| over the week ending at o, +Inf
// while none is known. Once per walk: every pair of tracks scores every target against it.
func evidenceBounds(s Series) []float64 {
	sums, counts := observedSums(s.Values, true)
	week := s.Steps(Week)
	out := make([]float64, s.Len())
	for o := range out {
		lo := max(0, o+1-week)
		out[o] = math.Inf(1)
		if n := counts[o+1] - counts[lo]; n > 0 {
			out[o] = evidenceCap * (sums[o+1] - sums[lo]) / float64(n)
		}
	}
	return out
}

// evidenceBound is the largest error target T counts for as evidence (evidenceBounds of its
// origin).
func (w *Walker) evidenceBound(T int) float64 {
	if T-w.h < 0 {
		return math.Inf(1)
	}
	return w.evidence[min(T-w.h, len(w.evidence)-1)]
}

// pairSums holds prefix sums over the scored targets (observed, on the evidence stride, and
// forecast by both tracks) of one track's absolute errors and a reference's, over the slots
// (targets k·stride) before slot 0 and after every every-th slot. The mixes of a walk each weigh
// the candidates over a window that slides an hour at a time; prefix sums make that a
// subtraction instead of a pass over the week. The windows run from one mix point to another,
// so the versus sums need only be kept at mix points (Walker.pairEvery): a twelfth of the slots
// of one-minute or five-minute data, whose sums took a fifth of a walk's memory and, touched
// fresh, a tenth of its time.
type pairSums struct {
	stride, every int
	size          int // slots in the series, the capacity the sums are made with
	// self says the reference is the track itself: both errors are the same, and eb is not kept.
	self bool
	// next is the first slot not yet added, and rn, ra and rb the sums over the slots before it.
	next   int
	rn     int32
	ra, rb float64
	n      []int32 // counts: fewer than 2³¹ (a series that long would take 16 GiB)
	ea, eb []float64
}

// extend grows the sums to cover the targets up to u, with err(T) giving the two errors of
// target T (a multiple of the stride) and whether it counts.
func (p *pairSums) extend(u int, err func(T int) (float64, float64, bool)) {
	if p.n == nil {
		// Room for the whole series at once: the sums of a walk grow to its end.
		size := p.size/p.every + 2
		p.n, p.ea = make([]int32, 1, size), make([]float64, 1, size)
		if !p.self {
			p.eb = make([]float64, 1, size)
		}
	}
	// Appended to locals and stored once: storing the slices into p at every slot cost a write
	// barrier each while the collector ran.
	ns, as, bs := p.n, p.ea, p.eb
	n, a, b := p.rn, p.ra, p.rb
	k := p.next
	for ; k*p.stride <= u; k++ {
		if ea, eb, ok := err(k * p.stride); ok {
			n, a, b = n+1, a+ea, b+eb
		}
		if k%p.every == 0 {
			ns, as = append(ns, n), append(as, a)
			if !p.self {
				bs = append(bs, b)
			}
		}
	}
	p.next, p.rn, p.ra, p.rb = k, n, a, b
	p.n, p.ea, p.eb = ns, as, bs
}

// entry is the index of the sums over the slots before slot x, which must be kept.
func (p *pairSums) entry(x int) int {
	if x == 0 {
		return 0
	}
	if (x-1)%p.every != 0 {
		panic(fmt.Sprintf("forecast: evidence sums asked before slot %d, between those kept every %d slots", x, p.every))
	}
	return (x-1)/p.every + 1
}

// over returns the count and the two error sums over the scored targets of [from, to].
func (p *pairSums) over(from, to int) (int, float64, float64) {
	lo, hi := p.entry((max(0, from)+p.stride-1)/p.stride), p.entry(to/p.stride+1)
	if p.self {
		return int(p.n[hi] - p.n[lo]), p.ea[hi] - p.ea[lo], p.ea[hi] - p.ea[lo]
	}
	return int(p.n[hi] - p.n[lo]), p.ea[hi] - p.ea[lo], p.eb[hi] - p.eb[lo]
}

// versus returns t's error sums against ref (with ref = t: its own count and error), extended
// to target u.
func (w *Walker) versus(t, ref *track, u int) *pairSums {
	key := [2]*track{t, ref}
	p, ok := w.pairs[key]
	if !ok {
		p = &pairSums{stride: w.stride, every: w.pairEvery, size: (w.s.Len()+w.stride-1)/w.stride + 1, self: t == ref}
		w.pairs[key] = p
	}
	p.extend(u, func(T int) (float64, float64, bool) {
		y := w.s.Values[T]
		if math.IsNaN(y) {
			return 0, 0, false
		}
		a, ok := w.forecastOf(t, T)
		if !ok {
			return 0, 0, false
		}
		c := w.evidenceBound(T)
		if ref == t {
			return min(math.Abs(y-a), c), min(math.Abs(y-a), c), true
		}
		b, ok := w.forecastOf(ref, T)
		return min(math.Abs(y-a), c), min(math.Abs(y-b), c), ok
	})
	return p
}

// mixAt returns the mixture weighed at mix point u, memoised. Each candidate's forecasts for the
// targets of the last longEvalWindow, as made (forecastOf), are scored where observed.
// Candidates are compared with the reference — the candidate with the most forecasts in the last
// evalWindow — on the targets they share with it, so a baseline that joins late (the weekly one
// after a week) is judged on the days it has without shrinking everyone else's evidence to them:
//
//	rᵢ = (Σ|y−fᵢ| + Σ₄|y−fᵢ| + P) / (Σ|y−f_ref| + Σ₄|y−f_ref| + P)   over their common targets,
//
// Σ summing over the last evalWindow and Σ₄ over the last longEvalWindow (so the last week
// counts twice), P being priorDays of the reference's mean error over the last evalWindow. A
// candidate with less than a day of common targets in the last evalWindow sits out; the others
// weigh (min r / rᵢ)^mixSharpness, normalised. Weighing rather than
// picking keeps a rival in play while the evidence is a few days old. With less than a day of
// forecasts from any candidate, the detected model stands alone.
func (w *Walker) mixAt(u int) *mixture {
	if m, ok := w.mixes[u]; ok {
		return m
	}
	cands := w.candidates(u)
	day := w.s.Steps(Day) / w.stride // scored targets in a day
	lo := u - w.s.Steps(evalWindow) + 1
	n := make([]int, len(cands))
	ref := 0
	for i, t := range cands {
		n[i], _, _ = w.versus(t, t, u).over(lo, u)
		if n[i] > n[ref] {
			ref = i
		}
	}
	m := &mixture{}
	w.mixes[u] = m
	if n[ref] < day {
		m.tracks, m.mix = cands[:1], []float64{1}
		return m
	}
	_, refErr, _ := w.versus(cands[ref], cands[ref], u).over(lo, u)
	prior := priorDays * float64(day) * refErr / float64(n[ref])
	r := make([]float64, len(cands))
	best := math.Inf(1)
	for i, t := range cands {
		r[i] = math.NaN()
		if n[i] < day {
			continue
		}
		p := w.versus(t, cands[ref], u)
		c, ei, er := p.over(lo, u)
		if c < day {
			continue
		}
		_, eli, elr := p.over(u-w.s.Steps(longEvalWindow)+1, u)
		r[i] = math.Max(ei+eli+prior, 1e-12) / math.Max(er+elr+prior, 1e-12)
		best = math.Min(best, r[i])
	}
	sum := 0.0
	for i, t := range cands {
		if !math.IsNaN(r[i]) {
			m.tracks = append(m.tracks, t)
			m.mix = append(m.mix, math.Pow(best/r[i], mixSharpness))
			sum += m.mix[len(m.mix)-1]
		}
	}
	// A mixture is informed when the evidence chose between at least two experts: one judged
	// alone (Holt on the first day, before anything else has a day of forecasts) is no mix.
	m.informed = len(m.tracks) >= 2
	m.prune(sum)
	return m
}

// alone returns the mixture of t alone: a baseline fallen back to or followed after a break.
func alone(t *track) *mixture {
	return &mixture{tracks: []*track{t}, mix: []float64{1}, informed: true}
}

// towards returns the mixture with b given the share s of the weight and the others 1−s of
// theirs (b's own weight in m, if any, scaled with theirs and added to s).
func (m *mixture) towards(b *track, s float64) *mixture {
	out := &mixture{informed: m.informed}
	share := s
	for i, t := range m.tracks {
		if t == b {
			share += (1 - s) * m.mix[i]
			continue
		}
		out.tracks, out.mix = append(out.tracks, t), append(out.mix, (1-s)*m.mix[i])
	}
	out.tracks, out.mix = append(out.tracks, b), append(out.mix, share)
	return out
}

// prune normalises the weights (which sum to sum) and drops the experts below minShare.
func (m *mixture) prune(sum float64) {
	kept := 0.0
	for i := range m.mix {
		if m.mix[i] /= sum; m.mix[i] < minShare {
			m.mix[i] = 0
		}
		kept += m.mix[i]
	}
	for i := len(m.mix) - 1; i >= 0; i-- {
		if m.mix[i] == 0 {
			m.tracks = slices.Delete(m.tracks, i, i+1)
			m.mix = slices.Delete(m.mix, i, i+1)
		} else {
			m.mix[i] /= kept
		}
	}
}

// mixForecast is the mix's forecast for target T as made at T−h (before any fallback), false
// when it had none or its mixture was not informed; memoised.
func (w *Walker) mixForecast(T int) (float64, bool) {
	memo := w.mixPred.at(T)
	if T-w.h < 0 || memo == nil {
		return 0, false
	}
	if f := *memo; f != notYet {
		return f, !math.IsNaN(f)
	}
	f, ok := 0.0, false
	if m := w.mixAt(floorTo(T-w.h, w.mixEvery)); m.informed {
		f, ok = m.predict(w, T)
	}
	if !ok {
		f = math.NaN()
	}
	*memo = f // weighing the mix reads the experts' forecasts, never the mix's: the slot is still T's
	return f, ok
}

// fallbackAt returns the baseline the forecast falls back to at mix point u, nil when the mix
// forecasts; memoised. The mix's own forecasts for the targets of the last fallbackWindow, as
// made (mixForecast: from the mixture of the mix point before each origin, so the mix is judged
// out of sample like the experts, and only once it was informed — its warm-up is the detected
// model's evidence, not the mix's), are compared with each baseline's over the targets both
// forecast. When the mix's error is not below a baseline's, the forecast is that baseline alone
// (the one the mix trails most): on a series where nothing beats "same time last week", the
// forecaster is "same time last week", up to the switching cost. Same time yesterday may give
// way to itself re-shaped by the weekday/weekend profile, when that beat it (reshapedFallback).
//
// A baseline is judged only on at least a day of common targets, half a day of them on weekdays
// and half a day at weekends: "same time yesterday" copies a batch job's weekday minute for
// minute and a Friday into the Saturday, so evidence from weekdays alone — all there is before
// the first weekend after a week of history — must not make it forecast a weekend (synthetic
// batch-3: ratio 1.13 when it did, 1.00 when it waited).
func (w *Walker) fallbackAt(u int) *track {
	if b, ok := w.falls[u]; ok {
		return b
	}
	var best *track
	worst := 1.0
	day := w.s.Steps(Day) / w.stride // scored targets in a day
	lo := u - w.s.Steps(fallbackWindow) + 1
	// The weekend moved (kinds.go): the mix's forecasts made before are another mix's.
	if since := w.weekendSince(u); since >= 0 {
		if lo = max(lo, since+w.h); lo > u {
			w.falls[u] = nil // none of its forecasts is judged yet
			return nil
		}
	}
	for j, b := range w.fallbacks {
		if b.kind == floorExpert && !w.floor.skewed(u) {
			continue // the median is a fallback for a load at its floor only
		}
		// Two sums per baseline: the weekday targets and the weekend ones.
		var n [2]int
		var mixErr, baseErr float64
		for kind, p := range w.versusMix(j, u) {
			c, m, e := p.over(lo, u)
			n[kind], mixErr, baseErr = c, mixErr+m, baseErr+e
		}
		// The floor median, flat, copies no weekday into a weekend (floor.go).
		balanced := n[0] >= day/2 && n[1] >= day/2 || b.kind == floorExpert
		if n[0]+n[1] < day || !balanced || mixErr < baseErr {
			continue
		}
		if r := mixErr / math.Max(baseErr, 1e-12); r >= worst {
			best, worst = b, r
		}
	}
	if best == w.baselines[0] {
		best = w.reshapedFallback(u, lo, best)
	}
	w.falls[u] = best
	return best
}

// reshapedMinDays is how many days of common targets the re-shaped same time yesterday must have
// been judged against same time yesterday on before it replaces it as the fallback
// (reshapedFallback).
const reshapedMinDays = 7

// reshapedFallback returns the forecast that replaces same time yesterday (b) as the fallback
// at mix point u, judged over the targets from lo: on a load with a cycle, same time yesterday
// re-shaped by the weekday/weekend profile (breakFollower's) when its error over them is below
// b's on at least reshapedMinDays days of common targets; b otherwise. A load whose level moves
// day to day makes same time yesterday the best baseline, and the mix falls back to it; but it
// copies a Friday into the Saturday as the Friday was, where the re-shaped one carries the
// Friday's level onto the weekend's shape. Judged, not assumed: on a load whose weekends are not
// the calendar's or not another shape, the profile's ratio is noise, and same time yesterday
// stays.
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation; median 0.843, mean
// 0.8373 before): median 0.830, mean 0.8295, worst 1.027 unchanged; migration-2 0.908 → 0.801 and
// migration-3 0.899 → 0.664, no other series moved. With 7, 14 or 28 days the same; with 3 days
// (or none), crane's input0, whose one-day backtest scores 24 targets, went from 1.000 to 1.141:
// the re-shaped forecast had beaten same time yesterday on its two days of evidence and lost on
// the day scored.
func (w *Walker) reshapedFallback(u, lo int, b *track) *track {
	f := w.reshapedAt(u)
	if f == nil {
		return b
	}
	// The versus sums are kept at mix points: a window starts one step past one (mixAt).
	lo = ceilTo(max(0, lo-1), w.mixEvery) + 1
	if lo > u {
		return b
	}
	if c, ef, eb := w.versus(f, b, u).over(lo, u); c >= reshapedMinDays*w.s.Steps(Day)/w.stride && ef < eb {
		return f
	}
	return b
}

// fallbackForecast returns the fallback decided at mix point u (fallbackAt) and its forecast
// for target T, nil when the mix forecasts; a re-shaped same time yesterday with no forecast
// there gives way to same time yesterday itself.
func (w *Walker) fallbackForecast(u, T int) (*track, float64, bool) {
	b := w.fallbackAt(u)
	if b == nil {
		return nil, 0, false
	}
	f, ok := w.forecastOf(b, T)
	if !ok && b.kind == reshapedExpert {
		b = w.baselines[0]
		f, ok = w.forecastOf(b, T)
	}
	if !ok {
		return nil, 0, false
	}
	return b, f, true
}

// versusMix returns the mix's error sums against baseline j (mixForecast against forecastOf),
// on weekday targets and on weekend ones (the calendar's: prefix sums cannot follow a weekend
// read from the load as it moves), extended to target u.
func (w *Walker) versusMix(j, u int) [2]*pairSums {
	weekend := w.dayKinds(0).weekend
	for kind := range 2 {
		w.mixSums[j][kind].extend(u, func(T int) (float64, float64, bool) {
			y := w.s.Values[T]
			if math.IsNaN(y) || weekend[T] != (kind == 1) {
				return 0, 0, false
			}
			f, ok1 := w.mixForecast(T)
			v, ok2 := w.forecastOf(w.fallbacks[j], T)
			c := w.evidenceBound(T)
			return min(math.Abs(y-f), c), min(math.Abs(y-v), c), ok1 && ok2
		})
	}
	return [2]*pairSums{&w.mixSums[j][0], &w.mixSums[j][1]}
}

// predict combines the experts' forecasts for target T as made at T−h, renormalising the weights
// over the experts that have one (a gap a week back leaves the weekly rivals without a value, not
// the daily model); ok is false when none has.
func (m *mixture) predict(w *Walker, T int) (float64, bool) {
	var sum, weight float64
	for i, t := range m.tracks {
		if f, ok := w.forecastOf(t, T); ok {
			sum += m.mix[i] * f
			weight += m.mix[i]
		}
	}
	if weight == 0 {
		return 0, false
	}
	return sum / weight, true
}

// inSample returns a function combining the experts' forecasts for a target with the stacks'
// weights fitted at refit point g (not as made): what the margin is sized from. Its ok is false
// unless every expert has one.
func (m *mixture) inSample(w *Walker, g int) func(T int) (float64, bool) {
	ws := make([]weights, len(m.tracks))
	for i, t := range m.tracks {
		ws[i] = t.weightsAt(g, w.s.Steps(fitWindow))
	}
	return func(T int) (float64, bool) {
		var sum float64
		for i, t := range m.tracks {
			f, ok := t.predict(T, ws[i])
			if !ok {
				return 0, false
			}
			sum += m.mix[i] * f
		}
		return sum, true
	}
}

// shares returns the weight each expert carries in the forecast for target T (renormalised over
// the experts that have one, as predict does), largest first.
func (m *mixture) shares(w *Walker, T int) []Share {
	if m.order == nil {
		m.order = make([]int, len(m.tracks))
		for i := range m.order {
			m.order[i] = i
		}
		slices.SortStableFunc(m.order, func(a, b int) int {
			switch {
			case m.mix[a] > m.mix[b]:
				return -1
			case m.mix[a] < m.mix[b]:
				return 1
			}
			return 0
		})
	}
	out := make([]Share, 0, len(m.tracks))
	total := 0.0
	for _, i := range m.order {
		if _, ok := w.forecastOf(m.tracks[i], T); ok {
			out = append(out, Share{Model: m.tracks[i].name, Weight: m.mix[i]})
			total += m.mix[i]
		}
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out
}

// marginMass is the share of the mix the margin is sized from: the experts below the last
// percent of its weight change its in-sample forecasts by less than a percent, and replaying
// them over the eight-week fit window at every refit doubled the cost of a replay.
const marginMass = 0.99

// top returns the mixture of the heaviest experts that together hold at least mass of the
// weight, renormalised.
func (m *mixture) top(mass float64) *mixture {
	order := make([]int, len(m.tracks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case m.mix[a] > m.mix[b]:
			return -1
		case m.mix[a] < m.mix[b]:
			return 1
		}
		return 0
	})
	keep := make([]bool, len(m.tracks))
	sum := 0.0
	for _, i := range order {
		if sum >= mass {
			break
		}
		keep[i], sum = true, sum+m.mix[i]
	}
	out := &mixture{informed: m.informed}
	for i, t := range m.tracks { // in the mixture's order, so the sums add up as before
		if keep[i] {
			out.tracks, out.mix = append(out.tracks, t), append(out.mix, m.mix[i]/sum)
		}
	}
	return out
}

// model returns the expert with the largest combination weight.
func (m *mixture) model() *track {
	best := 0
	for i, x := range m.mix {
		if x > m.mix[best] {
			best = i
		}
	}
	return m.tracks[best]
}

// ensembleAt returns the margin refitted at refit point g, for the mixture (or the baseline it
// fell back to) of the mix point at g; the last one is kept, since origins mostly advance.
func (w *Walker) ensembleAt(g int) *ensemble {
	if w.ens != nil && w.ens.at == g {
		return w.ens
	}
	window := w.s.Steps(fitWindow)
	m := w.mixAt(g)
	if b := w.fallbackAt(g); b != nil {
		m = alone(b)
	}
	e := &ensemble{at: g, bins: newPhaseBins(w.s)}
	e.marginQuantiles(w, m.top(marginMass), window, w.opts.Margin)
	e.ceiling = ceiling(w.s.Values[max(0, g-window+1) : g+1])
	w.ens = e
	return e
}
