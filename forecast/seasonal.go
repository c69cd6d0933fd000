package forecast

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// nFeatures is the number of predictors of the profile stack (see the package doc).
const nFeatures = 8

// Windows of the level ratios: the last hour tracks a short-horizon surge, 6 hours reacts to a
// ramp within a morning, 24 hours to a level shift without chasing one noisy hour.
const (
	lastRatioWindow  = time.Hour
	shortRatioWindow = 6 * time.Hour
	longRatioWindow  = 24 * time.Hour
)

// priorWeights is where the fitted weights are shrunk to: a blend of the profile terms, already a
// fair forecaster on its own (its WAPE on NYC taxi is within 10 % of the fitted one) and so a
// safe start when history is short; persistence starts at zero because it only helps at short
// horizons, which the fit finds out.
var priorWeights = weights{0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0, 0}

// seasonal is the profile-stack model for one period over one series. Every quantity for target
// index T reads values at indices ≤ T−h only, so building it over a whole series and asking for a
// target never looks past that target's forecast origin.
type seasonal struct {
	period Period
	// weekend, when set, makes this a daily model whose profile takes only days of the target's
	// kind (weekend[i] tells whether index i falls on a Saturday or Sunday in the forecast's
	// time zone, or in the two days from hour phase of the week: kinds.go): see dayKinds.
	weekend []bool
	phase   int // the hour of the week the weekend starts at, from Saturday 00:00 (kinds.go)
	y       []float64
	per     int // period in steps
	shift   int // the latest same-time-of-day lag usable at this horizon, in steps
	wshift  int // the latest same-time-of-week lag usable at this horizon, in steps
	h       int // horizon in steps
	k0      int // first cycle back whose value is known at the origin
	cycles  int
	last    int
	short   int
	long    int
	// base is the first index whose profile can have a value (k0 periods in): prof and age hold
	// the indices from it to end, the end of the horizon past the series.
	base int
	end  int
	// prof memoises the profile (NaN where undefined): seriesProfiles fills it over the series,
	// profile the horizon past it, where it is notYet until computed.
	prof   []float64
	cy, cp []float64 // prefix sums of y and profile over points where both are defined
	cn     []int32   // prefix counts of those points
	week   *weekSums // the prefix sums lastWeek reads
	// feats memoises the predictors of the targets on the evidence grid (the multiples of the
	// stride from base, the first at grid0), featState whether they are known: every fit and
	// every past forecast replayed to weigh the experts reads them again. Apart, a row of
	// predictors is one cache line, and the fits' check of which rows are defined reads a byte
	// per target. Both are made on first use, when the stride is set (row).
	feats     [][nFeatures]float64
	featState []int8 // 0 not computed, 1 defined, −1 undefined
	grid0     int
	// off keeps the predictors of the last targets off the grid asked for (grid.go).
	off     offGrid[featRow]
	fits    map[int]weights
	levels  map[int]weights // levelAt's, by origin (trended ones by −origin−1)
	growths map[int]float64 // growthAt's, by origin
	age     []float64       // ageOf's memo, nil until the trended expert asks
	dayLvl  *forecastMemo   // dayLevel's memo by target, nil until asked
	day     int             // steps in a day
	ly      []float64       // prefix sums of the observed values, nil until growthAt needs them
	ln      []int           // and their counts
	scratch []float64       // profile's buffer of the values at one phase
	// fit's buffers: the rows of a fit (indices in feats), their weights and their values.
	fitRows       []int32
	fitWts, fitYs []float64
	// stride is every how many steps the fits read a row (evidenceSpacing): the walker's
	// evidence stride, 1 for a model built alone.
	stride int
}

// featRow is a target's predictors off the grid and whether they are known, as featState says.
type featRow struct {
	x     [nFeatures]float64
	state int8
}

// weights are the stack's fitted weights.
type weights [nFeatures]float64

func newSeasonal(s Series, period Period, h, cycles int, kinds *time.Location) *seasonal {
	return newKindsSeasonal(s, period, h, cycles, kinds, 0, nil)
}

// wholePeriods is the first whole number of periods of per steps that is at least h steps, and
// at least one period: the lag of a seasonal-naive forecast h steps ahead.
func wholePeriods(per, h int) int { return per * max(1, (h+per-1)/per) }

// weekSums are the prefix sums of y(j) and y(j−wshift) over the j where both are observed: a[i]
// and b[i] sum over the j < i. They depend on the series and the horizon only, so a walker's models
// share one (Walker.weekSums).
type weekSums struct{ a, b []float64 }

