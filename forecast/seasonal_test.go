package forecast

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// referenceFit is the stack's fit as written before its sums were blocked: one pass over the
// rows, every entry of the normal equations read and written back per row.
func referenceFit(m *seasonal, o, window int) weights {
	var a [nFeatures][nFeatures]float64
	var b [nFeatures]float64
	scale := meanObserved(m.y[max(0, o-window+1) : o+1])
	rows := 0
	for T := max(0, o-window+1); T <= o; T++ {
		row := m.row(T)
		if row == nil || math.IsNaN(m.y[T]) {
			continue
		}
		x := *row
		wt := 1 / (math.Abs(m.y[T]) + 4*scale)
		for i := range x {
			b[i] += wt * x[i] * m.y[T]
			for j := range x {
				a[i][j] += wt * x[i] * x[j]
			}
		}
		rows++
	}
	if rows < nFeatures {
		return priorWeights
	}
	return ridge(a, b, priorWeights)
}

// TestFitMatchesReference: the blocked fit gives the weights of the plain one to the bit, at
// every daily refit of a trace with gaps and for each kind of model, from the first refits (fewer
// rows than a block) to full windows.
func TestFitMatchesReference(t *testing.T) {
	s, err := loadTrace(t, "tune/crane-dsp/input1.csv").Resample(5 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 400; i++ {
		s.Values[i] = math.NaN()
	}
	for _, m := range []*seasonal{newSeasonal(s, PeriodDay, 3, 6, nil), newSeasonal(s, PeriodWeek, 12, 6, nil), newSeasonal(s, PeriodDay, 288, 6, time.UTC)} {
		for o := 0; o < s.Len(); o += s.Steps(Day) / 2 {
			for _, window := range []int{s.Steps(Day), s.Steps(fitWindow)} {
				if got, want := m.fit(o, window), referenceFit(m, o, window); got != want {
					t.Fatalf("%s model, origin %d, window %d: weights %v, want %v", m.label(), o, window, got, want)
				}
			}
		}
	}
}

// TestProfileRobustMean: the profile is the mean of the values near their median (centre). On
// noisy days it is nearer the true shape than their median; an outage day and the first days
// of a fivefold migration lie outside the spread and leave it where it was, where a plain mean
// moves.
func TestProfileRobustMean(t *testing.T) {
	const days = 8 * 7
	noisy := func(seed uint64) []float64 {
		r := rand.New(rand.NewPCG(seed, 11))
		y := make([]float64, days*24)
		for i := range y {
			y[i] = daily(i) * (1 + 0.1*r.NormFloat64())
		}
		return y
	}
	// sameKind returns the values the weekday/weekend profile of target t reads (days 1–42
	// before it, of its kind), and their plain mean.
	sameKind := func(y []float64, t int) ([]float64, float64) {
		var v []float64
		sum := 0.0
		for k := 1; k <= 7*DefaultCycles; k++ {
			i := t - 24*k
			if i >= 0 && weekendAt(i) == weekendAt(t) {
				v = append(v, y[i])
				sum += y[i]
			}
		}
		return v, sum / float64(len(v))
	}
	profileOf := func(y []float64) *seasonal {
		return newSeasonal(Series{Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Step: time.Hour, Values: y}, PeriodDay, 24, DefaultCycles, time.UTC)
	}

	// The last weekday of 40 series, each profile from 30 weekdays of independent noise.
	var errCentre, errMedian float64
	for seed := range uint64(40) {
		y := noisy(seed)
		m := profileOf(y)
		for T := (days - 3) * 24; T < (days-2)*24; T++ {
			v, _ := sameKind(y, T)
			errCentre += math.Abs(m.profile(T) - daily(T))
			errMedian += math.Abs(median(v) - daily(T))
		}
	}
	t.Logf("noisy days: profile's error %.1f, the median's %.1f", errCentre, errMedian)
	if !(errCentre <= 0.9*errMedian) {
		t.Errorf("profile's error %.1f, want under 0.9 of the median's %.1f", errCentre, errMedian)
	}

	clean := noisy(0)
	m := profileOf(clean)
	// An outage: Wednesday 2024-02-14 (day 44) at 5 % of its load.
	outage := slices.Clone(clean)
	for i := 44 * 24; i < 45*24; i++ {
		outage[i] *= 0.05
	}
	mo := profileOf(outage)
	for T := 45 * 24; T < 50*24; T++ {
		if weekendAt(T) {
			continue
		}
		_, plain := sameKind(outage, T)
		_, before := sameKind(clean, T)
		if d := math.Abs(mo.profile(T)/m.profile(T) - 1); d > 0.01 || math.Abs(plain/before-1) < 0.02 {
			t.Fatalf("target %d after an outage: profile moved by %.3f (want ≤ 0.01), a plain mean by %.3f", T, d, plain/before-1)
		}
	}

	// A migration to 5× the load from day 46 on: on day 52 a fifth of the weekdays read are on
	// the new level; the profile stays on the old one, as the median does, until most are.
	moved := slices.Clone(clean)
	for i := 46 * 24; i < len(moved); i++ {
		moved[i] *= 5
	}
	mm := profileOf(moved)
	for T := 52 * 24; T < 53*24; T++ {
		v, plain := sameKind(moved, T)
		if p := mm.profile(T); math.Abs(p/daily(T)-1) > 0.1 {
			t.Errorf("target %d, %d values, a fifth on a level 5× higher: profile %.1f, want within 10 %% of the old shape %.1f (median %.1f, plain mean %.1f)", T, len(v), p, daily(T), median(v), plain)
		}
	}
}

// weekendAt says whether hour i of a series starting on Monday 2024-01-01 UTC is on a weekend.
func weekendAt(i int) bool { return (i/24)%7 >= 5 }

// TestSortedMAD checks sortedMAD against the median of the deviations sorted, on samples of
// every size from 1 to 40 with ties.
func TestSortedMAD(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for n := 1; n <= 40; n++ {
		for range 50 {
			x := make([]float64, n)
			for i := range x {
				x[i] = math.Round(r.NormFloat64()*4) / 2 // ties are common
			}
			med := median(x) // sorts x
			dev := make([]float64, n)
			for i, v := range x {
				dev[i] = math.Abs(v - med)
			}
			if got, want := sortedMAD(x, med), median(dev); got != want {
				t.Fatalf("n %d, x %v: sortedMAD %v, want %v", n, x, got, want)
			}
		}
	}
}

// TestFitsReadSpacedRows pins evidenceSpacing's claim for the fits: on one-minute data, rows five
// minutes apart fit the stacks' weights nearly as every row does. On crane's input2 (one-minute
// CPU, 15 minutes ahead) the daily stack is fitted at every refit with both, and the forecasts of
// the last day from either weights differ by well under their error.
func TestFitsReadSpacedRows(t *testing.T) {
	s := loadTrace(t, "tune/crane-dsp/input2.csv")
	h := s.Steps(15 * time.Minute)
	stride := int(evidenceSpacing(15*time.Minute) / s.Step)
	if stride != 5 {
		t.Fatalf("evidence spacing 15 minutes ahead on one-minute data: every %d steps, want 5", stride)
	}
	for _, c := range []struct {
		h    time.Duration
		want time.Duration
	}{{15 * time.Minute, 5 * time.Minute}, {time.Hour, 15 * time.Minute}, {Day, 15 * time.Minute}, {time.Minute, 5 * time.Minute}} {
		if got := evidenceSpacing(c.h); got != c.want {
			t.Errorf("evidenceSpacing(%s) = %s, want %s", c.h, got, c.want)
		}
	}
	every := newSeasonal(s, PeriodDay, h, DefaultCycles, nil)
	spaced := newSeasonal(s, PeriodDay, h, DefaultCycles, nil)
	spaced.stride = stride
	window := s.Steps(fitWindow)
	refit := s.Steps(Day)
	var diff, errEvery float64
	rows := 0
	for T := s.Len() - s.Steps(Day); T < s.Len(); T++ {
		o := floorTo(T-h, refit)
		a, okA := every.predict(T, every.weightsAt(o, window))
		b, okB := spaced.predict(T, spaced.weightsAt(o, window))
		if !okA || !okB || math.IsNaN(s.Values[T]) {
			continue
		}
		diff += math.Abs(a - b)
		errEvery += math.Abs(s.Values[T] - a)
		rows++
	}
	if rows < s.Steps(Day)/2 {
		t.Fatalf("only %d targets of the last day forecast", rows)
	}
	wa := every.weightsAt(floorTo(s.Len()-1-h, refit), window)
	wb := spaced.weightsAt(floorTo(s.Len()-1-h, refit), window)
	if wa == wb {
		t.Fatalf("the spaced fit read the same rows as the full one: weights %v", wa)
	}
	t.Logf("last refit's weights, every row %.3f, every %dth %.3f; forecasts differ by %.1f %% of the error", wa, stride, wb, 100*diff/errEvery)
	if diff > 0.05*errEvery {
		t.Errorf("forecasts from spaced fits differ by %.1f %% of the full fit's error, want under 5 %%", 100*diff/errEvery)
	}
}

// TestQuantileMatchesSort: the quantile read by selection (selectRank) is the one read from the
// sorted values, to the bit, on values with and without ties, at every rank of short slices and at
// the margin's quantiles of long ones.
func TestQuantileMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := 1; n <= 300; n++ {
		for _, ties := range []bool{false, true} {
			x := make([]float64, n)
			for i := range x {
				if x[i] = r.NormFloat64(); ties {
					x[i] = math.Round(2 * x[i]) // a handful of distinct values
				}
			}
			sorted := slices.Sorted(slices.Values(x))
			qs := []float64{0, 0.05, 0.5, 0.9, 0.95, 0.99, 1}
			if n <= 40 {
				qs = qs[:0]
				for k := range n {
					qs = append(qs, float64(k)/float64(max(1, n-1)), (float64(k)+0.3)/float64(max(1, n-1)))
				}
			}
			for _, q := range qs {
				pos := q * float64(n-1)
				lo := int(math.Floor(pos))
				if lo >= n {
					continue
				}
				hi := min(lo+1, n-1)
				want := sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
				if got := quantile(slices.Clone(x), q); got != want {
					t.Fatalf("n=%d ties=%v q=%v: quantile %v, want %v", n, ties, q, got, want)
				}
				y := slices.Clone(x)
				selectRank(y, lo)
				if y[lo] != sorted[lo] || slices.Max(y[:lo+1]) != y[lo] || slices.Min(y[lo:]) != y[lo] {
					t.Fatalf("n=%d ties=%v rank %d: %v, want %v with no larger value before it and no smaller after", n, ties, lo, y[lo], sorted[lo])
				}
			}
		}
	}
}

