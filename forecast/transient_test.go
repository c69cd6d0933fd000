package forecast

import (
	"math"
	"testing"
)

// TestTransientMasked: on an hourly diurnal series of three weeks, an outage or a spike of at
// most transientMax on one day is masked (its points become the load at that time on the days
// around it) and nothing else is; a level change, a dip that recurs every week and a drop
// longer than transientMax are left as they are.
func TestTransientMasked(t *testing.T) {
	const day9 = 9 * 24
	for _, c := range []struct {
		name   string
		factor func(i int) float64 // the load's factor at hour i
		masked func(i int) bool    // the hours that must be masked
	}{
		{"an 11-hour outage", func(i int) float64 {
			if i >= day9+3 && i <= day9+13 {
				return 0.25
			}
			return 1
		}, func(i int) bool { return i >= day9+3 && i <= day9+13 }},
		{"a 4-hour spike", func(i int) float64 {
			if i >= day9+10 && i < day9+14 {
				return 4
			}
			return 1
		}, func(i int) bool { return i >= day9+10 && i < day9+14 }},
		{"a level change", func(i int) float64 {
			if i >= day9+5 {
				return 4
			}
			return 1
		}, nil},
		{"a weekly dip", func(i int) float64 {
			if h := i % (7 * 24); h >= 2*24+3 && h <= 2*24+13 {
				return 0.25
			}
			return 1
		}, func(i int) bool { return i >= 2*24+3 && i <= 2*24+13 }}, // the first one: nothing is known before it
		{"a 20-hour drop", func(i int) float64 {
			if i >= day9+3 && i < day9+23 {
				return 0.25
			}
			return 1
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := synthetic(21*24, func(i int) float64 { return c.factor(i) * (daily(i) + 3*noise(i)) }, nil)
			got := transientMasked(s)
			for i, v := range got {
				switch {
				case c.masked != nil && c.masked(i):
					if math.Abs(v-daily(i)) > 0.1*daily(i) {
						t.Errorf("hour %d: %.1f, want it masked to about %.1f (the load was %.1f)", i, v, daily(i), s.Values[i])
					}
				case v != s.Values[i]:
					t.Errorf("hour %d: %.1f, want it left at %.1f", i, v, s.Values[i])
				}
			}
		})
	}
}

// TestWeeklyBaselinesSkipAnOutage: two weeks of a diurnal load with an 11-hour outage on day 6
// (ec2_cpu_utilization_825cc2's shape). A day ahead, on day 13, the forecast at the outage's
// hours does not repeat it: its error there is at most a third of same time last week's, which
// repeats it (0.75 of the load; 0.75 for the forecaster too without the masking).
func TestWeeklyBaselinesSkipAnOutage(t *testing.T) {
	const out = 6 * 24
	s := synthetic(15*24, func(i int) float64 {
		if i >= out+3 && i <= out+13 {
			return 25
		}
		return daily(i) + 3*noise(i)
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var mine, lastWeek, load float64
	for T := out + 7*24 + 3; T <= out+7*24+13; T++ {
		fc, err := w.At(T - 24)
		if err != nil {
			t.Fatal(err)
		}
		mine += math.Abs(fc.Point - s.Values[T])
		lastWeek += math.Abs(s.Values[T-7*24] - s.Values[T])
		load += s.Values[T]
	}
	t.Logf("WAPE over the outage's hours a week later: %.3f; same time last week's %.3f", mine/load, lastWeek/load)
	if mine > lastWeek/3 {
		t.Errorf("WAPE %.3f over the outage's hours a week later, same time last week's %.3f: the outage is repeated", mine/load, lastWeek/load)
	}
}

// TestWeeklyBaselinesMaskOnlyBehindTheOrigin: the mask of a point reads up to
// transientLookahead after it, so the weekly baselines read the masked series only when the
// points they read are that far behind the origin: at one and four days ahead, not at five or seven.
func TestWeeklyBaselinesMaskOnlyBehindTheOrigin(t *testing.T) {
	s := synthetic(21*24, func(i int) float64 {
		if i >= 9*24+3 && i <= 9*24+13 {
			return 10
		}
		return daily(i)
	}, nil)
	yw := transientMasked(s)
	if &yw[0] == &s.Values[0] {
		t.Fatal("the outage was not masked")
	}
	for _, c := range []struct {
		h      int
		masked bool
	}{{24, true}, {4 * 24, true}, {5 * 24, false}, {7 * 24, false}} {
		for _, e := range newBaselines(s, c.h, yw) {
			if e.period != PeriodWeek {
				continue
			}
			if got := &e.y[0] == &yw[0]; got != c.masked {
				t.Errorf("horizon %d h, %s: reads the masked series %v, want %v", c.h, e.name, got, c.masked)
			}
		}
	}
}
