package forecast

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestPathIndependent: everything a walker decides is decided on schedules counted from the
// first point, so a forecast from origin o is the same whether the walker walked every origin
// before o (a backtest) or was asked for o alone (Predict).
func TestPathIndependent(t *testing.T) {
	nyc := loadTrace(t, "tune/nab/nyc_taxi.csv")
	nyc.Values = nyc.Values[:7*7*48]
	for _, h := range []time.Duration{Day, time.Hour} {
		walked, err := NewWalker(nyc, Options{Horizon: h})
		if err != nil {
			t.Fatal(err)
		}
		origins := map[int]bool{3*7*48 + 5: true, 5*7*48 - 1: true, 6*7*48 + 31: true}
		for o := 2 * 7 * 48; o < nyc.Len()-walked.HorizonSteps(); o++ {
			want, err := walked.At(o)
			if err != nil {
				t.Fatal(err)
			}
			if !origins[o] {
				continue
			}
			fresh, _ := NewWalker(nyc, Options{Horizon: h})
			got, err := fresh.At(o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("horizon %s, origin %d: alone %+v, walked %+v", h, o, got, want)
			}
		}
	}
}

// weekly builds an hourly series of n points whose every week repeats the first one exactly: a
// daily shape with a level drawn per day of the week. Same time last week is exact on it; no
// model that averages days is.
func weekly(n int) Series {
	return synthetic(n, func(i int) float64 {
		return (1 + 0.4*noise(7000+i/24%7)) * daily(i)
	}, nil)
}

// TestFallsBackToAnExactBaseline: on a series that repeats every week exactly, once the mix
// has been judged against "same time last week" for long enough, it forecasts as that baseline,
// and says so.
func TestFallsBackToAnExactBaseline(t *testing.T) {
	s := weekly(6 * 7 * 24)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var fellBack int
	for o := 4 * 7 * 24; o < s.Len()-24; o++ {
		fc, err := w.At(o)
		if err != nil {
			t.Fatal(err)
		}
		if fc.Model == "baseline/"+BaselineNaiveWeek || fc.Model == "baseline/"+BaselineMeanWeeks {
			fellBack++
			if fc.Fallback == "" || len(fc.Shares) != 1 {
				t.Fatalf("origin %d: forecast by %s without saying so (fallback %q, shares %v)", o, fc.Model, fc.Fallback, fc.Shares)
			}
		}
		if T := o + 24; math.Abs(fc.Point-s.Values[T]) > 0.05*s.Values[T] && o >= 5*7*24 {
			t.Errorf("origin %d: forecast %g for %g, want within 5 %% in the last week", o, fc.Point, s.Values[T])
		}
	}
	if fellBack < 7*24 {
		t.Errorf("fell back to a weekly baseline at %d of the last two weeks' origins, want at least a week's", fellBack)
	}
}

// TestNoFallbackOnWeekdaysAlone: a batch workload whose job runs at the same minute every
// weekday and not at weekends, with a week of history and its first weekend ahead. "Same time
// yesterday" is exact on every weekday the mix has been judged on, but evidence without a
// weekend must not make it forecast the Saturday: it would copy Friday's job into it.
func TestNoFallbackOnWeekdaysAlone(t *testing.T) {
	// 2024-01-01 is a Monday; the series starts on the Saturday before (day 0) so that the
	// first week's forecasts are judged on weekdays only and day 7 is a Saturday.
	start := time.Date(2023, 12, 30, 0, 0, 0, 0, time.UTC)
	s := Series{Start: start, Step: time.Hour, Values: make([]float64, 9*24)}
	for i := range s.Values {
		v := 10 + noise(i)
		if d := start.Add(time.Duration(i) * time.Hour).Weekday(); d != time.Saturday && d != time.Sunday && i%24 >= 9 && i%24 < 13 {
			v += 40 // the weekday job
		}
		s.Values[i] = v
	}
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	for T := 7*24 + 9; T < 7*24+13; T++ { // Saturday 09:00–12:00
		fc, err := w.At(T - 24)
		if err != nil {
			t.Fatal(err)
		}
		if fc.Model == "baseline/"+BaselineNaiveDay || fc.Point > 30 {
			t.Errorf("Saturday %02d:00: forecast %.1f by %s (fallback %q), want no weekday job copied into the weekend", T%24, fc.Point, fc.Model, fc.Fallback)
		}
	}
}