// TestSeriesProfilesMatchProfile: the profiles a model memoises for the whole series at once
// (seriesProfiles) are profile's one target at a time, to the bit: daily,
// weekly and weekday/weekend models, horizons that reach one and several periods back, a trace
// long enough for full windows (NYC taxi's seven months), one with a gap and one whose values
// repeat (ties in every window).
func TestSeriesProfilesMatchProfile(t *testing.T) {
	s := loadTrace(t, "tune/nab/nyc_taxi.csv")
	gappy := s
	gappy.Values = slices.Clone(s.Values)
	for i := 1000; i < 1900; i++ {
		gappy.Values[i] = math.NaN()
	}
	ties := s
	ties.Values = slices.Clone(s.Values)
	for i, v := range ties.Values {
		ties.Values[i] = math.Round(v / 50) // a handful of levels
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	day := s.Steps(Day)
	checked := 0
	for _, series := range []Series{s, gappy, ties} {
		for _, c := range []struct {
			period Period
			h      int
			kinds  *time.Location
			phase  int
		}{{PeriodDay, 3, nil, 0}, {PeriodDay, 2*day + 5, nil, 0}, {PeriodWeek, 12, nil, 0}, {PeriodDay, 12, time.UTC, 0}, {PeriodDay, day, ny, 37}, {PeriodDay, 3 * day, time.UTC, 0}} {
			m := newKindsSeasonal(series, c.period, c.h, DefaultCycles, c.kinds, c.phase, nil)
			prof := slices.Clone(m.prof)
			for i := range m.prof {
				m.prof[i] = notYet
			}
			for i := m.base; i < series.Len(); i++ {
				got, want := prof[i-m.base], m.profile(i)
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("%s model, h=%d, point %d: profile %v, want %v", m.label(), c.h, i, got, want)
				}
				if !math.IsNaN(want) {
					checked++
				}
			}
		}
	}
	if checked < 100000 {
		t.Fatalf("only %d profiles with a value compared", checked)
	}
}

