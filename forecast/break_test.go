package forecast

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestFollowsALevelBreak: a daily series whose load goes to 4× for good at hour 5 of day 30.
// Forecasting a day ahead, the experts cannot be judged on the new level before day 31; once
// the load has been above every forecast for six hours by as much as twelve hours at 1.5× would
// be (breakRiseWindow), the forecast is same time yesterday, which follows the new level. A six-hour outage on day 24 is no break, and an hour ahead
// nothing is: there the weights see a break within the hour.
func TestFollowsALevelBreak(t *testing.T) {
	const jump = 30*24 + 5
	level := func(i int) float64 {
		switch {
		case i >= jump:
			return 4
		case i >= 24*24+8 && i < 24*24+14:
			return 0.1
		}
		return 1
	}
	s := synthetic(36*24, func(i int) float64 { return level(i) * (daily(i) + 3*noise(i)) }, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	broke := func(fc Forecast) bool { return strings.Contains(fc.Fallback, "level break") }
	var errAfter, newLevel float64
	for o := 20 * 24; o+24 < s.Len(); o++ {
		fc, err := w.At(o)
		if err != nil {
			t.Fatalf("origin %d: %v", o, err)
		}
		switch {
		case o < jump && broke(fc):
			t.Errorf("origin %d (before the jump; the outage ends at %d): %q, want no break", o, 24*24+14, fc.Fallback)
		case o >= jump+7 && o < jump+24:
			if !broke(fc) || fc.Model != "baseline/"+BaselineNaiveDay {
				t.Errorf("origin %d, %d hours after the jump: model %s, %q, want same time yesterday for a level break", o, o-jump, fc.Model, fc.Fallback)
			}
			errAfter += math.Abs(s.Values[o+24] - fc.Point)
			newLevel += s.Values[o+24]
		}
	}
	t.Logf("targets of origins 7–23 hours after the jump: WAPE %.3f", errAfter/newLevel)
	if errAfter > 0.1*newLevel {
		t.Errorf("WAPE %.3f on the targets of origins 7–23 hours after the jump, want ≤ 0.1 (the new level)", errAfter/newLevel)
	}

	hourly, err := NewWalker(s, Options{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for o := jump; o < jump+24; o++ {
		if fc, err := hourly.At(o); err != nil || broke(fc) {
			t.Errorf("an hour ahead, origin %d: %q, %v: want no break below the %s window", o, fc.Fallback, err, breakWindow)
		}
	}
}