// TestLevelShiftAndGaps: a daily shape whose level halves on day 30, with day 20 and day 33
// missing. The forecasts keep coming across the gaps. In the week after the shift the
// forecaster follows the new level, as same time yesterday does and same time last week cannot
// (it forecasts the old level for a week) — though a day later than same time yesterday: the
// weights need forecasts made after the shift to judge, and the first of those are scored a
// horizon after it (reached: 256 against 96 and 3607). In the week after that, when both
// baselines know the new level, it is no worse than the better of them.
func TestLevelShiftAndGaps(t *testing.T) {
	s := synthetic(45*24, func(i int) float64 {
		lv := 1.0
		if i >= 30*24 {
			lv = 0.5
		}
		return lv * (daily(i) + 3*noise(i))
	}, func(i int) bool { return i/24 == 20 || i/24 == 33 })
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var model, naiveDay, naiveWeek [2]float64 // days 32–37, days 38–44
	for T := 21 * 24; T < s.Len(); T++ {
		fc, err := w.At(T - 24)
		if err != nil {
			t.Fatalf("origin %d: %v", T-24, err)
		}
		y := s.Values[T]
		if math.IsNaN(y) || T < 32*24 || math.IsNaN(s.Values[T-24]) || math.IsNaN(s.Values[T-7*24]) {
			continue
		}
		k := 0
		if T >= 38*24 {
			k = 1
		}
		model[k] += math.Abs(y - fc.Point)
		naiveDay[k] += math.Abs(y - s.Values[T-24])
		naiveWeek[k] += math.Abs(y - s.Values[T-7*24])
	}
	t.Logf("absolute error on days 32–37: %.0f forecaster, %.0f same time yesterday, %.0f same time last week", model[0], naiveDay[0], naiveWeek[0])
	t.Logf("absolute error on days 38–44: %.0f forecaster, %.0f same time yesterday, %.0f same time last week", model[1], naiveDay[1], naiveWeek[1])
	if model[0] > 3*naiveDay[0] || model[0] > 0.1*naiveWeek[0] {
		t.Errorf("days 32–37: error %.0f, want at most 3× same time yesterday's %.0f and a tenth of last week's %.0f", model[0], naiveDay[0], naiveWeek[0])
	}
	if best := min(naiveDay[1], naiveWeek[1]); model[1] > best {
		t.Errorf("days 38–44: error %.0f, want at most the better baseline's %.0f", model[1], best)
	}
}