func newWeekSums(y []float64, wshift int) *weekSums {
	ws := &weekSums{make([]float64, len(y)+1), make([]float64, len(y)+1)}
	for i, v := range y {
		ws.a[i+1], ws.b[i+1] = ws.a[i], ws.b[i]
		if j := i - wshift; j >= 0 && !math.IsNaN(v) && !math.IsNaN(y[j]) {
			ws.a[i+1] += v
			ws.b[i+1] += y[j]
		}
	}
	return ws
}

// newKindsSeasonal is newSeasonal whose weekend, with kinds set, starts at hour phase of the week
// (kinds.go), and which reads week, the weekSums of s at this horizon, when not nil.
func newKindsSeasonal(s Series, period Period, h, cycles int, kinds *time.Location, phase int, week *weekSums) *seasonal {
	per := s.Steps(period.Duration())
	day := s.Steps(Day)
	k0 := max(1, (h+per-1)/per)
	// No profile has a value before k0 periods (profile): the memos start there.
	n, base := len(s.Values)+h+1, min(k0*per, len(s.Values)+h+1)
	m := &seasonal{
		y: s.Values, per: per, h: h, cycles: cycles, k0: k0, base: base, end: n,
		shift:  wholePeriods(day, h),
		wshift: wholePeriods(s.Steps(Week), h),
		last:   max(1, s.Steps(lastRatioWindow)),
		short:  max(1, s.Steps(shortRatioWindow)),
		long:   max(1, s.Steps(longRatioWindow)),
		prof:   make([]float64, n-base),
		period: period, fits: map[int]weights{}, levels: map[int]weights{}, growths: map[int]float64{},
		day: day,
	}
	// The profile's buffer, never outgrown, so never stored back: a slice stored at every target
	// cost a write barrier each while the collector ran.
	m.scratch = make([]float64, 0, cycles)
	if kinds != nil {
		m.scratch = make([]float64, 0, 7*cycles) // the days of cycles weeks: see profile
		m.weekend, m.phase = weekendFlags(s, n, kinds, phase), phase
	}
	for i := max(base, len(s.Values)); i < n; i++ {
		m.prof[i-base] = notYet
	}
	m.prefixSums()
	if m.week = week; week == nil {
		m.week = newWeekSums(m.y, m.wshift)
	}
	return m
}

// profile is the robust mean (centre) of the values at the same phase k0..k0+cycles−1 periods
// before t; for a weekday/weekend model, of the same time of day on every day of the target's
// kind in the days k0..k0+7·cycles−1 before t.
//
// The weekday/weekend profile spans as many weeks as the weekly profile (cycles weeks) and
// pools the days of the same kind in them: up to five values a week for a weekday target, two
// for a weekend one, where the weekly profile has one. On a load whose weekdays share a shape
// the profile of thirty weekdays averages the noise of five times as many days, where the weekly
// profile, and the mean of the last four weeks it is judged against, cannot do better than their
// six and four; on a load whose weekdays differ (NYC taxi's Fridays) the weekly profile keeps its
// edge and the mix weighs them. It took the last six days of the target's kind before (a week
// and a day of weekdays, three weeks of weekends): on the tune set (testdata/traces/tune, the
// 1-day hourly backtest of TestGeneralisation) the median ratio to the best baseline went from
// 0.892 to 0.878 and the worst from 1.039 to 1.034, better on 28 of the 37 series and worse on
// five by at most 0.022 (outage-2, batch-1: their weekdays differ from week to week); taking all
// days of the kind within 3, 4, 5 or 8 weeks instead gave medians of 0.876–0.891 and the same
// worst within 0.005.
func (m *seasonal) profile(t int) float64 {
	if t < m.base || t >= m.base+len(m.prof) {
		return math.NaN() // before base: no value at this phase is known yet
	}
	if p := m.prof[t-m.base]; p != notYet {
		return p // a profile of −∞, were there one, is computed again: no harm
	}
	vals, _ := m.phaseValues(t, 0, m.scratch[:0]) // centre reorders it; nothing keeps it; it has room for every value
	m.prof[t-m.base] = m.centre(vals)
	return m.prof[t-m.base]
}

// phaseValues appends to vals the values profile takes for target t, the most recent first, and
// returns them with the sum of their ages in periods. With off ≠ 0 it takes, on the same days,
// the values off steps later (earlier when negative) instead, leaving out those past t's origin
// (smoothProfile).
func (m *seasonal) phaseValues(t, off int, vals []float64) ([]float64, int) {
	ages, o, cycles := 0, t-m.h, m.cycles
	if m.weekend != nil {
		cycles *= 7 // days of the target's kind in as many weeks
	}
	for k := m.k0; k < m.k0+cycles; k++ {
		i := t - k*m.per
		if i < 0 {
			break
		}
		if i >= len(m.y) || m.weekend != nil && m.weekend[i] != m.weekend[t] {
			continue
		}
		if j := i + off; j >= 0 && j <= o && j < len(m.y) && !math.IsNaN(m.y[j]) {
			vals = append(vals, m.y[j])
			ages += k
		}
	}
	return vals, ages
}

