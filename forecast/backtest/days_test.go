package backtest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// TestDaysAddUpToTheBacktest: the day-by-day scores (Config.Days) split the backtest's targets
// at midnights of the forecast's time zone — here New York's, over the week its clocks went
// forward (8 March 2015: a day of 23 hours) — and add up to its WAPE and its best baseline's.
func TestDaysAddUpToTheBacktest(t *testing.T) {
	name := "tune/tweets/Twitter_volume_UPS.csv"
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	s := loadTrace(t, name)
	r, err := Run(name, s, Config{Horizon: forecast.Day, Step: time.Hour, Options: forecast.Options{Location: loc}, Days: true})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resample(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Days) < 7 {
		t.Fatalf("%d days scored, want the 8 the scored week touches", len(r.Days))
	}
	// The actuals of each day, to weigh the days' WAPEs back into the whole's.
	ys := map[time.Time]float64{}
	for i := range rs.Len() {
		if y := rs.Values[i]; !math.IsNaN(y) && !rs.TimeAt(i).Before(r.From) {
			at := rs.TimeAt(i).In(loc)
			ys[time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, loc)] += math.Abs(y)
		}
	}
	targets := 0
	var errSum, baseSum, ySum float64
	for k, d := range r.Days {
		if l := d.Day.In(loc); l.Hour() != 0 || l.Minute() != 0 {
			t.Errorf("day %d starts at %s, not at midnight in %s", k, l, loc)
		}
		if k > 0 && !d.Day.Equal(r.Days[k-1].Day.AddDate(0, 0, 1)) {
			t.Errorf("day %d is %s, not the day after %s", k, d.Day, r.Days[k-1].Day)
		}
		if k > 0 && k < len(r.Days)-1 {
			want := int(d.Day.AddDate(0, 0, 1).Sub(d.Day) / time.Hour) // 23 on 8 March
			if d.Targets != want {
				t.Errorf("%s: %d targets, want %d (every hour of a whole day)", d.Day.Format("2006-01-02"), d.Targets, want)
			}
		}
		if d.Ratio == nil || math.Abs(*d.Ratio-d.WAPE/d.Baseline) > 1e-12 {
			t.Errorf("%s: ratio %v, want WAPE %.4f / baseline %.4f", d.Day.Format("2006-01-02"), d.Ratio, d.WAPE, d.Baseline)
		}
		if d.FellBack < 0 || d.FellBack > 1 {
			t.Errorf("%s: fell back %.3f, not a fraction", d.Day.Format("2006-01-02"), d.FellBack)
		}
		if d.FellBack == 1 && !strings.HasPrefix(d.Lead, "baseline/") && !strings.HasPrefix(d.Lead, "reshaped/") && d.Lead != forecast.FloorMedian {
			t.Errorf("%s: every forecast fell back, but %s led", d.Day.Format("2006-01-02"), d.Lead)
		}
		targets += d.Targets
		errSum += d.WAPE * ys[d.Day]
		baseSum += d.Baseline * ys[d.Day]
		ySum += ys[d.Day]
	}
	if targets != r.Targets {
		t.Errorf("the days hold %d targets, the backtest %d", targets, r.Targets)
	}
	if got := errSum / ySum; math.Abs(got-r.WAPE) > 1e-9*r.WAPE {
		t.Errorf("the days' WAPEs weigh up to %.6f, the backtest's is %.6f", got, r.WAPE)
	}
	if got, want := baseSum/ySum, r.Baselines[r.BestBaselineName]; math.Abs(got-want) > 1e-9*want {
		t.Errorf("the days' baseline WAPEs weigh up to %.6f, %s's is %.6f", got, r.BestBaselineName, want)
	}
}

// TestDaysLeaveOutADayOfZeros: a day whose actuals are all zero has no WAPE; it is left out of
// the days, and the others still hold every other target. Without the flag there are no days.
func TestDaysLeaveOutADayOfZeros(t *testing.T) {
	start := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC) // a Monday
	s := forecast.Series{Start: start, Step: time.Hour, Values: make([]float64, 15*24)}
	for i := range s.Values {
		s.Values[i] = 100 + 50*math.Sin(2*math.Pi*float64(i%24)/24) + float64(i%7)
	}
	zero := start.AddDate(0, 0, 10) // in the scored second week
	for i := range 24 {
		s.Values[10*24+i] = 0
	}
	r, err := Run("zeros", s, Config{Horizon: forecast.Day, Step: time.Hour, Days: true})
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for _, d := range r.Days {
		if d.Day.Equal(zero) {
			t.Errorf("%s, a day of zeros, is scored: WAPE %.3f", zero.Format("2006-01-02"), d.WAPE)
		}
		targets += d.Targets
	}
	if len(r.Days) == 0 || targets != r.Targets-24 {
		t.Errorf("%d days hold %d targets, want all but the 24 of the day of zeros (%d)", len(r.Days), targets, r.Targets-24)
	}
	plain, err := Run("zeros", s, Config{Horizon: forecast.Day, Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Days != nil {
		t.Errorf("%d days scored without Config.Days", len(plain.Days))
	}
}
