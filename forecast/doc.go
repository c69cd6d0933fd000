// Package forecast predicts the capacity a GPU workload will need a lead time ahead, so that Tiler
// can buy nodes before pods go pending. It is pure: samples and the current time come in as data,
// forecasts come out as values; nothing here reads the clock, the network or Prometheus (the
// promsource adapter does that and hands Samples to this package).
//
// # Pipeline
//
//	samples ─▶ Series (regular grid, gaps are NaN, never zero)
//	        ─▶ DetectPeriod (day, week or none)
//	        ─▶ profile stacks, combined by their recent errors (or the non-seasonal Holt
//	           fallback) ─▶ Forecast{Point, Upper}
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
//   - p(T): the median of the same phase in the last K periods (robust to one-off anomalies);
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
// Two weeks of history are needed to confirm a weekly cycle, but one week already allows a
// forecast from the same time last week, and on workloads whose weekends differ it can beat the
// daily model long before the cycle can be confirmed (crane's input2: two weeks of CPU usage, a
// busier weekend, daily jobs at fixed minutes). So while the detected cycle is a day — or a week
// not yet confirmable — and a week and a horizon of history exist, the daily stack has four
// rivals: the weekly stack; the weekly profile alone (the median of the same time in the past
// weeks; with little history the stack's level terms add more noise than they remove); and the
// weekday/weekend stack and profile, whose profile is the median of the same time of day on the
// last six days of the target's kind (Saturday and Sunday, or Monday to Friday, in
// Options.Location: the forecast's timeZone, UTC by default) — it knows the weekend from one week
// of history like the weekly rivals, but takes its median over five weekdays instead of copying
// last Tuesday's one-off batch job. At every refit each expert's forecasts for the targets of the
// last week are replayed as they would have been made — from their own origins, with the weights
// of the last refit before them — and the forecast is the mix weighted by (1/MAE)⁸ of each
// expert's mean absolute error there: an expert 10 % worse than the best keeps half the weight,
// 25 % worse a sixth. Weighing rather than picking keeps a rival in play while the evidence is
// a few days old; a confirmed weekly cycle (NYC taxi) runs its stack alone. Forecast.Model names
// the expert with the largest weight.
//
// The upper forecast is Point·(1+q), where q is the margin quantile of the combined model's
// relative errors over the fit window (busy targets only) at the target's time of day, in
// two-hour bins: a workload that bursts at noon and idles in the evening is uncertain at noon
// only, and one margin for the whole day buys capacity all evening for the errors of noon (a bin
// with fewer than 30 targets takes the quantile over the whole day). It is the value capacity is
// bought for. When the load saturates — it sits within 3 % of its largest value for at least 5 %
// of the fit window, as a CPU limit or a replica cap pins it — the margin does not raise the
// upper forecast past that level: the load does not exceed its limit, so capacity above it idles
// (crane's input2 sits at its limit four hours a day). The point forecast is never cut.
//
// With no period, or less than two periods of history, the model falls back to Holt's linear
// exponential smoothing with a damped trend and says so in Forecast.Fallback.
package forecast