// smoothNeighbours is the weight of the hour before and of the hour after in the smoothed
// profile (smoothProfile), against the profile's own 1: the kernel ¼, ½, ¼.
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation; median 0.838, mean
// 0.8310 without the smoothed expert): 0.5 gave a median of 0.834 and a mean of 0.8292, 0.25
// 0.835 and 0.8294, 1 0.834 and 0.8295. At 0.5 eight series better by more than 0.005 (the
// tweets' CRM 0.954 → 0.919, PFE −0.024, IBM −0.015, UPS −0.009, GOOG −0.008; crane's input1
// 0.786 → 0.757, web-2 and web-3 −0.007), three worse by at most 0.008 (drift-2, zoned-3,
// shift-1). The hours two either side as well, at half the weight or the same, gave 0.8294
// (input1's gain gone, shift-3 +0.006 at the same weight); a smoothed weekly profile as an
// expert too, 0.8284, but CVS +0.016 and KO +0.008 for AMZN −0.054: kept out.
const smoothNeighbours = 0.5

// smoothProfile is target T's profile smoothed over the hour either side (smoothed): the
// profile, and the robust means (centre) of the values an hour before and an hour after those
// it takes, on the same days, weighed smoothNeighbours each; a value past T's origin is left
// out, and a side with no value at all. The hour before is the profile of T's hour before, as
// memoised, when that takes the same days (no weekend starts or ends between the two hours).
func (m *seasonal) smoothProfile(T int) (float64, bool) {
	p := m.profile(T)
	if math.IsNaN(p) {
		return 0, false
	}
	hour := max(1, m.day/24)
	sum, weight := p, 1.0
	for _, off := range [2]int{-hour, hour} {
		v := math.NaN()
		if off < 0 && m.sameDays(T, off) {
			v = m.profile(T + off)
		} else if vals, _ := m.phaseValues(T, off, m.scratch[:0]); len(vals) > 0 {
			v = m.centre(vals)
		}
		if !math.IsNaN(v) {
			sum += smoothNeighbours * v
			weight += smoothNeighbours
		}
	}
	return sum / weight, true
}

// sameDays tells whether the profile of target T+off takes the values off steps from those of
// T's, on the same days: T+off is a target, and each day before T is of T's kind exactly when
// the day off steps from it is of T+off's.
func (m *seasonal) sameDays(T, off int) bool {
	if T+off < m.base {
		return false
	}
	if m.weekend == nil {
		return true
	}
	for k := m.k0; k < m.k0+7*m.cycles; k++ {
		i := T - k*m.per
		if i+off < 0 {
			break
		}
		if (m.weekend[i] == m.weekend[T]) != (m.weekend[i+off] == m.weekend[T+off]) {
			return false
		}
	}
	return true
}

// ageOf is the mean age in days, before target t, of the values of its profile (0 when it has
// none), memoised: only the trended expert reads it, from two weeks of history (growthMinDays),
// so the memo is made on its first use.
func (m *seasonal) ageOf(t int) float64 {
	if m.age == nil {
		m.age = make([]float64, len(m.prof))
		for i := range m.age {
			m.age[i] = math.NaN()
		}
	}
	if a := m.age[t-m.base]; !math.IsNaN(a) {
		return a
	}
	a := 0.0
	if vals, ages := m.phaseValues(t, 0, m.scratch[:0]); len(vals) > 0 {
		a = float64(ages*m.per) / float64(len(vals)*m.day)
	}
	m.age[t-m.base] = a
	return a
}

// profileSpread is how far from their median, in robust standard deviations (1.4826 times the
// median absolute deviation), the values of a phase count towards its profile: the mean of those
// within it (centre). The median alone wastes much of what thirty days say: on Gaussian noise it
// is as good as the mean of two thirds as many values (TestProfileRobustMean: its error is 0.8 of
// the median's). A mean of all of them would let an outage, a holiday or the days before a
// migration pull the profile; these lie far outside the spread of the other days and drop out,
// and the profile follows a lasting change when the median does, once most of the days are on
// the new level (a plain 20 % or 25 % trimmed mean took migration-3 from 0.937 to 1.082, its new
// level creeping into the profile day by day).
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation), against the median
// (median ratio 0.873, mean 0.8437, worst 1.000): a spread of 3 gave 0.871 and 0.8411, 4 0.867
// and 0.8409, 5 0.865 and 0.8401, 6 the same as 5 with crane's input1 and NYC taxi a little worse,
// 8 0.874 and 0.8408; the worst stayed 1.000. With 5, 17 series improved by more than 0.005
// (short-1 0.819 → 0.795, trend-2 −0.019, batch-3 −0.013) and 6 got worse by 0.005–0.010
// (crane's input1, NYC taxi, drift-3, web-2, holiday-1 and -3). The robust mean for the weekday/weekend profile alone
// (the weekly and daily ones, of six values, kept the median) gave the same median ratio but
// drift-1 1.016.
const profileSpread = 5

