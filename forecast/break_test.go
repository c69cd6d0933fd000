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
// be (breakRiseWindow), the forecast is the break follower — same time yesterday re-shaped by
// the weekday/weekend profile, on this load with no weekend same time yesterday — which follows
// the new level. A six-hour outage on day 24 is no break, and an hour ahead
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
			if !broke(fc) || fc.Model != "reshaped/weekday-weekend" {
				t.Errorf("origin %d, %d hours after the jump: model %s, %q, want same time yesterday re-shaped for a level break", o, o-jump, fc.Model, fc.Fallback)
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

// TestMovesTowardsAModerateShift: a daily series whose load goes to 0.7× for good at hour 5 of
// day 30 — less than the 1/1.5 of a level break. Once every forecast made for the last twelve
// hours is more than 20 % above the load, the forecast goes most of the way (softBreakShare) to
// same time yesterday, which shows the new level; before the shift no forecast does, and none at an hour ahead.
func TestMovesTowardsAModerateShift(t *testing.T) {
	const shift = 30*24 + 5
	s := synthetic(36*24, func(i int) float64 {
		level := 1.0
		if i >= shift {
			level = 0.7
		}
		return level * (daily(i) + 3*noise(i))
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	moved := func(fc Forecast) bool { return strings.Contains(fc.Fallback, "level shift") }
	var errMoved, errPlain, newLevel float64
	for o := 20 * 24; o+24 < s.Len(); o++ {
		fc, err := w.At(o)
		if err != nil {
			t.Fatalf("origin %d: %v", o, err)
		}
		switch {
		case o < shift && moved(fc):
			t.Errorf("origin %d (before the shift): %q, want no shift", o, fc.Fallback)
		case o >= shift+13 && o < shift+24:
			if !moved(fc) || strings.Contains(fc.Fallback, "level break") {
				t.Fatalf("origin %d, %d hours after the shift: %q, want the forecast moved towards same time yesterday and no level break", o, o-shift, fc.Fallback)
			}
			plain, ok := w.plainForecast(o + 24)
			if !ok {
				t.Fatalf("origin %d: no plain forecast", o)
			}
			y := s.Values[o+24]
			errMoved += math.Abs(y - fc.Point)
			errPlain += math.Abs(y - plain)
			newLevel += y
		}
	}
	t.Logf("targets of origins 13–23 hours after the shift: WAPE %.3f moved, %.3f as the mix forecast it", errMoved/newLevel, errPlain/newLevel)
	if errMoved > 0.6*errPlain {
		t.Errorf("WAPE %.3f moved against %.3f unmoved, want at most 0.6 of it", errMoved/newLevel, errPlain/newLevel)
	}

	hourly, err := NewWalker(s, Options{Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for o := shift; o < shift+24; o++ {
		if fc, err := hourly.At(o); err != nil || moved(fc) {
			t.Errorf("an hour ahead, origin %d: %q, %v: want no shift below the %s window", o, fc.Fallback, err, breakWindow)
		}
	}
}

// TestBreakFollowsTheWeekendShape: a load whose weekends run at 0.4 of its weekdays triples for
// good on a Friday at 05:00. Forecasting a day ahead, the Friday origins after the break is
// taken forecast Saturday: same time yesterday would forecast it as the tripled Friday was,
// where Saturdays are 0.4 of that. The break follower re-shapes it by the weekday/weekend
// profile and forecasts the new level on the weekend's shape: its error on those targets is
// under a quarter of same time yesterday's.
func TestBreakFollowsTheWeekendShape(t *testing.T) {
	const friday = 4*7 + 4 // 2024-01-01 is a Monday
	const jump = friday*24 + 5
	weekend := func(i int) bool { return i/24%7 >= 5 }
	s := synthetic((friday+3)*24, func(i int) float64 {
		v := daily(i) * (1 + 0.05*noise(i))
		if weekend(i) {
			v *= 0.4
		}
		if i >= jump {
			v *= 3
		}
		return v
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var errFc, errNaive float64
	n := 0
	for o := jump + 8; o < (friday+1)*24; o++ {
		fc, err := w.At(o)
		if err != nil {
			t.Fatalf("origin %d: %v", o, err)
		}
		if !strings.Contains(fc.Fallback, "level break") || fc.Model != "reshaped/weekday-weekend" {
			t.Errorf("origin %d, %d hours after the jump: model %s, %q, want the break followed by same time yesterday re-shaped", o, o-jump, fc.Model, fc.Fallback)
		}
		y := s.Values[o+24]
		errFc += math.Abs(y - fc.Point)
		errNaive += math.Abs(y - s.Values[o])
		n++
	}
	t.Logf("Saturday targets of %d Friday origins after the break: error %.0f, same time yesterday's %.0f", n, errFc, errNaive)
	if errFc > 0.25*errNaive {
		t.Errorf("error %.0f on the Saturday targets after the break, want under a quarter of same time yesterday's %.0f", errFc, errNaive)
	}
}
