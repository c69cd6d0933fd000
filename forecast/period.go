package forecast

import (
	"fmt"
	"math"
	"time"
)

// Period is the seasonality of a series.
type Period int

// The periods DetectPeriod distinguishes. Traffic to inference services follows people, so a day
// and a week are the only cycles worth a model; anything else is treated as no period.
const (
	// PeriodAuto, the zero value, asks a forecaster to detect the period; DetectPeriod never
	// returns it.
	PeriodAuto Period = iota
	// PeriodNone means no significant daily or weekly cycle.
	PeriodNone
	// PeriodDay means a 24-hour cycle.
	PeriodDay
	// PeriodWeek means a 7-day cycle (which usually contains a daily one).
	PeriodWeek
)

// Day and Week are the durations of the detectable periods.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// String returns "auto", "none", "day" or "week".
func (p Period) String() string {
	switch p {
	case PeriodAuto:
		return "auto"
	case PeriodDay:
		return "day"
	case PeriodWeek:
		return "week"
	default:
		return "none"
	}
}

// Duration returns the length of one cycle, 0 for PeriodNone.
func (p Period) Duration() time.Duration {
	switch p {
	case PeriodDay:
		return Day
	case PeriodWeek:
		return Week
	default:
		return 0
	}
}

// minACF is the autocorrelation a period's lag must reach, besides being a local peak, for the
// period to count. Crane takes the highest verified peak without a floor; a floor of 0.2 keeps a
// barely significant harmonic of noise from passing as a cycle.
const minACF = 0.2

// PeriodResult explains DetectPeriod's answer.
type PeriodResult struct {
	// Period is the detected cycle.
	Period Period
	// DaySignificant and WeekSignificant say whether the frequency test passed for each cycle.
	DaySignificant, WeekSignificant bool
	// ACFDay and ACFWeek are the autocorrelations at lags of one day and one week (NaN when the
	// series is shorter than two cycles).
	ACFDay, ACFWeek float64
	// Reason is a one-line human explanation.
	Reason string
}

// DetectPeriod decides whether s has a daily cycle, a weekly one or neither.
//
// The series is averaged to hourly buckets, trimmed to whole cycles, its gaps interpolated and a
// centred moving average of one cycle subtracted (a moving average over exactly one cycle is flat
// for a periodic signal, so this removes level shifts and trend but keeps the cycle). A cycle then
// needs (1) spectral power above the permutation threshold at one of its harmonics — for a week,
// at a weekly harmonic that is not also a daily one, since a purely daily series has power at
// every seventh weekly harmonic — and (2) an autocorrelation peak of at least minACF at its lag,
// computed only over pairs of observed (not interpolated) points. When both pass, the week wins
// if same-hour-last-week correlates better than same-hour-yesterday.
func DetectPeriod(s Series) PeriodResult {
	res := PeriodResult{Period: PeriodNone, ACFDay: math.NaN(), ACFWeek: math.NaN()}
	h, err := hourly(s)
	if err != nil {
		res.Reason = err.Error()
		return res
	}
	dayOK := testCycle(h, Day, &res.DaySignificant, &res.ACFDay)
	weekOK := testCycle(h, Week, &res.WeekSignificant, &res.ACFWeek)
	dayOnWeekly := math.NaN()
	if weekOK {
		dayOnWeekly = weeklyResidualDayACF(h)
	}
	switch {
	case weekOK && (!dayOK || res.ACFWeek > dayOnWeekly):
		res.Period = PeriodWeek
	case dayOK:
		res.Period = PeriodDay
	}
	res.Reason = fmt.Sprintf("day: significant=%t acf=%.2f; week: significant=%t acf=%.2f (day lag on weekly residual %.2f)",
		res.DaySignificant, res.ACFDay, res.WeekSignificant, res.ACFWeek, dayOnWeekly)
	return res
}

// hourly resamples s to one-hour buckets when its step divides an hour; coarser grids are kept.
func hourly(s Series) (Series, error) {
	if s.Step < time.Hour && time.Hour%s.Step == 0 {
		return s.Resample(time.Hour)
	}
	if s.Step > 6*time.Hour {
		return Series{}, fmt.Errorf("step %s is too coarse to see a daily cycle", s.Step)
	}
	return s, nil
}

// testCycle runs both stages for one cycle length and reports whether it passed.
func testCycle(h Series, cycle time.Duration, significant *bool, acf *float64) bool {
	t, m := h.TrimToPeriods(cycle)
	if m < 2 || t.Len()-t.Missing() < t.Len()/2 {
		return false
	}
	per := t.Steps(cycle)
	filled := interpolate(t.Values)
	resid := subtractMovingAverage(filled, per)
	if cycle == Week {
		*significant = harmonicSignificant(subtractDailyProfile(resid, t.Values, t.Steps(Day)), m, true)
	} else {
		*significant = harmonicSignificant(resid, m, false)
	}
	r := acfMasked(resid, t.Values, per)
	*acf = r
	return *significant && r >= minACF && acfPeak(resid, t.Values, per)
}

