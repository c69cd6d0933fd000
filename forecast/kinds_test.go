package forecast

import (
	"math"
	"testing"
	"time"
)

// weekendLoad is an hourly load on its own clock from a Monday 00:00: the daily shape, at half of it
// on Saturdays and Sundays, with 15 % noise.
func weekendLoad(i int) float64 {
	f := daily(i) * (1 + 0.15*noise(300000+i))
	if d := i / 24 % 7; d >= 5 {
		f *= 0.5
	}
	return f
}

// zoned is the load of weekendLoad over n hours as read in UTC when its clock is zone ahead of UTC.
func zoned(n int, zone time.Duration) Series {
	s := synthetic(n, weekendLoad, nil)
	s.Start = s.Start.Add(-zone)
	return s
}

// TestWeekendPhaseReadFromTheLoad: the weekend of a load whose clock is not UTC's is found from
// its values (the hour of the week it starts, counted from Saturday 00:00 UTC), the calendar's
// is kept on a load whose weekend is the calendar's, and none is read before a whole week or
// from a load with no weekend.
func TestWeekendPhaseReadFromTheLoad(t *testing.T) {
	n := 6 * 7 * 24
	for _, zone := range []int{0, 8, -7, 13, -36} {
		s := zoned(n, time.Duration(zone)*time.Hour)
		want := ((-zone)%hoursInWeek + hoursInWeek) % hoursInWeek
		if got := bestPhase(weekMeans(s, time.UTC, n-1)); got != want {
			t.Errorf("clock %+dh: weekend from hour %d of the week, want %d", zone, got, want)
		}
		if means := weekMeans(s, time.UTC, 6*24); means != nil {
			t.Errorf("clock %+dh: weeks read from six days of history, want none before a whole week", zone)
		}
		// One week is enough for a weekend that stands out (phaseOneWeekGain): without noise.
		clean := synthetic(n, func(i int) float64 {
			if i/24%7 >= 5 {
				return 0.5 * daily(i)
			}
			return daily(i)
		}, nil)
		clean.Start = clean.Start.Add(-time.Duration(zone) * time.Hour)
		if got := bestPhase(weekMeans(clean, time.UTC, 8*24)); got != want {
			t.Errorf("clock %+dh, no noise, eight days of history: weekend from hour %d of the week, want %d", zone, got, want)
		}
	}
	flat := synthetic(n, func(i int) float64 { return daily(i) * (1 + 0.05*noise(300000+i)) }, nil)
	if got := bestPhase(weekMeans(flat, time.UTC, n-1)); got != 0 {
		t.Errorf("a load with no weekend: weekend from hour %d, want the calendar's (0)", got)
	}
}

// TestWeekendPhaseIgnoresAWanderingLoad: a level that wanders, with no cycle of the week, is
// read for a weekend at every day boundary: six of them show one (when written), none for two
// days running, and the calendar's stays (phaseAt).
func TestWeekendPhaseIgnoresAWanderingLoad(t *testing.T) {
	level := 0.0
	s := synthetic(8*7*24, func(i int) float64 {
		level += 0.05 * noise(500000+i)
		if noise(600000+i) > 0.995 {
			level += 0.5 * noise(700000+i) // an occasional jump
		}
		return 100 * math.Exp(level)
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < s.Len(); d += 24 {
		if p := w.phaseAt(d); p != 0 {
			t.Errorf("day %d: weekend from hour %d of the week on a wandering load, want the calendar's", d/24, p)
		}
	}
}

// TestWalkFollowsAWeekendOffTheCalendar: the one-day-ahead forecasts of a weekly load read eight
// hours off its clock are as good as on its own clock once two weeks show its weekend (0.0772
// against 0.0769 when written), and the weekend read from it is what makes them so: with the
// calendar's, 0.0807.
func TestWalkFollowsAWeekendOffTheCalendar(t *testing.T) {
	n := 6 * 7 * 24
	wape := func(s Series, calendar bool) float64 {
		w, err := NewWalker(s, Options{Horizon: Day})
		if err != nil {
			t.Fatal(err)
		}
		if calendar {
			for d := 0; d < n; d += 24 {
				w.phases[d], w.phaseFrom[d] = 0, -1 // the calendar's weekend throughout
			}
		}
		var errSum, ySum float64
		for T := 3 * 7 * 24; T < n; T++ {
			fc, err := w.At(T - w.h)
			if err != nil {
				t.Fatal(err)
			}
			errSum += math.Abs(s.Values[T] - fc.Point)
			ySum += s.Values[T]
		}
		return errSum / ySum
	}
	own := wape(zoned(n, 0), false)
	read := wape(zoned(n, 8*time.Hour), false)
	calendar := wape(zoned(n, 8*time.Hour), true)
	t.Logf("WAPE of the last three weeks: %.4f on its own clock, %.4f eight hours off with the weekend read from the load, %.4f with the calendar's", own, read, calendar)
	if read > 1.02*own {
		t.Errorf("eight hours off its clock the WAPE is %.4f, want within 2 %% of %.4f", read, own)
	}
	if read > 0.97*calendar {
		t.Errorf("reading the weekend from the load took the WAPE from %.4f to %.4f, want 3 %% less", calendar, read)
	}
}

// TestWeekendFlagsFollowTheZone: the flags computed per zone period are inWeekend of each point's
// hour of the week, the point converted on its own, across daylight-saving changes, zones whose offset is not a whole number
// of hours or minutes (Monrovia was −0:44:30 until 1972), grids that do not divide an hour, and
// times before 1970.
func TestWeekendFlagsFollowTheZone(t *testing.T) {
	for _, zone := range []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "Africa/Monrovia", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("loading %s: %v", zone, err)
		}
		for _, start := range []time.Time{
			time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1971, 12, 20, 7, 13, 0, 0, time.UTC),
			time.Date(1969, 12, 20, 23, 59, 30, 0, time.UTC),
			time.Date(2024, 10, 20, 1, 2, 3, 0, time.UTC),
		} {
			for _, step := range []time.Duration{time.Minute, 7 * time.Minute, time.Hour, 90 * time.Second} {
				s := Series{Start: start, Step: step, Values: make([]float64, int(40*Day/step))}
				for _, phase := range []int{0, 17, 100} {
					got := weekendFlags(s, s.Len(), loc, phase)
					for i := range got {
						if want := inWeekend(hourOfWeek(s.TimeAt(i).In(loc)), phase); got[i] != want {
							t.Fatalf("%s from %s every %s, phase %d: point %d (%s) weekend %v, want %v", zone, start, step, phase, i, s.TimeAt(i).In(loc), got[i], want)
						}
					}
				}
			}
		}
	}
}