// TestHolidayIsNotRepeated: a weekly series with one holiday (day 30 at a third of its load).
// Same time last week repeats it on day 37; the forecaster, whose profiles are medians over
// weeks and days, does not.
func TestHolidayIsNotRepeated(t *testing.T) {
	s := synthetic(42*24, func(i int) float64 {
		v := (1 + 0.3*math.Sin(float64(i/24%7))) * (daily(i) + 2*noise(i))
		if i/24 == 30 {
			v /= 3
		}
		return v
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var model, naiveWeek float64
	for T := 37 * 24; T < 38*24; T++ {
		fc, err := w.At(T - 24)
		if err != nil {
			t.Fatal(err)
		}
		model += math.Abs(s.Values[T] - fc.Point)
		naiveWeek += math.Abs(s.Values[T] - s.Values[T-7*24])
	}
	t.Logf("absolute error on the day a week after the holiday: %.0f forecaster, %.0f same time last week", model, naiveWeek)
	if model > 0.25*naiveWeek {
		t.Errorf("error %.0f, want at most a quarter of same time last week's %.0f", model, naiveWeek)
	}
}

// lastWeeksErrors returns the absolute errors of experts a and b of walker w summed over the
// targets of the series' last four weeks, failing the test where either has no forecast.
func lastWeeksErrors(t *testing.T, w *Walker, a, b *track) (ea, eb float64) {
	t.Helper()
	for T := w.s.Len() - w.s.Steps(4*Week); T < w.s.Len(); T++ {
		fa, ok1 := w.forecastOf(a, T)
		fb, ok2 := w.forecastOf(b, T)
		if !ok1 || !ok2 {
			t.Fatalf("target %d: no forecast from %s (%t) or %s (%t)", T, a.name, ok1, b.name, ok2)
		}
		ea += math.Abs(w.s.Values[T] - fa)
		eb += math.Abs(w.s.Values[T] - fb)
	}
	return ea, eb
}

// TestLevelledExpertCarriesTheDay checks the levelled expert on a load whose level moves by the
// day and keeps most of the move the next day (an AR(1) day level, ρ = 0.8, 8 %): a day ahead it
// is a candidate and beats the profile it levels by more than a tenth, as the day's persistence
// promises; an hour ahead it is no candidate (levelHorizon). (With ρ = 0.6, as the synthetic
// traces have, the gain of a single four-week draw is within its noise: this one draws a lag-one
// correlation of 0.44 from it, and the last 24 hours before the origin hold part of the day
// before too.)
func TestLevelledExpertCarriesTheDay(t *testing.T) {
	dayLevel := make([]float64, 8*7)
	for d := 1; d < len(dayLevel); d++ {
		dayLevel[d] = 0.8*dayLevel[d-1] + 0.6*0.08*noise(100000+d)*math.Sqrt(3) // √(1−ρ²) = 0.6
	}
	s := synthetic(len(dayLevel)*24, func(i int) float64 {
		return daily(i) * math.Exp(dayLevel[i/24]) * (1 + 0.01*noise(i))
	}, nil)
	candidate := func(h time.Duration, name string) *track {
		w, err := NewWalker(s, Options{Horizon: h})
		if err != nil {
			t.Fatal(err)
		}
		w.At(s.Len() - 1) // detects the period and weighs the experts
		for _, tr := range w.candidates(s.Len() - 1) {
			if tr.name == name {
				return tr
			}
		}
		return nil
	}
	if candidate(time.Hour, "levelled/weekday-weekend") != nil {
		t.Errorf("the levelled expert is a candidate an hour ahead, want it only from %s", levelHorizon)
	}
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	w.At(s.Len() - 1)
	var lev, prof *track
	for _, tr := range w.candidates(s.Len() - 1) {
		switch tr.name {
		case "levelled/weekday-weekend":
			lev = tr
		case "profile/weekday-weekend":
			prof = tr
		}
	}
	if lev == nil || prof == nil {
		t.Fatalf("a day ahead the candidates lack the levelled expert (%v) or its profile (%v)", lev != nil, prof != nil)
	}
	el, ep := lastWeeksErrors(t, w, lev, prof)
	t.Logf("a day ahead over the last four weeks: levelled error %.0f, profile %.0f (%.3f)", el, ep, el/ep)
	if el > 0.9*ep {
		t.Errorf("levelled expert's error %.0f is %.3f of its profile's %.0f, want at most 0.9", el, el/ep, ep)
	}
	if b := lev.weightsAt(floorTo(s.Len()-1-w.h, w.refit), s.Steps(fitWindow))[2]; b < 0.4 {
		t.Errorf("fitted share of the last day's level %.2f on a day level with ρ = 0.8, want at least 0.4 (0.53 when written)", b)
	}
}

// TestLevelledExpertLearnsNoPersistence checks the fit of the levelled expert's share (levelAt)
// on a load whose day level is drawn afresh every day: the last day's level says nothing of the
// next, and the share fitted over eight weeks is near zero.
func TestLevelledExpertLearnsNoPersistence(t *testing.T) {
	s := synthetic(8*7*24, func(i int) float64 {
		return daily(i) * math.Exp(0.08*math.Sqrt(3)*noise(100000+i/24)) * (1 + 0.01*noise(i))
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	w.At(s.Len() - 1)
	for _, tr := range w.candidates(s.Len() - 1) {
		if tr.name == "levelled/weekday-weekend" {
			b := tr.weightsAt(floorTo(s.Len()-1-w.h, w.refit), s.Steps(fitWindow))[2]
			t.Logf("fitted share of the last day's level: %.3f", b)
			if b > 0.2 {
				t.Errorf("fitted share of the last day's level %.2f on independent day levels, want at most 0.2", b)
			}
			return
		}
	}
	t.Fatal("no levelled expert among the candidates a day ahead")
}

// TestTrendedExpertFollowsGrowth checks the trended expert on a weekly load growing 3 % a week
// under a persistent day level: the growth it reads (growthAt) is within 30 % of the load's
// (the day level's noise moves it: 21 % above when written), and a day ahead over the last four
// weeks its error is at most 0.9 of the levelled expert's (0.879 when written), whose six-week
// profile lags the growth by three weeks. An hour ahead it is no candidate.
func TestTrendedExpertFollowsGrowth(t *testing.T) {
	const growth = 0.03 // a week
	dayLevel := make([]float64, 8*7)
	for d := 1; d < len(dayLevel); d++ {
		dayLevel[d] = 0.6*dayLevel[d-1] + 0.8*0.04*noise(200000+d)*math.Sqrt(3) // √(1−ρ²) = 0.8
	}
	s := synthetic(len(dayLevel)*24, func(i int) float64 {
		v := daily(i) * math.Pow(1+growth, float64(i)/(7*24)) * math.Exp(dayLevel[i/24]) * (1 + 0.03*noise(i))
		if weekendAt(i) {
			v *= 0.6
		}
		return v
	}, nil)
	experts := func(h time.Duration) (*Walker, map[string]*track) {
		w, err := NewWalker(s, Options{Horizon: h})
		if err != nil {
			t.Fatal(err)
		}
		w.At(s.Len() - 1) // detects the period and weighs the experts
		byName := map[string]*track{}
		for _, tr := range w.candidates(s.Len() - 1) {
			byName[tr.name] = tr
		}
		return w, byName
	}
	if _, c := experts(time.Hour); c["trended/weekday-weekend"] != nil {
		t.Errorf("the trended expert is a candidate an hour ahead, want it only from %s", levelHorizon)
	}
	w, c := experts(Day)
	trend, lev := c["trended/weekday-weekend"], c["levelled/weekday-weekend"]
	if trend == nil || lev == nil {
		t.Fatalf("a day ahead the candidates lack the trended expert (%v) or the levelled one (%v)", trend != nil, lev != nil)
	}
	g := trend.weightsAt(floorTo(s.Len()-1-w.h, w.refit), s.Steps(fitWindow))[growthSlot]
	want := math.Log(1+growth) / 7
	t.Logf("growth read %.5f a day, the load's %.5f", g, want)
	if math.Abs(g-want) > 0.3*want {
		t.Errorf("growth read %.5f a day, want within 30 %% of the load's %.5f", g, want)
	}
	et, el := lastWeeksErrors(t, w, trend, lev)
	t.Logf("a day ahead over the last four weeks: trended error %.0f, levelled %.0f (%.3f)", et, el, et/el)
	if et > 0.9*el {
		t.Errorf("trended expert's error %.0f is %.3f of the levelled one's %.0f, want at most 0.9", et, et/el, el)
	}
}

// TestGrowthIgnoresTheWeekAndOutages checks growthAt on a load that does not grow: a weekend at
// half the weekdays' level, an outage day at 5 % and a week of holidays at 60 %, over 33 days
// (not a whole number of weeks). The growth it reads is within 0.05 % a day of zero (a
// least-squares slope through the same days reads the holidays and the outage, late in the
// window, as a fall); with fewer than growthMinDays days it is zero.
func TestGrowthIgnoresTheWeekAndOutages(t *testing.T) {
	s := synthetic(33*24, func(i int) float64 {
		v := daily(i) * (1 + 0.03*noise(i))
		switch d := i / 24; {
		case weekendAt(i):
			v *= 0.5
		case d == 24:
			v *= 0.05
		case d >= 15 && d < 22:
			v *= 0.6
		}
		return v
	}, nil)
	m := newSeasonal(s, PeriodDay, 24, DefaultCycles, time.UTC)
	g := m.growthAt(s.Len()-1, s.Steps(fitWindow))
	// A least-squares slope of the daily log means, for comparison.
	var sx, sy, sxx, sxy float64
	for d := 0; d < 33; d++ {
		sum := 0.0
		for i := d * 24; i < (d+1)*24; i++ {
			sum += s.Values[i]
		}
		x, y := float64(d), math.Log(sum/24)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	ls := (33*sxy - sx*sy) / (33*sxx - sx*sx)
	t.Logf("growth read %.5f a day; least squares %.5f", g, ls)
	if math.Abs(g) > 0.0005 {
		t.Errorf("growth read %.5f a day on a load that does not grow, want within 0.0005 of 0", g)
	}
	if g := m.growthAt((growthMinDays-1)*24-1, s.Steps(fitWindow)); g != 0 {
		t.Errorf("growth read %.5f a day from %d days, want 0 before %d days", g, growthMinDays-1, growthMinDays)
	}
}

// TestOneSpikeDoesNotDecideTheWeights checks the evidence cap on a load of 100 (5 % noise) that
// falls to 30 for good on its fifth day, four hours after a one-hour spike of 30,000 (as NAB's
// ec2_network_in_257a54 does). Scored on its second week, a day ahead, the forecaster is no
// further off than same time yesterday; with every error counted whole it was 2.0 times as far
// off (the spike, repeated a day later by same time yesterday, outweighed the profiles' errors
// after the fall).
func TestOneSpikeDoesNotDecideTheWeights(t *testing.T) {
	s := synthetic(14*24, func(i int) float64 {
		v := 100 * (1 + 0.05*noise(i))
		if i >= 4*24+14 {
			v *= 0.3
		}
		if i == 4*24+10 {
			v = 30000
		}
		return v
	}, nil)
	ratio := func(capped bool) float64 {
		w, err := NewWalker(s, Options{Horizon: Day})
		if err != nil {
			t.Fatal(err)
		}
		if !capped {
			for i := range w.evidence {
				w.evidence[i] = math.Inf(1) // every error counted whole
			}
		}
		var ef, en float64
		for T := 7 * 24; T < s.Len(); T++ {
			fc, err := w.At(T - w.h)
			if err != nil {
				t.Fatal(err)
			}
			ef += math.Abs(s.Values[T] - fc.Point)
			en += math.Abs(s.Values[T] - s.Values[T-24])
		}
		return ef / en
	}
	c, u := ratio(true), ratio(false)
	t.Logf("error over same time yesterday's: %.3f with the evidence capped, %.3f without", c, u)
	if c > 1+1e-9 {
		t.Errorf("error %.3f of same time yesterday's with the evidence capped, want at most 1", c)
	}
	if u < 1.5 {
		t.Errorf("error %.3f of same time yesterday's without the cap: the load no longer shows what the cap is for", u)
	}
}

// TestPairSumsKeptAtMixPoints: sums kept every few slots give, over windows from one kept slot to
// another, the sums kept at every slot, to the bit, extended in steps as a walk extends them; a
// window that starts between kept slots is refused loudly rather than summed wrong.
func TestPairSumsKeptAtMixPoints(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	errs := make([]float64, 2000)
	for i := range errs {
		errs[i] = r.ExpFloat64()
		if r.IntN(7) == 0 {
			errs[i] = math.NaN() // not scored
		}
	}
	err := func(T int) (float64, float64, bool) {
		e := errs[T]
		return e, e / 2, !math.IsNaN(e)
	}
	const stride, every = 5, 12 // one-minute data, hourly mix points
	for _, self := range []bool{false, true} {
		all := &pairSums{stride: stride, every: 1, size: len(errs) / stride, self: self}
		kept := &pairSums{stride: stride, every: every, size: len(errs) / stride, self: self}
		for u := 0; u < len(errs); u += stride * every {
			all.extend(u, err)
			kept.extend(u, err)
			for from := u - 4*stride*every; from <= u; from += stride * every {
				n1, a1, b1 := all.over(from+1, u)
				n2, a2, b2 := kept.over(from+1, u)
				if n1 != n2 || a1 != a2 || b1 != b2 {
					t.Fatalf("self %v, window (%d, %d]: kept sums %d %v %v, every slot's %d %v %v", self, from, u, n2, a2, b2, n1, a1, b1)
				}
			}
		}
	}
	p := &pairSums{stride: stride, every: every, size: len(errs) / stride}
	p.extend(len(errs)-1, err)
	defer func() {
		if recover() == nil {
			t.Fatal("a window starting between kept slots was summed")
		}
	}()
	p.over(3*stride+1, 24*stride*every)
}

// TestEvidenceKeptAtMixPointsChangesNoForecast: a walk whose versus sums are kept at mix points
// only (Walker.pairEvery) forecasts what one keeping them at every slot does, to the bit, on
// grids and refit intervals where the mix points fall on every twelfth slot, every sixth or
// fourth, and on a grid whose windows are no whole number of mix points (25 minutes), where every
// slot is kept.
func TestEvidenceKeptAtMixPointsChangesNoForecast(t *testing.T) {
	raw := loadTrace(t, "tune/crane-dsp/input1.csv")
	for _, c := range []struct {
		step, h, refit time.Duration
		every          int
	}{
		{time.Minute, 15 * time.Minute, 0, 12},
		{5 * time.Minute, 15 * time.Minute, 0, 12},
		{5 * time.Minute, time.Hour, 0, 4},
		{time.Minute, 15 * time.Minute, 90 * time.Minute, 6},
		// Mix points every 3 steps (75 minutes), but a week is 404 steps (403.2 rounded up).
		{25 * time.Minute, time.Hour, 6 * time.Hour, 1},
	} {
		s, err := raw.Resample(c.step)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := NewWalker(s, Options{Horizon: c.h, RefitEvery: c.refit})
		if err != nil {
			t.Fatal(err)
		}
		all, _ := NewWalker(s, Options{Horizon: c.h, RefitEvery: c.refit})
		all.pairEvery = 1
		if kept.pairEvery != c.every {
			t.Errorf("step %s, refit %s: sums kept every %d slots, want %d", c.step, c.refit, kept.pairEvery, c.every)
		}
		n := 0
		for o := 0; o+kept.HorizonSteps() < s.Len(); o++ {
			a, errA := kept.At(o)
			b, errB := all.At(o)
			if (errA == nil) != (errB == nil) || math.Float64bits(a.Point) != math.Float64bits(b.Point) || math.Float64bits(a.Upper) != math.Float64bits(b.Upper) || !reflect.DeepEqual(a.Shares, b.Shares) {
				t.Fatalf("step %s, refit %s, origin %d: %+v (%v) with the sums kept every %d slots, %+v (%v) with every slot", c.step, c.refit, o, a, errA, kept.pairEvery, b, errB)
			}
			if errA == nil && len(a.Shares) > 1 {
				n++
			}
		}
		if n == 0 {
			t.Errorf("step %s: no forecast mixed two experts; the sums were never read", c.step)
		}
	}
}