// centre is the profile of a phase from its values x (reordered, left sorted): the mean of those
// within profileSpread robust standard deviations of their median, the median when there are
// fewer than three or they do not spread (NaN when there are none).
func (m *seasonal) centre(x []float64) float64 {
	return centreSorted(x, median(x)) // median sorts x
}

// centreSorted is centre of x sorted, whose median is med.
func centreSorted(x []float64, med float64) float64 {
	if len(x) < 3 {
		return med
	}
	band := profileSpread * 1.4826 * sortedMAD(x, med)
	sum, n := 0.0, 0
	for _, v := range x {
		if math.Abs(v-med) <= band {
			sum += v
			n++
		}
	}
	return sum / float64(n) // n ≥ 1: the median's own value(s) lie within any band
}

// sortedMAD is the median absolute deviation of x, sorted, from its median med, without sorting
// the deviations: below the middle they grow leftwards, above it rightwards, so merging the two
// runs from the middle out yields them in order (the profile takes one per point and model).
func sortedMAD(x []float64, med float64) float64 {
	n := len(x)
	a, b := (n-1)/2, (n-1)/2+1 // x[..a] ≤ med ≤ x[b..]
	var lo, hi float64         // the deviations of rank (n−1)/2 and n/2
	for k := 0; k <= n/2; k++ {
		var d float64
		if b >= n || a >= 0 && med-x[a] <= x[b]-med {
			d, a = med-x[a], a-1
		} else {
			d, b = x[b]-med, b+1
		}
		if k == (n-1)/2 {
			lo = d
		}
		hi = d
	}
	return (lo + hi) / 2
}

func (m *seasonal) prefixSums() {
	m.seriesProfiles()
	n := len(m.y)
	m.cy, m.cp, m.cn = make([]float64, n+1), make([]float64, n+1), make([]int32, n+1)
	for i, v := range m.y {
		p := m.profile(i)
		m.cy[i+1], m.cp[i+1], m.cn[i+1] = m.cy[i], m.cp[i], m.cn[i]
		if !math.IsNaN(v) && !math.IsNaN(p) {
			m.cy[i+1] += v
			m.cp[i+1] += p
			m.cn[i+1]++
		}
	}
}

// seriesProfiles memoises the profile of every point of the series, as profile would, one phase
// at a time: as the target moves a period on, one value joins the values of its kind and one
// leaves them, so each kind's are kept sorted by an insertion and a removal instead of sorted
// anew at every target (they took a tenth of a walk of one-minute data). Equal values
// keep the order profile's sort gives them, the most recent first, so the profiles come out the
// same to the bit (TestSeriesProfilesMatchProfile) — bar a +0 beside a −0, which the sort of
// more than twelve values may order either way, and which cannot change a profile's value.
func (m *seasonal) seriesProfiles() {
	span := m.cycles // periods back the values are taken from, from k0
	if m.weekend != nil {
		span = 7 * m.cycles
	}
	var sorted [2][]float64 // the values in the window, by kind (1: weekend)
	kind := func(i int) int {
		if m.weekend != nil && m.weekend[i] {
			return 1
		}
		return 0
	}
	for phase := range min(m.per, len(m.y)) {
		sorted[0], sorted[1] = sorted[0][:0], sorted[1][:0]
		for t := phase; t < len(m.y); t += m.per {
			if i := t - m.k0*m.per; i >= 0 && !math.IsNaN(m.y[i]) {
				k, v := kind(i), m.y[i]
				// Before the equal values: the most recent first.
				at, _ := slices.BinarySearch(sorted[k], v)
				sorted[k] = slices.Insert(sorted[k], at, v)
			}
			if i := t - (m.k0+span)*m.per; i >= 0 && !math.IsNaN(m.y[i]) {
				k, v := kind(i), m.y[i]
				// The oldest of the equal values, the last of them.
				at, _ := slices.BinarySearch(sorted[k], math.Nextafter(v, math.Inf(1)))
				sorted[k] = slices.Delete(sorted[k], at-1, at)
			}
			if t < m.base {
				continue
			}
			x := sorted[kind(t)]
			med := math.NaN() // as median's of no values
			if len(x) > 0 {
				med = sortedMedian(x)
			}
			m.prof[t-m.base] = centreSorted(x, med)
		}
	}
}

