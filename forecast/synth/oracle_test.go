package synth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// TestOracleBadInput checks that Oracle names what it cannot do.
func TestOracleBadInput(t *testing.T) {
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
		if _, err := Oracle(tt.f, 1, tt.horizon, tt.step); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Oracle(%s, %s, %s): error %v, want one containing %q", tt.f, tt.horizon, tt.step, err, tt.want)
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