// TestDayLevelLeavesASurgeAlone: the levelled expert's forecast a day ahead moves towards the
// last day's level (dayLevel), which a surge of four hours at five times the load does not move
// (the day's ratio Σy/Σp, 1.97, lifts the next day's forecast by half at β = 0.5) and a level that
// has held for fourteen hours does (where the day's ratio has taken only part of it).
func TestDayLevelLeavesASurgeAlone(t *testing.T) {
	const days, h = 28, 24
	n := days * 24
	for _, tc := range []struct {
		name     string
		from, to int // hours of the last day at mult× the load
		mult     float64
		lo, hi   float64 // bounds on the forecast against the profile
	}{
		{"four-hour surge", 10, 14, 5, 0.97, 1.03},
		{"fourteen hours at twice the load", 10, 24, 2, 1.45, 1.55},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := synthetic(n, func(i int) float64 {
				if hr := i - (days-1)*24; hr >= tc.from && hr < tc.to {
					return tc.mult * daily(i)
				}
				return daily(i)
			}, nil)
			m := newSeasonal(s, PeriodDay, h, 6, nil)
			o := n - 1
			T := o + h
			got, ok := m.levelPredict(T, levelWeights)
			if !ok {
				t.Fatal("no forecast")
			}
			p := m.profile(T)
			if r := got / p; r < tc.lo || r > tc.hi {
				t.Errorf("forecast %.1f is %.3f× the profile %.1f, want within [%.2f, %.2f] (the day's ratio Σy/Σp is %.2f)", got, r, p, tc.lo, tc.hi, m.ratio(o, m.long))
			}
		})
	}
}