// ratio is Σy/Σprofile over the l points ending at origin o, 1 when nothing is known.
func (m *seasonal) ratio(o, l int) float64 {
	lo := max(0, o+1-l)
	sp := m.cp[o+1] - m.cp[lo]
	if sp <= 0 {
		return 1
	}
	return (m.cy[o+1] - m.cy[lo]) / sp
}

// dayLevel is the last day's level against the profile, at target T's origin, that the levelled
// and trended experts move a share of the way to (levelShare): the median of the hourly ratios
// Σy/Σprofile over the 24 hours ending at the origin, each hour weighed by its Σprofile; 1 when
// nothing is known. Memoised by target, on the grid the rows are. A median, not the day's ratio
// Σy/Σp (ratio, which the stacks keep): a surge of a few hours (a news item on the tweet series)
// lifts the day's ratio and, through it, the next day's forecast at every hour, where the median
// moves only once the load has been off the profile for half the day.
//
// Chosen on the tune set (the 1-day hourly backtest of TestGeneralisation; median 0.838, mean
// 0.8333 before): median 0.838, mean 0.8310; five tweet series better (PFE 0.772 → 0.715, UPS
// 0.884 → 0.843, GOOG −0.023, CRM −0.009, AAPL −0.006), drift-2 +0.008, no other series moved
// by more than 0.005. Blocks of two, three or four hours gave means of 0.8319–0.8324 (holiday-3
// and web-1 up to +0.008); the weighted mean of the middle half of the hourly ratios 0.8313,
// of the middle 80 % 0.8319; the median for the stacks' p·r₂₄ too, 0.8318 (1ef3de +0.021,
// batch-3 +0.011), and for the stacks alone 0.8337: the gain is the levelled expert's, which
// carried the surges into the next day. Eval, scored once after the choice: median 0.873 →
// 0.874, mean 0.8697 → 0.8703 (outage-102 −0.015, shift-101 +0.006, shift-102 0.545 → 0.573: the
// median follows a lasting shift half a day later than the day's ratio).
func (m *seasonal) dayLevel(T int) float64 {
	o := T - m.h
	if o < 0 || o >= len(m.y) {
		return 1
	}
	if m.dayLvl == nil {
		memo := newForecastMemo(m.h, len(m.y)+m.h, m.rowStep())
		m.dayLvl = &memo
	}
	v := m.dayLvl.at(T)
	if *v == notYet {
		*v = m.medianLevel(o)
	}
	return *v
}

// medianLevel is dayLevel unmemoised.
func (m *seasonal) medianLevel(o int) float64 {
	type hour struct{ r, w float64 }
	var hs [64]hour // a day holds 24 hours; steps longer than an hour make fewer
	n, tot := 0, 0.0
	for hi := o; hi > o-m.long && hi >= 0 && n < len(hs); hi -= m.last {
		lo := max(0, hi+1-m.last, o+1-m.long)
		sp := m.cp[hi+1] - m.cp[lo]
		if sp <= 0 {
			continue
		}
		hs[n] = hour{(m.cy[hi+1] - m.cy[lo]) / sp, sp}
		tot += sp
		n++
	}
	if n == 0 {
		return 1
	}
	sorted := hs[:n]
	slices.SortFunc(sorted, func(x, y hour) int { return cmp.Compare(x.r, y.r) })
	acc := 0.0
	for _, e := range sorted {
		if acc += e.w; acc >= tot/2 {
			return e.r
		}
	}
	return sorted[n-1].r
}

// row returns the predictors of target T, whose origin is T−h, computing them unless memoised
// (feats, off); nil when they are undefined: the profile has no value at this phase in the
// known cycles. A row off the grid is good until the next target asked for.
func (m *seasonal) row(T int) *[nFeatures]float64 {
	if T < m.base || T >= m.end {
		return nil // before base the profile is undefined
	}
	step := m.rowStep()
	var x *[nFeatures]float64
	var state *int8
	if T%step == 0 {
		if m.feats == nil {
			m.grid0 = ceilTo(m.base, step) / step
			m.feats = make([][nFeatures]float64, (m.end-1)/step-m.grid0+1)
			m.featState = make([]int8, len(m.feats))
		}
		x, state = &m.feats[T/step-m.grid0], &m.featState[T/step-m.grid0]
	} else {
		r := m.off.at(T, featRow{})
		x, state = &r.x, &r.state
	}
	if *state == 0 {
		v, ok := m.computeFeatures(T)
		*x, *state = v, 1
		if !ok {
			*state = -1
		}
	}
	if *state < 0 {
		return nil
	}
	return x
}

