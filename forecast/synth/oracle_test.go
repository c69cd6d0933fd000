package synth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// TestOracleBadInput checks that Oracle and FilterOracle name what they cannot do.
func TestOracleBadInput(t *testing.T) {
	for name, oracle := range map[string]func(Family, uint64, time.Duration, time.Duration) (forecast.Series, error){"Oracle": Oracle, "FilterOracle": FilterOracle} {
		for _, tt := range []struct {
			f             Family
			horizon, step time.Duration
			want          string
		}{
			{Outage, forecast.Day, time.Hour, `family "outage" has one-off events`},
			{Family("tides"), forecast.Day, time.Hour, `family "tides": not one of`},
			{Web, forecast.Day, 45 * time.Minute, "step 45m0s: must be a whole multiple of the family's 30m0s"},
			{Web, 90 * time.Minute, time.Hour, "horizon 1h30m0s: must be a whole multiple of the step 1h0m0s"},
		} {
			if _, err := oracle(tt.f, 1, tt.horizon, tt.step); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s(%s, %s, %s): error %v, want one containing %q", name, tt.f, tt.horizon, tt.step, err, tt.want)
			}
		}
	}
}

// TestOracleKnowsTheNoise checks the oracle against the series it forecasts: deterministic, NaN
// only within the horizon of the start and where nothing is observed, and with less error an
// hour ahead than a day ahead (the noise's state at the origin says more the nearer the target)
// and a day ahead than same time yesterday.
func TestOracleKnowsTheNoise(t *testing.T) {
	for _, f := range []Family{Web, Batch, Gaps, Drift, Noisy} {
		s, err := Generate(f, 7)
		if err != nil {
			t.Fatal(err)
		}
		y, err := s.Resample(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wape := func(horizon time.Duration) float64 {
			o, err := Oracle(f, 7, horizon, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Oracle(f, 7, horizon, time.Hour)
			lead := y.Steps(horizon)
			var e, sum float64
			for T, v := range o.Values {
				switch {
				case math.IsNaN(v) != (T < lead || math.IsNaN(y.Values[T])):
					t.Fatalf("%s, %s ahead: point %d is NaN: %t, observed %t", f, horizon, T, math.IsNaN(v), !math.IsNaN(y.Values[T]))
				case !math.IsNaN(v) && v != again.Values[T]:
					t.Fatalf("%s: two calls differ at point %d", f, T)
				case !math.IsNaN(v) && T >= 2*y.Steps(forecast.Week):
					e += math.Abs(y.Values[T] - v)
					sum += y.Values[T]
				}
			}
			return e / sum
		}
		var naive, sum float64
		day := y.Steps(forecast.Day)
		for T := 2 * y.Steps(forecast.Week); T < y.Len(); T++ {
			if !math.IsNaN(y.Values[T]) && !math.IsNaN(y.Values[T-day]) {
				naive += math.Abs(y.Values[T] - y.Values[T-day])
				sum += y.Values[T]
			}
		}
		hour, dayAhead := wape(time.Hour), wape(forecast.Day)
		t.Logf("%s: oracle WAPE an hour ahead %.4f, a day ahead %.4f; same time yesterday %.4f", f, hour, dayAhead, naive/sum)
		if !(hour < dayAhead && dayAhead < naive/sum) {
			t.Errorf("%s: oracle WAPE an hour ahead %.4f, a day ahead %.4f, same time yesterday %.4f: want them increasing", f, hour, dayAhead, naive/sum)
		}
	}
}

// TestFilterOracleBetween checks the oracle that estimates the noise's state from the values
// (FilterOracle) against the one that knows it (Oracle), one that knows nothing of it (futures
// from a state of 0) and same time yesterday. An hour ahead, where the state says most, it errs
// more than the one that knows (its estimate is not the state) and by at least 3 % less than
// the one that knows nothing (its estimate carries part of the state; a filter that ignored the
// values would tie with it), and less than a day ahead; a day ahead, less than same time
// yesterday.
func TestFilterOracleBetween(t *testing.T) {
	for _, f := range []Family{Web, Batch, Gaps, Drift, Noisy} {
		for _, seed := range []uint64{7, 8} {
			s, err := Generate(f, seed)
			if err != nil {
				t.Fatal(err)
			}
			y, err := s.Resample(time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			from, day := 2*y.Steps(forecast.Week), y.Steps(forecast.Day)
			wape := func(forecastOf func(T int) float64) float64 {
				var e, sum float64
				for T := from; T < y.Len(); T++ {
					if v := forecastOf(T); !math.IsNaN(v) && !math.IsNaN(y.Values[T]) {
						e += math.Abs(y.Values[T] - v)
						sum += y.Values[T]
					}
				}
				return e / sum
			}
			of := func(o forecast.Series) func(int) float64 { return func(T int) float64 { return o.Values[T] } }
			var knows, filtered [2]float64
			for i, h := range []time.Duration{time.Hour, forecast.Day} {
				o, err := Oracle(f, seed, h, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				fo, err := FilterOracle(f, seed, h, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				knows[i], filtered[i] = wape(of(o)), wape(of(fo))
			}
			naive := wape(func(T int) float64 { return y.Values[T-day] })
			// Knowing nothing of the state: futures drawn from the generator's start, 0.
			_, tr, err := generate(f, seed)
			if err != nil {
				t.Fatal(err)
			}
			r, draws, k := newRNG(seed), make([]float64, oracleDraws), int(time.Hour/s.Step)
			none := wape(func(T int) float64 {
				var js []int
				for j := T * k; j < (T+1)*k && j < s.Len(); j++ {
					if !math.IsNaN(s.Values[j]) {
						js = append(js, j)
					}
				}
				if len(js) == 0 {
					return math.NaN()
				}
				return tr.median(js[0]-1, js, r, draws, func() state { return state{} })
			})
			t.Logf("%s-%d: oracle WAPE %.4f an hour ahead, %.4f a day ahead; filter oracle %.4f, %.4f; no state %.4f; same time yesterday %.4f", f, seed, knows[0], knows[1], filtered[0], filtered[1], none, naive)
			if !(knows[0] < filtered[0] && filtered[0] < 0.97*none && filtered[0] < filtered[1] && filtered[1] < naive) {
				t.Errorf("%s-%d: an hour ahead oracle %.4f, filter oracle %.4f, no state %.4f; a day ahead filter oracle %.4f, same time yesterday %.4f: want the filter oracle between the oracle and 0.97 of no state an hour ahead, and better than same time yesterday a day ahead", f, seed, knows[0], filtered[0], none, filtered[1], naive)
			}
		}
	}
}
