// Package forecast predicts the capacity a GPU workload will need a lead time ahead, so that Tiler
// can buy nodes before pods go pending. It is pure: samples and the current time come in as data,
// forecasts come out as values; nothing here reads the clock, the network or Prometheus (the
// promsource adapter does that and hands Samples to this package).
//
// # Pipeline
//
//	samples ─▶ Series (regular grid, gaps are NaN, never zero)
//	        ─▶ DetectPeriod (day, week or none)
//	        ─▶ experts: profile stacks, profiles, Holt, seasonal-naive baselines
//	        ─▶ mix weighed by their recent errors, or the baseline it does not beat
//	        ─▶ Forecast{Point, Upper, Shares}
//	queue depth + arrival rate + service rate ─▶ QueueNeed
//	max(Upper, QueueNeed) clamped by min/max and budget ─▶ Target ─▶ Reservation
//
// # Period detection
//
// DetectPeriod follows the two-stage test of crane's DSP predictor: a frequency is a candidate
// when its periodogram power beats the 99th percentile of the largest power of randomly permuted
// copies of the series (permutations destroy any periodicity, so this is a significance test
// that needs no distributional assumption), and a candidate is kept only when the autocorrelation
// function has a peak at its lag. Before the test the series is averaged to hourly buckets,
// trimmed to whole cycles, gaps are interpolated (only for the spectrum; the autocorrelation uses
// observed pairs only) and a centred moving average of one cycle is subtracted, so level shifts
// and trends do not masquerade as low-frequency power. The weekly test looks for power at weekly
// harmonics after the mean daily profile is removed, and the week wins over the day when
// same-hour-last-week correlates better than same-hour-yesterday. The permutations use a
// generator seeded from the samples, so the same input always gives the same answer.
//
// # Model choice
//
// The seasonal forecaster is a seasonal regression ("profile stack") rather than Holt-Winters.
// Holt-Winters updates each seasonal index once per period, so with a weekly period on hourly data
// one anomalous week (a holiday, a marathon) corrupts 168 indices for many weeks, and its
// smoothing parameters must be fitted by a non-convex search. The profile stack instead builds,
// for each target time T, eight predictors that use only samples at or before the forecast
// origin T−h:
//
//   - p(T): the profile, the mean of the values at the same phase in the last K periods that lie
//     within five robust standard deviations of their median (robust to one-off anomalies);
//   - p(T)·r₁, p(T)·r₆ and p(T)·r₂₄: the profile scaled by the ratio actual/profile over the last
//     1, 6 and 24 hours before the origin — the level and trend adjustment (a ramp or a level
//     shift shows up as a ratio away from 1 within hours, not weeks);
//   - y(T−d)·p(T)/p(T−d): the latest same-time-of-day observation, re-shaped by the profile;
//   - y(T−w)·(last day / same day a week before): last week's value at the same time, scaled by
//     the week-over-week growth, so a daily model sees weekday/weekend differences;
//   - the mean of the last hour and the latest value (persistence), which carry short horizons:
//     a pre-scaler forecasts 15–20 minutes ahead, where the last value beats any profile when a
//     burst has just started or ended.
//
// The forecast is a weighted sum of these predictors whose weights are fitted by ridge-regularised
// least squares on the past targets of the same horizon (each weighted by 1/(y+4·mean): close to
// the absolute error WAPE counts, slightly favouring quiet hours), shrunk towards a fixed blend of
// the profile terms when history is short. The fit is an 8×8 linear solve, so it is cheap and
// deterministic, and refitting daily as history grows never looks ahead.
//
// # Model combination
//
// No model is best on every series, and a forecaster a user cannot trust to at least match "same
// hour last week" gets switched off. So the forecast is a mix of experts weighed by their errors
// on the recent past, and the seasonal-naive baselines a backtest compares it with are experts
// too: on a series where nothing beats them, the mix becomes them.
//
// The experts: the stack of the detected cycle and its profile alone (the robust mean of the
// same phase in the past cycles; with little history the stack's level terms add more noise than
// they remove); as rivals, the stacks and profiles of the other cycles — a week of history already
// allows a forecast from the same time last week, though two are needed to confirm a weekly
// cycle, and the weekday/weekend stack and profile, whose profile is the robust mean of the same
// time of day on every day of the target's kind (Saturday and Sunday, or Monday to Friday, in
// Options.Location: the forecast's timeZone, UTC by default; or the two days from the hour the
// load's own weeks show its weekend to start, kinds.go) in as many weeks as the weekly
// profile takes, know the weekend from its first one and average the noise of five weekdays a
// week; with a cycle detected and a horizon of twelve hours or more, that profile smoothed over
// the hour either side (smoothed: a profile of few days keeps much of their noise), and that
// profile moved towards the last day's level against it (the median of its hourly levels,
// which a surge of a few hours does not move: dayLevel) by a share fitted on the series (a
// day's level persists into the next: levelShare), and, once two weeks are known, the same
// with the profile first carried forward by the load's growth over its mean age (trended,
// seasonal.growthAt); Holt's damped trend; and the three baselines — the value a day before
// the target (BaselineNaiveDay), a week before (BaselineNaiveWeek), and the mean of the same
// time one to four weeks before (BaselineMeanWeeks). With no cycle detected Holt leads and every stack and
// profile is a rival — the evidence, not the detector, decides whether a weak cycle is worth
// forecasting from — and so is the reverting expert: the mean of the last three hours drawn back
// towards the last week's mean by a share fitted on the series (revert.go).
//
// Every hour (a mix point) each expert's forecasts for the targets of the last four weeks are
// scored as they were made — from their own origins, a stack with the weights of the refit
// before — against the expert with the most of them in the last week (the reference), on the
// targets both forecast: rᵢ = (Σ|y−fᵢ| + Σ₄|y−fᵢ| + P)/(Σ|y−f_ref| + Σ₄|y−f_ref| + P), Σ over
// the last week and Σ₄ over the last four, so the last week counts twice: a week alone is too
// small a sample to tell equally good experts apart, and the mix paid for following a new
// leader every week. P is a day's worth of the reference's error, so an expert that joins late
// and is lucky on its first day does not take over. The mix weighs the
// experts by (min r/rᵢ)⁸: one 10 % worse than the best keeps half the weight, 25 % worse a sixth.
// Weighing rather than picking keeps a rival in play while the evidence is a few days old.
// Every expert's forecast is clipped at the cap the values up to its origin show — their
// maximum once it has repeated twelve times (ceilings: a load pinned at a limit) — before it is
// scored or mixed; the upper margin is not.
//
// The mix is then judged like an expert: its own forecasts, as made, over the last eight weeks,
// against each baseline's on the targets both forecast. When the mix's error is not below a
// baseline's, the forecast is that baseline alone, and Forecast.Fallback says so. The long
// window lets one bad day count as one day: with a week, an outage that made the mix trail "same
// time last week" for a day locked the forecast to that baseline for the week in which it then
// repeated the outage. When that baseline is same time yesterday, on a load with a cycle, and same
// time yesterday re-shaped by the weekday/weekend profile beat it over the same weeks on at least
// a week of targets, the forecast is the re-shaped one (reshapedFallback): after a migration
// the mix trails same time yesterday for weeks, and same time yesterday copies every Friday into
// a Saturday. A baseline is judged only on evidence with half a day of weekdays and half
// a day of weekend in it: "same time yesterday" copies a batch job's weekday minute for minute,
// and evidence from weekdays alone must not make it forecast a Saturday. On a load at its
// floor — more than half of the last week under a tenth of its mean, bursts on nothing — the
// median of the last week is judged the same way and may be the forecast alone (floor.go):
// absolute errors ask for a median, and every expert forecasts a mean of some kind.
//
// Regime changes. A level shift makes every expert fall behind until forecasts made after it are
// scored, a horizon later: the stacks' level terms follow within hours, same time yesterday after
// one horizon, and the weights move to whoever followed once their forecasts are judged — a day
// behind same time yesterday at a one-day horizon. At horizons of twelve hours or more the walker
// does not wait for that evidence: when the load has been more than 1.5× (or less than 1/1.5) of
// every forecast made for it over the last twelve hours — or above it for three hours or more by as
// much in all as twelve hours at 1.5× would be, a large rise — it is taken for a level break and the
// forecast is same time yesterday, the one forecast that follows a lasting level at once, until
// the forecasts made after the break catch up (breakAt; an outage longer than twelve hours is
// the price: its last hours are repeated a day later). On a load with a cycle it is same time
// yesterday re-shaped by the weekday/weekend profile, y(T−d)·p(T)/p(T−d), which differs only when
// yesterday and the target are days of different kinds: a break on a Friday is followed into
// the Saturday on the weekend's shape, not as a copy of the Friday (breakFollower). A smaller
// shift — every forecast of the last twelve hours off the same way by more than 20 %, on a load
// with a cycle — moves the forecast 70 % of the way to that follower until they catch up
// (softBreakBand). Two things keep the rule from copying a surge that passes into the next day:
// it does not act on a load whose forecasts are off by a quarter or more in the median, where a
// load half again off for hours is noise (breakNoise), and a break is not followed once following
// the load's earlier breaks has lost to the plain forecast by more than that usual error
// (followsBreaks): a load's first break is followed, the later ones only if that did not lose so.
// A holiday is the
// reverse: the baselines repeat it (a day or a week later), the profiles do not (its day lies
// outside the spread of the others). A missing day leaves the experts that read it without a
// forecast; the mix renormalises over the others, and the targets it covered are scored by
// nobody. TestLevelShiftAndGaps, TestHolidayIsNotRepeated, TestFollowsALevelBreak,
// TestMovesTowardsAModerateShift, TestNoFallbackOnWeekdaysAlone and TestFallsBackToAnExactBaseline
// pin these behaviours, and forecast/backtest's TestGeneralisation scores the whole on the tune
// and eval traces.
//
// Schedules. The period is detected two days into the series and every week after, the stacks
// are refitted every Options.RefitEvery (a day), the experts reweighed every hour, each on a
// schedule counted from the first point of the series: a forecast from origin o is the same
// whether the walker walked every origin before it (a backtest) or was asked for o alone
// (Predict). On grids finer than five minutes the evidence and the fits read every fifth minute
// only, and every quarter of the horizon (up to fifteen minutes) at longer horizons
// (evidenceSpacing).
// Forecast.Model names the expert with the largest weight and Forecast.Shares gives them all;
// Walker.Experts gives what each would have forecast alone (tiler forecast backtest --experts).
//
// The upper forecast is Point·(1+q), where q is the margin quantile of the combined model's
// relative errors over the fit window (busy targets only) at the target's time of day, in
// two-hour bins: a workload that bursts at noon and idles in the evening is uncertain at noon
// only, and one margin for the whole day buys capacity all evening for the errors of noon (a bin
// with fewer than 30 targets takes the quantile over the whole day). It is the value capacity is
// bought for. When the load saturates — it sits within 3 % of its largest value for at least 5 %
// of the fit window, as a CPU limit or a replica cap pins it — the margin does not raise the
// upper forecast past that level: the load does not exceed its limit, so capacity above it idles
// (crane's input2 sits at its limit four hours a day). The point forecast is cut only at an
// exact cap (a maximum repeated twelve times, lifted by the first value above it).
//
// With no period, or less than two periods of history, Holt's linear exponential smoothing with
// a damped trend leads the mix, and Forecast.Fallback says why.
package forecast
