package forecast

import (
	"math"
	"time"
)

// marginBinWidth is the width of the time-of-day bins the margin is calibrated in. How far off a
// forecast can be depends on the time of day: crane's input1 idles at 5 GPUs from 14:00 to
// midnight and bursts to 40–110 GPUs between 10:00 and 13:00, so one margin for the whole day
// either leaves the bursts short or buys capacity all evening for errors that happen at noon
// (there it added 2.5 GPUs to 6 from 14:00 to 24:00, a quarter of the trace's extra GPU-hours, for
// no shortfall saved). Bins of 1 to 4 hours gave the same replay figures within a point or two;
// two hours hold 168 five-minute targets after one week of history and 224 half-hour ones after
// eight weeks, enough for a 0.9 quantile.
const marginBinWidth = 2 * time.Hour

// minBinErrors is the fewest busy targets a bin's quantile is taken from; a bin with fewer (a
// quiet night, an hourly series with one week of history) gets the quantile over all bins.
const minBinErrors = 30

// phaseBins maps a target index to its time-of-day bin.
type phaseBins struct {
	day, width, offset int // in steps; offset is the step of Start within its UTC day
}

func newPhaseBins(s Series) phaseBins {
	return phaseBins{
		day:    max(1, s.Steps(Day)),
		width:  max(1, s.Steps(marginBinWidth)),
		offset: s.Steps(s.Start.Sub(s.Start.Truncate(Day))),
	}
}

func (b phaseBins) of(T int) int { return ((T + b.offset) % b.day) / b.width }

func (b phaseBins) n() int { return (b.day + b.width - 1) / b.width }

// marginQuantiles sets the margin of each time-of-day bin (e.q the quantile over all bins): the
// margin quantile of the relative errors (y−ŷ)/ŷ of the ensemble's forecasts over the targets of
// the last window known at its refit origin that every expert forecast (earlier ones were
// forecast by fewer experts, not by this ensemble), floored at 0 so the upper forecast never
// undercuts the point forecast. Only targets forecast at half the mean level or more count:
// capacity is sized by busy hours, and the relative errors of a quiet night (a jump from 8 to 20
// is +150 %) would otherwise inflate the margin of every busy hour.
//
// The errors are those of the weights fitted at the origin, not of the forecasts made at the
// time. Sizing the margin from the out-of-sample errors of the last week instead was tried in the
// replay: NYC taxi came out a point better (−94 % GPU-minutes short for the same GPU-hours), but
// crane's input0 and input1 paid 2 and 12 points more GPU-hours (+8.0 % against +5.7 %, +50.6 %
// against +38.7 %); the last day alone left NYC taxi both shorter and dearer (−92 %, +9.5 %).
func (e *ensemble) marginQuantiles(w *Walker, m *mixture, window int, margin float64) {
	y := w.s.Values
	lo := max(0, e.at-window+1)
	busy := 0.5 * meanObserved(y[lo:e.at+1])
	var all []float64
	bins := make([][]float64, e.bins.n())
	predict := m.inSample(w, e.at)
	for T := lo; T <= e.at; T++ {
		if T%w.stride != 0 {
			continue
		}
		if math.IsNaN(y[T]) {
			continue
		}
		p, ok := predict(T)
		if !ok || p <= 0 || p < busy {
			continue
		}
		r := (y[T] - p) / p
		all = append(all, r)
		bins[e.bins.of(T)] = append(bins[e.bins.of(T)], r)
	}
	e.q = math.Max(0, quantile(all, margin))
	e.qBin = make([]float64, len(bins))
	for i, errs := range bins {
		e.qBin[i] = e.q
		if len(errs) >= minBinErrors {
			e.qBin[i] = math.Max(0, quantile(errs, margin))
		}
	}
}

// meanObserved is the mean absolute value of the observed (non-NaN) values, 1 when there are none.
func meanObserved(v []float64) float64 {
	var sum, n float64
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += math.Abs(x)
			n++
		}
	}
	if n == 0 {
		return 1
	}
	return sum / n
}

// Saturation test of the ceiling: a load that sits within saturationBand of its largest value for
// at least saturationShare of the window is pinned at a limit (a CPU limit, a replica cap, a rate
// limit). crane's input2 spends 21 % of its five-minute means within 3 % of its maximum; NYC taxi
// and crane's input0 and input1, whose peaks are one-off, spend under 0.1 % there.
const (
	saturationBand  = 0.03
	saturationShare = 0.05
)

// ceiling is the largest value of the window ending at the refit origin when the load saturates
// there (see saturationBand), +Inf otherwise. The upper forecast is not raised above it by the
// margin: a saturated load does not exceed its limit, and on crane's input2 the margin on its
// four-hour plateau at the limit bought six idle GPUs out of 27 (replay: +36 % GPU-hours before,
// +24 % after, for the same 99 % fewer GPU-minutes short). The point forecast is cut only at an
// exact cap (cap.go: a maximum repeated twelve times, lifted by the first value above it), so a
// load that grows past an old limit still gets capacity; only the margin above it goes.
func ceiling(v []float64) float64 {
	top, n := math.Inf(-1), 0
	for _, x := range v {
		if !math.IsNaN(x) {
			top = math.Max(top, x)
			n++
		}
	}
	if n == 0 || top <= 0 {
		return math.Inf(1)
	}
	near := 0
	for _, x := range v {
		if x >= (1-saturationBand)*top {
			near++
		}
	}
	if float64(near) < saturationShare*float64(n) {
		return math.Inf(1)
	}
	return top
}

// upper is the upper forecast for point forecast p of target T: p·(1+q) with the margin q of T's
// time-of-day bin, not raised by the margin above the ceiling, never below p.
func (e ensemble) upper(T int, p float64) float64 {
	q := e.q
	if len(e.qBin) > 0 {
		q = e.qBin[e.bins.of(T)]
	}
	return math.Max(p, math.Min(p*(1+q), e.ceiling))
}