func (m *seasonal) computeFeatures(T int) ([nFeatures]float64, bool) {
	o := T - m.h
	p := m.profile(T)
	if math.IsNaN(p) || o < 0 || o >= len(m.y) {
		return [nFeatures]float64{}, false
	}
	same := p
	if i := T - m.shift; i >= 0 && i <= o && !math.IsNaN(m.y[i]) {
		if pi := m.profile(i); pi > 0 {
			same = m.y[i] * p / pi
		}
	}
	return [nFeatures]float64{p, p * m.ratio(o, m.short), p * m.ratio(o, m.long), same, m.lastWeek(T, p), p * m.ratio(o, m.last), m.recent(o, p), m.lastValue(o, p)}, true
}

// lastWeek is the value one week (or the first whole number of weeks ≥ h) before T, scaled by
// how the last day before the origin compares with the same day a week earlier; p when unknown.
// It lets a daily model see weekday/weekend differences from a single week of history, before
// two weeks exist to confirm a weekly cycle.
func (m *seasonal) lastWeek(T int, p float64) float64 {
	i, o := T-m.wshift, T-m.h
	if i < 0 || math.IsNaN(m.y[i]) || o-m.long+1-m.wshift < 0 {
		return p
	}
	lo := o - m.long + 1
	now, before := m.week.a[o+1]-m.week.a[lo], m.week.b[o+1]-m.week.b[lo]
	if before <= 0 {
		return p
	}
	return m.y[i] * now / before
}

// levelAt returns the levelled expert's weights fitted at origin o (levelShare): the share β of
// the last day's level against the profile, p·r₂₄ − p (dayLevel), that the targets known at o
// (T ≤ o, in the last window points) carried, by least squares weighted as fit weighs them,
// clamped to [0, 1]; levelWeights until a period of targets is known. For the trended expert
// (trended), the profile is first carried forward by the load's growth at o (growthAt) over its
// values' mean age, p·e^(g·age), and the growth is kept in the weights' growthSlot for
// levelPredict. Memoised.
func (m *seasonal) levelAt(o, window int, trended bool) weights {
	key := o
	if trended {
		key = -o - 1
	}
	if w, ok := m.levels[key]; ok {
		return w
	}
	g := 0.0
	if trended {
		g = m.growthAt(o, window)
	}
	lo := max(0, o-window+1)
	scale := meanObserved(m.y[lo : o+1])
	var sxe, sxx float64
	n := 0
	for T := ceilTo(lo, m.rowStep()); T <= o; T += m.rowStep() {
		x := m.row(T)
		if x == nil || math.IsNaN(m.y[T]) {
			continue
		}
		wt := 1 / (math.Abs(m.y[T]) + 4*scale)
		p := x[0]
		if g != 0 {
			p *= math.Exp(g * m.ageOf(T))
		}
		d := x[0]*m.dayLevel(T) - p
		sxe += wt * d * (m.y[T] - p)
		sxx += wt * d * d
		n++
	}
	w := levelWeights
	if n*m.rowStep() >= m.per && sxx > 0 {
		b := math.Min(1, math.Max(0, sxe/sxx))
		w = weights{1 - b, 0, b}
	}
	w[growthSlot] = g
	m.levels[key] = w
	return w
}

// growthSlot is where a levelled expert's weights keep the growth its profile is carried
// forward by (0 for the levelled expert, growthAt's for the trended one).
const growthSlot = nFeatures - 1

// levelPredict is a levelled or trended expert's forecast for target T with weights w
// (levelAt): the profile carried forward by the growth in w, moved the share w[2] of the way to
// the profile scaled by the last day's level.
func (m *seasonal) levelPredict(T int, w weights) (float64, bool) {
	x := m.row(T)
	if x == nil {
		return 0, false
	}
	p := x[0]
	if g := w[growthSlot]; g != 0 {
		p *= math.Exp(g * m.ageOf(T))
	}
	return max(0, w[0]*p+w[2]*x[0]*m.dayLevel(T)), true
}

// Growth. The profiles are taken over six weeks, so their values are three weeks old on
// average: on a load growing 2 % a week they sit 6 % below it. The level ratios move a forecast
// towards the last hours' level, but the stacks' ridge and the levelled expert's share β (fitted
// to how much of a day's level persists into the next, 0.2–0.6) take only part of it, and a
// week's ratio, which would take the growth whole, is as noisy as the growth is large (a
// week's level varies by 2–3 % on its own). The growth over eight weeks is known far more
// precisely. growthMinDays and growthMaxPerDay bound its estimate.
const (
	// growthMinDays is the fewest days with values growthAt reads before it estimates a growth,
	// and the trended expert is a candidate: two weeks, the shortest that pairs every weekday
	// with itself a week later (chosen on tune: see trended).
	growthMinDays = 14
	// growthMaxPerDay caps the growth a day: 2 % a day, 15 % a week, beyond anything the load
	// sustains for the eight weeks it is read from; a step (a migration) is no growth, and the
	// slopes' median ignores the pairs of days across it.
	growthMaxPerDay = 0.02
)