// weeklyResidualDayACF is the lag-one-day autocorrelation of the week-detrended series: the
// fair comparison for the lag-one-week value, since detrending by a one-day average would remove
// the weekday/weekend differences that make a series weekly.
func weeklyResidualDayACF(h Series) float64 {
	t, _ := h.TrimToPeriods(Week)
	resid := subtractMovingAverage(interpolate(t.Values), t.Steps(Week))
	return acfMasked(resid, t.Values, t.Steps(Day))
}

// subtractDailyProfile removes the mean of each time of day (over observed points), leaving what
// the week adds to the day: the weekly test looks for power in that remainder only, so a strong
// daily cycle does not raise the permutation threshold above the weekly harmonics.
func subtractDailyProfile(x, orig []float64, day int) []float64 {
	sum := make([]float64, day)
	n := make([]float64, day)
	for i, v := range x {
		if !math.IsNaN(orig[i]) {
			sum[i%day] += v
			n[i%day]++
		}
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v
		if n[i%day] > 0 {
			out[i] -= sum[i%day] / n[i%day]
		}
	}
	return out
}

// harmonicSignificant reports whether any harmonic of the cycle (bin k = j·m for a series of m
// cycles) beats the permutation threshold. For weekly cycles, harmonics that are multiples of 7
// are daily ones and are skipped.
func harmonicSignificant(x []float64, cycles int, weekly bool) bool {
	p := newBluestein(len(x))
	amp := p.amplitudes(x, nil)
	threshold := p.powerThreshold(x)
	for j := 1; j*cycles < len(amp); j++ {
		if weekly && j%7 == 0 {
			continue
		}
		if amp[j*cycles] > threshold {
			return true
		}
	}
	return false
}

// interpolate fills NaN runs linearly between their neighbours and extends the ends flat.
func interpolate(x []float64) []float64 {
	out := append([]float64(nil), x...)
	last := -1
	for i, v := range out {
		if math.IsNaN(v) {
			continue
		}
		switch {
		case last < 0:
			for j := 0; j < i; j++ {
				out[j] = v
			}
		case i-last > 1:
			for j := last + 1; j < i; j++ {
				out[j] = out[last] + (v-out[last])*float64(j-last)/float64(i-last)
			}
		}
		last = i
	}
	for j := last + 1; last >= 0 && j < len(out); j++ {
		out[j] = out[last]
	}
	return out
}

// subtractMovingAverage returns x minus its centred moving average over w points (truncated at
// the ends).
func subtractMovingAverage(x []float64, w int) []float64 {
	cs := make([]float64, len(x)+1)
	for i, v := range x {
		cs[i+1] = cs[i] + v
	}
	out := make([]float64, len(x))
	for i := range x {
		lo, hi := max(0, i-w/2), min(len(x), i-w/2+w)
		out[i] = x[i] - (cs[hi]-cs[lo])/float64(hi-lo)
	}
	return out
}

// acfMasked is the autocorrelation of x at lag over the pairs where both points were observed in
// orig (not NaN). The lagged sum is divided by the number of pairs, not the number of points:
// with two weeks of data only half the points have a partner a week later, and the usual biased
// estimator would halve the weekly value and make the week lose against the day.
func acfMasked(x, orig []float64, lag int) float64 {
	var sum, n float64
	for i, v := range x {
		if !math.IsNaN(orig[i]) {
			sum += v
			n++
		}
	}
	mean := sum / n
	var num, den, pairs float64
	for i, v := range x {
		if math.IsNaN(orig[i]) {
			continue
		}
		den += (v - mean) * (v - mean)
		if j := i + lag; j < len(x) && !math.IsNaN(orig[j]) {
			num += (v - mean) * (x[j] - mean)
			pairs++
		}
	}
	if den == 0 || pairs == 0 {
		return 0
	}
	return (num / pairs) / (den / n)
}

// acfPeak reports whether the autocorrelation has a local peak at lag: a least-squares line over
// the ACF on [lag−r, lag] rises and one over [lag, lag+r] falls (crane's isPeak), with r = 4
// hours so a smeared peak still counts.
func acfPeak(x, orig []float64, lag int) bool {
	const r = 4
	left, right := make([]float64, 0, r+1), make([]float64, 0, r+1)
	for d := -r; d <= r; d++ {
		v := acfMasked(x, orig, lag+d)
		if d <= 0 {
			left = append(left, v)
		}
		if d >= 0 {
			right = append(right, v)
		}
	}
	return slope(left) > 0 && slope(right) < 0
}

// slope is the least-squares slope of y against its index.
func slope(y []float64) float64 {
	n := float64(len(y))
	var sx, sy, sxy, sxx float64
	for i, v := range y {
		x := float64(i)
		sx, sy, sxy, sxx = sx+x, sy+v, sxy+x*v, sxx+x*x
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
