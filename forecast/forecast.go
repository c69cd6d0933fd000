package forecast

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMargin is the quantile of past relative errors the upper forecast covers when Options
// leaves it unset: capacity for nine hours in ten without over-buying for the rare spike (the
// queue model covers those).
const DefaultMargin = 0.9

// DefaultCycles is how many past periods the seasonal profile is taken over: six weeks
// (or days) outvote one holiday while still following a season's drift.
const DefaultCycles = 6

// detectWindow bounds the history the period detector looks at: eight weeks show four weekly
// cycles, more than the test needs, and keep detection fast.
const detectWindow = 8 * Week

// fitWindow bounds the targets the weights and margin are fitted on, so old regimes age out.
const fitWindow = 8 * Week

// ErrTooLittleHistory is returned when even the fallback cannot forecast (no observed value).
var ErrTooLittleHistory = errors.New("too little history")

// Options configures a forecast.
type Options struct {
	// Horizon is how far past the origin the forecast is for; it must be positive.
	Horizon time.Duration
	// Margin is the quantile (0.5 ≤ q < 1) of past relative errors the upper forecast covers;
	// zero means DefaultMargin.
	Margin float64
	// Period forces a period; PeriodAuto (the zero value) detects one from the history.
	Period Period
	// Cycles is the number of past periods in the profile; zero means DefaultCycles.
	Cycles int
	// RefitEvery is how often a Walker refits weights and re-detects the period; zero means one day.
	RefitEvery time.Duration
	// Location is the time zone whose Saturday and Sunday are the weekend of the weekday/weekend
	// model; nil means UTC. On a load with a daily or weekly cycle whose last one to four weeks
	// show another weekend — its people live in another zone — the weekend is read from the load
	// instead (kinds.go).
	Location *time.Location
}

// Forecast is one forecast value with what produced it.
type Forecast struct {
	// Origin is the time of the last sample the forecast could use.
	Origin time.Time
	// Target is the time the forecast is for.
	Target time.Time
	// Point is the expected value.
	Point float64
	// Upper is the value the margin quantile covers; capacity is bought for this.
	Upper float64
	// Model names the model: "seasonal/day", "seasonal/week", "profile/day" or "profile/week"
	// (a profile alone), "seasonal/weekday-weekend", "profile/weekday-weekend" (the daily model
	// whose profile takes only days of the target's kind), "levelled/weekday-weekend" and
	// "trended/weekday-weekend" (that profile moved towards the last day's level, the second
	// carried forward by the growth), "holt", "reverting" (the recent level drawn back towards
	// the usual one, with no cycle), "reshaped/weekday-weekend" (same time yesterday re-shaped by
	// that profile, which follows a level break on a load with a cycle, and replaces same time
	// yesterday as the fallback where it beat it), or a seasonal-naive
	// baseline, "baseline/" followed by BaselineNaiveDay, BaselineNaiveWeek or BaselineMeanWeeks;
	// when several are combined, the one with the largest weight (Shares has them all).
	Model string
	// Period is the period the model used.
	Period Period
	// Fallback says why the requested or detected model was not used (a weekly cycle with less
	// than two weeks of history runs the daily model; no cycle runs Holt; the mix of experts
	// did not beat a seasonal-naive baseline over the last eight weeks, which then forecasts alone;
	// the load broke away from every forecast for twelve hours, and same time yesterday (re-shaped
	// on a load with a cycle) follows it — a "level break"; it was off every one by more than 20 %
	// for twelve hours, and the forecast moved 70 % of the way to that — a "level shift"; a
	// level break was "not followed", following the load's earlier ones having lost); empty when
	// it was.
	Fallback string
	// Shares is the weight each expert carries in Point, largest first, summing to 1.
	Shares []Share
}

// Share is one expert's weight in a forecast.
type Share struct {
	// Model names the expert as Forecast.Model does.
	Model string
	// Weight is its share of the forecast, in (0, 1].
	Weight float64
}

func (o Options) withDefaults() (Options, error) {
	if o.Horizon <= 0 {
		return o, fmt.Errorf("horizon %s: must be positive", o.Horizon)
	}
	if o.Margin == 0 {
		o.Margin = DefaultMargin
	}
	if !(o.Margin >= 0.5 && o.Margin < 1) { // NaN fails both comparisons
		return o, fmt.Errorf("margin %g: must be a quantile in [0.5, 1)", o.Margin)
	}
	if o.Cycles == 0 {
		o.Cycles = DefaultCycles
	}
	if o.Cycles < 1 {
		return o, fmt.Errorf("cycles %d: must be at least 1", o.Cycles)
	}
	if o.RefitEvery == 0 {
		o.RefitEvery = Day
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	return o, nil
}

// Predict forecasts the value at now+opts.Horizon from the samples of history observed before
// now. With no detectable period, or less than two periods of history, it falls back to the
// non-seasonal model and says why in Forecast.Fallback.
func Predict(history Series, now time.Time, opts Options) (Forecast, error) {
	h := history.Until(now)
	last := h.Len() - 1
	for last >= 0 && h.Values[last] != h.Values[last] { // skip trailing NaN
		last--
	}
	if last < 0 {
		return Forecast{}, fmt.Errorf("forecasting %s ahead of %s: %w", opts.Horizon, now.Format(time.RFC3339), ErrTooLittleHistory)
	}
	// The horizon counts from now, not from the last sample, so a scrape lag adds to it.
	opts.Horizon += now.Sub(h.TimeAt(last))
	w, err := NewWalker(Series{Start: h.Start, Step: h.Step, Values: h.Values[:last+1]}, opts)
	if err != nil {
		return Forecast{}, err
	}
	return w.At(last)
}

// ParseDuration is time.ParseDuration extended with days ("1d", "1d12h") and weeks ("2w"), the
// units forecasts are spoken in.
func ParseDuration(s string) (time.Duration, error) {
	var total time.Duration
	rest := s
	for _, u := range []struct {
		suffix byte
		unit   time.Duration
	}{{'w', Week}, {'d', Day}} {
		i := strings.IndexByte(rest, u.suffix)
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q: %q is not a whole number of %cs", s, rest[:i], u.suffix)
		}
		total += time.Duration(n) * u.unit
		rest = rest[i+1:]
	}
	if rest == "" {
		if total == 0 && s == "" {
			return 0, fmt.Errorf("duration %q: empty", s)
		}
		return total, nil
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return total + d, nil
}