// growthAt is the load's growth per day at origin o, memoised: the median slope of the log of
// the daily mean (the 24 hours ending at o, then the 24 before, and so on over the last window
// points) between every pair of days a whole number of weeks apart (Theil–Sen on pairs of the
// same weekday, so a weekly cycle is no slope; the median ignores an outage or a holiday), 0
// with fewer than growthMinDays days with values (at least half of each day observed), capped
// at ±growthMaxPerDay.
func (m *seasonal) growthAt(o, window int) float64 {
	if g, ok := m.growths[o]; ok {
		return g
	}
	if m.ly == nil { // only the weekday/weekend model's trended expert reads a growth
		m.ly, m.ln = observedSums(m.y, false)
	}
	days := min(window, o+1) / m.day // whole days only
	logs := make([]float64, days)    // NaN for a day without enough values
	n := 0
	for j := range days {
		logs[j] = math.NaN()
		hi := o - j*m.day // the day's last index
		lo := hi - m.day  // the index before its first
		c := m.ln[hi+1] - m.ln[lo+1]
		if c < m.day/2 {
			continue
		}
		if mean := (m.ly[hi+1] - m.ly[lo+1]) / float64(c); mean > 0 {
			logs[j] = math.Log(mean)
			n++
		}
	}
	g := 0.0
	if n >= growthMinDays {
		var slopes []float64
		for i := range logs {
			for j := i + 7; j < len(logs); j += 7 {
				if !math.IsNaN(logs[i]) && !math.IsNaN(logs[j]) {
					slopes = append(slopes, (logs[i]-logs[j])/float64(j-i))
				}
			}
		}
		if len(slopes) > 0 {
			g = math.Max(-growthMaxPerDay, math.Min(growthMaxPerDay, median(slopes)))
		}
	}
	m.growths[o] = g
	return g
}

// predict returns the point forecast for target T with weights w.
func (m *seasonal) predict(T int, w weights) (point float64, ok bool) {
	x := m.row(T)
	if x == nil {
		return 0, false
	}
	// Read in place: a copy of the row cost a sixth of a replay's forecasts.
	for i, v := range x {
		point += w[i] * v
	}
	return max(point, 0), true // the builtin: math.Max's result, inlined
}

// weightsAt returns the weights fitted at origin o on the last window targets, memoised: the
// walker and the model selection ask for the same origins again and again.
func (m *seasonal) weightsAt(o, window int) weights {
	if w, ok := m.fits[o]; ok {
		return w
	}
	w := m.fit(o, window)
	m.fits[o] = w
	return w
}

// rowStep is the spacing of the rows a fit reads: multiples of the stride from the first at or
// after the window's start (ceilTo), so every fit reads the same rows of the series.
func (m *seasonal) rowStep() int { return max(1, m.stride) }

