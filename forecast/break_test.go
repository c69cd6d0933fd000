package forecast

import (
	"fmt"
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

// surgeAt returns a load's level for a surge of 3× over hours [from, from+20).
func surgeAt(from int) func(i int) float64 {
	return func(i int) float64 {
		if i >= from && i < from+20 {
			return 3
		}
		return 1
	}
}

// walkBreaks forecasts from the origins of [from, to) and counts the forecasts that follow a
// level break and those that say one was not followed; seen, when not nil, sees each forecast.
func walkBreaks(t *testing.T, w *Walker, from, to int, seen func(o int, fc Forecast)) (followed, unfollowed int) {
	t.Helper()
	for o := from; o < to; o++ {
		fc, err := w.At(o)
		if err != nil {
			t.Fatalf("origin %d: %v", o, err)
		}
		if strings.Contains(fc.Fallback, "level break") {
			followed++
		}
		if strings.Contains(fc.Fallback, "not followed") {
			unfollowed++
		}
		if seen != nil {
			seen(o, fc)
		}
	}
	return followed, unfollowed
}

// TestANoisyLoadsSurgeIsNoBreak: a daily load under noise of up to ±80 % an hour, its
// forecasts off by about 40 % in the median, surges to 3× for twenty hours on day 24. On the
// same load with ±5 % noise that surge is taken for a level break (its first: nothing says yet
// that this load's breaks pass); on the noisy one it is not (breakNoise), and the forecasts made
// during it do not copy it into the next day.
func TestANoisyLoadsSurgeIsNoBreak(t *testing.T) {
	const surge = 24*24 + 6
	level := surgeAt(surge)
	for _, c := range []struct {
		name  string
		noise float64
		broke bool
	}{{"quiet", 0.05, true}, {"noisy", 0.8, false}} {
		t.Run(c.name, func(t *testing.T) {
			s := synthetic(28*24, func(i int) float64 { return level(i) * daily(i) * (1 + c.noise*noise(i)) }, nil)
			w, err := NewWalker(s, Options{Horizon: Day})
			if err != nil {
				t.Fatal(err)
			}
			most := 0.0
			broke, _ := walkBreaks(t, w, surge, surge+20, func(o int, fc Forecast) { most = max(most, fc.Point/daily(o+24)) })
			noise := w.breakNoiseAt(floorTo(surge+19, w.mixEvery))
			t.Logf("%d of 20 forecasts made in the surge follow a level break; the forecasts' median error %.2f; the largest forecast %.2f× the usual load", broke, noise, most)
			if (broke > 0) != c.broke {
				t.Errorf("%d forecasts made in the surge follow a level break, want some: %v", broke, c.broke)
			}
			if !c.broke && most > 2 {
				t.Errorf("a forecast made in the surge is %.2f× the usual load of its target, want the surge (3×) not copied (≤ 2×)", most)
			}
		})
	}
}

// TestBreaksJudgedOnTheLoadsOwnBreaks: a daily load that surges to 3× for twenty hours on day
// 17 and again on day 24. The first surge is taken for a level break and followed — repeated a
// day later, since it passed; the second is taken for one too, but following the first lost to
// the plain forecast, so it is not followed (followsBreaks). A load that moves to 3× for good on
// day 17 and to 9× on day 24 has both followed: following the first paid.
func TestBreaksJudgedOnTheLoadsOwnBreaks(t *testing.T) {
	const first, second = 17*24 + 6, 24*24 + 6
	for _, c := range []struct {
		name   string
		level  func(i int) float64
		second bool // the second break is followed
	}{
		{"surges", func(i int) float64 { return surgeAt(first)(i) * surgeAt(second)(i) }, false},
		{"steps", func(i int) float64 {
			switch {
			case i >= second:
				return 9
			case i >= first:
				return 3
			}
			return 1
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := synthetic(28*24, func(i int) float64 { return c.level(i) * daily(i) * (1 + 0.05*noise(i)) }, nil)
			w, err := NewWalker(s, Options{Horizon: Day})
			if err != nil {
				t.Fatal(err)
			}
			n1, _ := walkBreaks(t, w, first, first+20, nil)
			n2, said := walkBreaks(t, w, second, second+20, nil)
			if !c.second && said == 0 {
				t.Errorf("no forecast made in the second surge says its break was not followed")
			}
			broke := 0
			for o := second; o < second+20; o++ {
				if w.breakAt(floorTo(o, w.mixEvery)) == hardBreak {
					broke++
				}
			}
			t.Logf("followed: %d forecasts of the first break's 20 hours, %d of the second's (a break found at %d of them)", n1, n2, broke)
			if n1 == 0 {
				t.Errorf("no forecast made in the first break follows it, want its first break followed")
			}
			if broke == 0 {
				t.Fatalf("no break found in the second surge or step: the test shows nothing")
			}
			if (n2 > 0) != c.second {
				t.Errorf("%d forecasts made in the second break follow it, want some: %v", n2, c.second)
			}
		})
	}
}

// TestBreaksJudgedOnLossesBeyondTheNoise: a daily load doubles on day 12 for a day and a half or
// for a day and a quarter, then triples for good on day 26. Following the first break forecasts
// the day after it as doubled, which holds for the targets of its first hours and not for the
// rest: over 36 hours it loses a few percent of the load to the plain forecast — less than the
// forecasts' usual error, no evidence against following — and the jump is followed; over 30
// hours it loses half the load, and the jump is not (followsBreaks).
func TestBreaksJudgedOnLossesBeyondTheNoise(t *testing.T) {
	const bump, jump = 12*24 + 5, 26*24 + 5
	for _, c := range []struct {
		hours    int
		followed bool
	}{{36, true}, {30, false}} {
		t.Run(fmt.Sprintf("%d hours", c.hours), func(t *testing.T) {
			s := synthetic(30*24, func(i int) float64 {
				v := daily(i) * (1 + 0.05*noise(i))
				if i >= bump && i < bump+c.hours {
					v *= 2
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
			followed, _ := walkBreaks(t, w, jump+8, jump+20, nil)
			u := floorTo(jump-1, w.mixEvery)
			w.followsBreaks(u)
			n, loss, load := w.breakSums.over(0, u)
			noise := w.breakNoiseAt(u)
			t.Logf("before the jump: %d targets of the first break, following lost %.1f %% of their load (the forecasts' median error %.1f %%); %d of 12 forecasts after the jump follow it",
				n, 100*loss/load, 100*noise, followed)
			if n == 0 || loss <= 0 || (loss > noise*load) == c.followed {
				t.Fatalf("following the first break lost %.0f of %.0f over %d targets, want a loss %s the forecasts' usual error: the test shows nothing", loss, load, n, map[bool]string{true: "within", false: "beyond"}[c.followed])
			}
			if want := map[bool]int{true: 12, false: 0}[c.followed]; followed != want {
				t.Errorf("%d of the 12 forecasts made 8–19 hours after the jump follow the break, want %d", followed, want)
			}
		})
	}
}