// TestSmoothProfile: on a smooth daily shape under noise, with a week and a half of history, the
// weekday/weekend profile smoothed over the hour either side (smoothProfile) is nearer the shape
// than the profile, over the targets of a day; and it reads nothing past a target's origin.
func TestSmoothProfile(t *testing.T) {
	const days, h = 10, 24
	n := days * 24
	var errProfile, errSmooth float64
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 13))
		s := synthetic(n, func(i int) float64 { return daily(i) * (1 + 0.15*r.NormFloat64()) }, nil)
		m := newKindsSeasonal(s, PeriodDay, h, 6, time.UTC, 0, nil)
		for T := n - h; T < n; T++ { // the last day: a Wednesday, seven weekdays before it
			sm, ok := m.smoothProfile(T)
			if !ok {
				t.Fatalf("seed %d: no smoothed profile for target %d", seed, T)
			}
			errProfile += math.Abs(m.profile(T) - daily(T))
			errSmooth += math.Abs(sm - daily(T))
		}
	}
	if errSmooth > 0.8*errProfile {
		t.Errorf("the smoothed profile errs %.1f against the shape, the profile %.1f: want at most 0.8 of it", errSmooth, errProfile)
	}

	// No peeking: the values after the origin changed, the forecast for T is the same. The hour
	// after the one a day before T is the hour after the origin: it must be left out.
	s := synthetic(n, func(i int) float64 { return daily(i) * (1 + 0.2*noise(i)) }, nil)
	changed := synthetic(n, func(i int) float64 { return daily(i) * (1 + 0.2*noise(i)) }, nil)
	o := n - h - 1
	for i := o + 1; i < n; i++ {
		changed.Values[i] *= 10
	}
	T := o + h
	a, okA := newKindsSeasonal(s, PeriodDay, h, 6, time.UTC, 0, nil).smoothProfile(T)
	b, okB := newKindsSeasonal(changed, PeriodDay, h, 6, time.UTC, 0, nil).smoothProfile(T)
	if !okA || !okB || a != b {
		t.Errorf("smoothed profile of target %d from origin %d: %.3f (%v), %.3f (%v) with the values after the origin changed: want the same", T, o, a, okA, b, okB)
	}
}

// TestSmoothedExpertCandidacy: the smoothed expert is a candidate a day ahead on an hourly
// series, not an hour ahead (with the levelled experts), and not on a series sampled every two
// hours, where the steps either side are no longer the hour either side.
func TestSmoothedExpertCandidacy(t *testing.T) {
	hourly := synthetic(4*7*24, func(i int) float64 { return daily(i) * (1 + 0.1*noise(i)) }, nil)
	twoHourly, err := hourly.Resample(2 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Series
		h    time.Duration
		want bool
	}{
		{"hourly, a day ahead", hourly, Day, true},
		{"hourly, an hour ahead", hourly, time.Hour, false},
		{"every two hours, a day ahead", twoHourly, Day, false},
	} {
		w, err := NewWalker(tc.s, Options{Horizon: tc.h})
		if err != nil {
			t.Fatal(err)
		}
		o := tc.s.Len() - 1
		w.At(o)
		got := false
		for _, tr := range w.candidates(o) {
			got = got || tr.kind == smoothExpert
		}
		if got != tc.want {
			t.Errorf("%s: smoothed expert a candidate %v, want %v", tc.name, got, tc.want)
		}
	}
}