// fit sets the weights by ridge regression on the targets whose values are known at origin o
// (T ≤ o) within the last window points, minimising Σ(y−ŵ·x)²/(y+4·ȳ) — nearly the squared
// absolute error, so busy hours count more than idle ones as they do in WAPE, with quiet hours
// slightly favoured — plus λ‖w−prior‖². λ is a
// tenth of the mean diagonal of the normal matrix: enough to keep collinear predictors stable,
// little enough to let the data speak after a couple of periods.
func (m *seasonal) fit(o, window int) weights {
	lo := max(0, o-window+1)
	scale := meanObserved(m.y[lo : o+1])
	// The rows and their weights first, then the sums of the normal equations one row i of the
	// matrix at a time over a block of rows, its nine sums held in registers instead of read and
	// written back for every row. Each sum still adds the same products, (wt·xᵢ)·xⱼ as
	// wt * x[i] * x[j] evaluates, in the same order of T: the weights come out the same to the
	// bit.
	step := m.rowStep()
	if m.fitRows == nil {
		// Room for the rows of a whole window at once: the fits' windows fill as the walk goes.
		n := min(window, len(m.y))/step + 1
		m.fitRows, m.fitWts, m.fitYs = make([]int32, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	}
	rows, wts, ys := m.fitRows[:0], m.fitWts[:0], m.fitYs[:0]
	for T := ceilTo(lo, step); T <= o; T += step {
		if m.row(T) == nil || math.IsNaN(m.y[T]) {
			continue
		}
		rows = append(rows, int32(T/step-m.grid0))
		wts = append(wts, 1/(math.Abs(m.y[T])+4*scale))
		ys = append(ys, m.y[T])
	}
	m.fitRows, m.fitWts, m.fitYs = rows, wts, ys
	if len(rows) < nFeatures {
		return priorWeights
	}
	var a [nFeatures][nFeatures]float64
	var b [nFeatures]float64
	// block is how many rows' features stay in the L1 cache over the eight passes.
	const block = 256
	// The sums below are written out for eight features.
	var _ [1]struct{} = [nFeatures - 7]struct{}{}
	for c := 0; c < len(rows); c += block {
		to := min(len(rows), c+block)
		rs, ws, vs := rows[c:to], wts[c:to], ys[c:to]
		for i := range nFeatures {
			ai := &a[i]
			a0, a1, a2, a3, a4, a5, a6, a7, bi := ai[0], ai[1], ai[2], ai[3], ai[4], ai[5], ai[6], ai[7], b[i]
			for k, r := range rs {
				x := &m.feats[r]
				wx := ws[k] * x[i]
				bi += wx * vs[k]
				a0 += wx * x[0]
				a1 += wx * x[1]
				a2 += wx * x[2]
				a3 += wx * x[3]
				a4 += wx * x[4]
				a5 += wx * x[5]
				a6 += wx * x[6]
				a7 += wx * x[7]
			}
			*ai = [nFeatures]float64{a0, a1, a2, a3, a4, a5, a6, a7}
			b[i] = bi
		}
	}
	return ridge(a, b, priorWeights)
}

// quantile returns the q-quantile of x, which holds no NaN, by linear interpolation, reordering
// x; 0 when empty. It reads the two values of ranks around q·(len(x)−1) (selectRank) where a
// sort of all of them cost a sixth of a margin refit.
func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	pos := q * float64(len(x)-1)
	lo := int(math.Floor(pos))
	selectRank(x, lo)
	hi := x[lo]
	if lo+1 < len(x) {
		hi = slices.Min(x[lo+1:]) // the value of rank lo+1: x[lo+1:] holds the larger ones
	}
	return x[lo] + (hi-x[lo])*(pos-float64(lo))
}

// selectRank reorders x, which holds no NaN, so that x[k] is the value a sort would put there,
// no larger value before it and no smaller one after it (Hoare's selection, the median of three
// as pivot).
func selectRank(x []float64, k int) {
	lo, hi := 0, len(x)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if x[mid] < x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] < x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[hi] < x[mid] {
			x[hi], x[mid] = x[mid], x[hi]
		}
		p := x[mid]
		i, j := lo, hi
		for i <= j {
			for x[i] < p {
				i++
			}
			for x[j] > p {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i, j = i+1, j-1
			}
		}
		// x[lo..j] ≤ p, x[i..hi] ≥ p and x[j+1..i−1] = p.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// ridge solves (A+λI)w = b+λ·prior by Gaussian elimination with partial pivoting, λ being a
// tenth of A's mean diagonal.
func ridge(a [nFeatures][nFeatures]float64, b [nFeatures]float64, prior weights) weights {
	lambda := 0.0
	for i := range a {
		lambda += a[i][i]
	}
	lambda *= 0.1 / nFeatures
	var m [nFeatures][nFeatures + 1]float64
	for i := range a {
		copy(m[i][:nFeatures], a[i][:])
		m[i][i] += lambda
		m[i][nFeatures] = b[i] + lambda*prior[i]
	}
	for c := 0; c < nFeatures; c++ {
		p := c
		for r := c + 1; r < nFeatures; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		if m[c][c] == 0 {
			return prior
		}
		for r := 0; r < nFeatures; r++ {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for k := c; k <= nFeatures; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	var w weights
	for i := range w {
		w[i] = m[i][nFeatures] / m[i][i]
	}
	return w
}

// recent is the mean of the last hour before the origin (persistence), p when nothing is known;
// it carries short horizons, and the fit gives it no weight at long ones.
func (m *seasonal) recent(o int, p float64) float64 {
	lo := max(0, o+1-m.last)
	if v := m.cy[o+1] - m.cy[lo]; v > 0 {
		return v / float64(max(m.cn[o+1]-m.cn[lo], 1))
	}
	return p
}

// lastValue is the value at the origin, or the latest one within the last hour, p when none:
// persistence of the latest step. The hour's mean (recent) lags a step change by half an hour,
// which at a 15-minute horizon is most of the error on crane's input1, whose batch bursts lift
// the load 5 → 45 GPUs within a minute and hold it for an hour; the fit gives it weight only at
// horizons where the latest value still says something.
func (m *seasonal) lastValue(o int, p float64) float64 {
	for i := o; i >= max(0, o+1-m.last); i-- {
		if !math.IsNaN(m.y[i]) {
			return m.y[i]
		}
	}
	return p
}
