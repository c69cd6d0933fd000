// Package synth generates synthetic load series with known structure — diurnal and weekly
// shapes, trends, level shifts, holidays, noise and gaps — from fixed seeds, so the forecaster
// can be evaluated on series it was never tuned on (testdata/traces/eval/synth) and tuned on
// others of the same kinds (testdata/traces/tune/synth). Like forecast it is pure: a family and a
// seed in, a series out, the same on every machine (the random numbers come from a SplitMix64
// generator defined here, not from math/rand, whose streams are not promised across releases).
package synth

//go:generate go test -run TestTraces -update

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Family is a kind of series: what the generator varies with the seed is said in its doc.
type Family string

// The families. Each draws its level, shape, weekend factor, trend and noise from the seed;
// the names say what else it adds.
const (
	// Web is request traffic: two daily peaks (late morning, evening) at seed-drawn hours, a
	// weekend that is quieter or busier than the week, a slow trend and multiplicative noise.
	// 30-minute samples, eight weeks.
	Web Family = "web"
	// Batch is cluster CPU: a floor with daily batch jobs at fixed minutes (a plateau of two to
	// five hours and a shorter second job), lighter at weekends, capped at a saturation level
	// that some seeds' jobs reach.
	// 15-minute samples, six weeks.
	Batch Family = "batch"
	// Shift is Web with a level shift (down to 50–70 % or up to 140–200 %) at a seed-drawn
	// time in the scored part of the series, and sometimes a second one back.
	Shift Family = "shift"
	// Holiday is Web with two or three single days at weekend level (a weekday holiday; one
	// that falls on a weekend changes nothing) and one four-to-six-day stretch at half to
	// two-thirds of the load (a holiday season).
	Holiday Family = "holiday"
	// Gaps is Web or Batch with two whole days missing and six short outages of one to six hours.
	Gaps Family = "gaps"
	// Trend is Web growing (or shrinking) by 5–10 % a week.
	Trend Family = "trend"
	// Noisy is a weak diurnal shape (10–25 % of the level) under heavy noise (20–30 %): the
	// profile is hard to see and the baselines are hard to beat.
	Noisy Family = "noisy"
	// Drift has no cycle: a level that wanders (a mean-reverting random walk in log space) with
	// occasional jumps. Hourly samples, eight weeks.
	Drift Family = "drift"
	// Short is Batch or Web with only 16 days of history at 15-minute samples, the regime of
	// crane's input1 and input2, where a weekly cycle cannot be confirmed.
	Short Family = "short"
	// Outage is Web or Batch with one to three one-off events after the second week: an outage
	// (the load at 0–20 % for two hours to a day) or a surge (150–250 % for two to twelve hours).
	Outage Family = "outage"
	// Migration is Web or Batch whose level changes for good by a large factor (to 5–30 % or to
	// 3–8×) at a seed-drawn time in the scored part: a service moved, a cluster resized.
	Migration Family = "migration"
	// Zoned is Web or Batch whose clock is 3–12 hours ahead of or behind UTC, as read in UTC: a
	// load serving people in another time zone, or a controller whose time zone is not theirs.
	// Its weekend and its days start off the UTC calendar's midnight.
	Zoned Family = "zoned"
)

// Families lists every family in a fixed order.
var Families = []Family{Web, Batch, Shift, Holiday, Gaps, Trend, Noisy, Drift, Short, Outage, Migration, Zoned}

// Generate returns the series of family f for seed: values on a regular grid, NaN where the
// family leaves gaps. The same family and seed always give the same series.
func Generate(f Family, seed uint64) (forecast.Series, error) {
	s, _, err := generate(f, seed)
	return s, err
}

// generate returns the series of family f for seed and what the generator knows of it.
func generate(f Family, seed uint64) (forecast.Series, *truth, error) {
	r := newRNG(seed ^ hashString(string(f)))
	tr := &truth{limit: math.Inf(1)}
	switch f {
	case Web, Shift, Holiday, Trend, Noisy:
		return web(f, r, 30*time.Minute, 56, tr), tr, nil
	case Batch:
		return batch(r, 15*time.Minute, 42, tr), tr, nil
	case Gaps:
		s := webOrBatch(f, r, tr)
		addGaps(s, r)
		return s, tr, nil
	case Drift:
		return drift(r, tr), tr, nil
	case Outage, Migration:
		s := webOrBatch(Web, r, tr)
		if f == Outage {
			outages(s, r)
		} else {
			migrate(s, r)
		}
		return s, tr, nil
	case Zoned:
		s := webOrBatch(Web, r, tr)
		// The values were drawn on the load's own clock; read in UTC they start off by the zone.
		zone := time.Duration(3+r.intn(10)) * time.Hour
		if r.float() < 0.5 {
			zone = -zone
		}
		s.Start = s.Start.Add(-zone)
		return s, tr, nil
	case Short:
		if r.float() < 0.5 {
			return batch(r, 15*time.Minute, 16, tr), tr, nil
		}
		return web(Web, r, 15*time.Minute, 16, tr), tr, nil
	}
	return forecast.Series{}, nil, fmt.Errorf("family %q: not one of %v", f, Families)
}

// webOrBatch draws, with even odds, a web series of family wf (eight weeks at 30 minutes) or a
// batch one (six weeks at 15 minutes).
func webOrBatch(wf Family, r *rng, tr *truth) forecast.Series {
	if r.float() < 0.5 {
		return web(wf, r, 30*time.Minute, 56, tr)
	}
	return batch(r, 15*time.Minute, 42, tr)
}

// start draws a start time: midnight UTC of a day in 2023 or 2024, so series begin on any
// weekday.
func start(r *rng) time.Time {
	return time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.intn(700))
}

// bump is a bell of width w hours centred on hour c of the day, wrapping around midnight.
func bump(h, c, w float64) float64 {
	d := math.Mod(math.Abs(h-c), 24)
	d = math.Min(d, 24-d)
	return math.Exp(-0.5 * d * d / (w * w))
}

// weekend tells whether t falls on a Saturday or Sunday (UTC).
func weekend(t time.Time) bool {
	d := t.Weekday()
	return d == time.Saturday || d == time.Sunday
}

// noise is the multiplicative noise of a series: an AR(1) deviation that lasts hours (ρ = 0.9
// an hour), one that lasts days (ρ = 0.6 a day) and an independent draw per sample. The day-level
// part is what NYC taxi shows (tune set): its daily totals deviate from the median of the same
// weekday in the surrounding weeks by 4 % (robust standard deviation), and the deviations
// persist (lag-one-day correlation 0.76) — weather and events move a day's level, and the next
// day's too.
type noise struct {
	r                *rng
	fast, slow       float64
	rhoFast, rhoSlow float64
	fastSD, slowSD   float64
	iid              float64
}

func newNoise(r *rng, fastSD, slowSD, iid float64, step time.Duration) *noise {
	// The correlations are per hour and per day whatever the step, so the deviations last as
	// long at every resolution.
	return &noise{r: r, rhoFast: math.Pow(0.9, step.Hours()), rhoSlow: math.Pow(0.6, step.Hours()/24),
		fastSD: fastSD, slowSD: slowSD, iid: iid}
}

func (n *noise) next() float64 {
	n.fast = n.rhoFast*n.fast + math.Sqrt(1-n.rhoFast*n.rhoFast)*n.fastSD*n.r.norm()
	n.slow = n.rhoSlow*n.slow + math.Sqrt(1-n.rhoSlow*n.rhoSlow)*n.slowSD*n.r.norm()
	return math.Exp(n.fast + n.slow + n.iid*n.r.norm() - 0.5*n.iid*n.iid)
}

// web generates the Web family and its variants (Shift, Holiday, Trend, Noisy) over the given
// number of days.
func web(f Family, r *rng, step time.Duration, days int, tr *truth) forecast.Series {
	perDay := int(forecast.Day / step)
	s := forecast.Series{Start: start(r), Step: step, Values: make([]float64, days*perDay)}
	level := 20 * math.Pow(100, r.float()) // 20 to 2000
	p1, w1, a1 := 9.5+3*r.float(), 2+2*r.float(), 0.5+0.4*r.float()
	p2, w2, a2 := 18.5+3*r.float(), 1.5+1.5*r.float(), 0.5+0.6*r.float()
	floor := 0.15 + 0.3*r.float()
	// A quieter weekend (offices, B2B) or a busier one (consumer apps), its peak later.
	wkFactor := 0.55 + 0.35*r.float()
	if r.float() < 0.35 {
		wkFactor = 1.1 + 0.25*r.float()
	}
	wkLate := 1 + 1.5*r.float()
	growth := -0.01 + 0.04*r.float() // per week
	amp := 1.0
	iid, fastSD, slowSD := 0.04+0.08*r.float(), 0.02+0.03*r.float(), 0.03+0.03*r.float()
	switch f {
	case Trend:
		growth = 0.05 + 0.05*r.float()
		if r.float() < 0.3 {
			growth = -growth / 2
		}
	case Noisy:
		amp = 0.1 + 0.15*r.float()
		iid, fastSD = 0.2+0.1*r.float(), 0.06+0.04*r.float()
	}
	// Regime breaks, placed after the first four weeks (the backtest's warm-up on long series).
	n := len(s.Values)
	shiftAt, shiftBack, shiftBy := n, n, 1.0
	if f == Shift {
		shiftAt = n*2/5 + r.intn(n*2/5)
		shiftBy = 0.5 + 0.2*r.float()
		if r.float() < 0.5 {
			shiftBy = 1.4 + 0.6*r.float()
		}
		if r.float() < 0.4 {
			shiftBack = shiftAt + perDay*(7+r.intn(10))
		}
	}
	holiday := map[int]float64{} // day index → factor
	if f == Holiday {
		for range 2 + r.intn(2) {
			holiday[28+r.intn(days-28)] = -1 // a day at weekend level
		}
		season := 30 + r.intn(days-37)
		for d := season; d < season+4+r.intn(3); d++ {
			holiday[d] = 0.5 + 0.17*r.float()
		}
	}
	nz := newNoise(r, fastSD, slowSD, iid, step)
	for i := range s.Values {
		t := s.TimeAt(i)
		h := float64(t.Hour()) + float64(t.Minute())/60
		day := i / perDay
		wk, factor := weekend(t), 1.0
		if hf, ok := holiday[day]; ok {
			if hf < 0 {
				wk = true
			} else {
				factor = hf
			}
		}
		shape := floor + a1*bump(h, p1, w1) + a2*bump(h, p2, w2)
		if wk {
			shape = wkFactor * (floor + a1*bump(h, p1+wkLate, w1+1) + a2*bump(h, p2+wkLate/2, w2))
		}
		shape = 1 + amp*(shape/(floor+0.5*(a1+a2))-1)
		lv := level * math.Pow(1+growth, float64(i)/float64(7*perDay))
		if i >= shiftAt && i < shiftBack {
			lv *= shiftBy
		}
		clean := lv * factor * shape
		s.Values[i] = math.Max(0, clean*nz.next())
		tr.record(clean, 0, nz)
	}
	return s
}

// batch generates cluster CPU with daily jobs, over the given number of days.
func batch(r *rng, step time.Duration, days int, tr *truth) forecast.Series {
	perDay := int(forecast.Day / step)
	s := forecast.Series{Start: start(r), Step: step, Values: make([]float64, days*perDay)}
	level := 5 + 95*r.float()
	j1, d1, m1 := float64(r.intn(24)), 2+3*r.float(), 1.5+2.5*r.float()
	j2, d2, m2 := float64(r.intn(24)), 0.5+1.5*r.float(), 0.5+1.5*r.float()
	wkJobs := 0.2 + 0.6*r.float()
	diurnal := 0.1 + 0.3*r.float()
	// The saturation level: sometimes below the biggest job's plateau (a CPU limit pins it, as on
	// crane's input2), sometimes above it.
	limit := level * (1 + diurnal + m1 + m2) * (0.6 + 0.5*r.float())
	growth := -0.01 + 0.03*r.float()
	nz := newNoise(r, 0.02+0.04*r.float(), 0.03*r.float(), 0.03+0.07*r.float(), step)
	tr.limit = limit
	in := func(h, from, dur float64) float64 { // 1 inside [from, from+dur) hours, wrapping
		x := math.Mod(h-from+24, 24)
		if x < dur {
			return 1
		}
		return 0
	}
	for i := range s.Values {
		t := s.TimeAt(i)
		h := float64(t.Hour()) + float64(t.Minute())/60
		jobs := m1*in(h, j1, d1) + m2*in(h, j2, d2)
		if weekend(t) {
			jobs *= wkJobs
		}
		v := level * (1 + diurnal*bump(h, 14, 4) + jobs) * math.Pow(1+growth, float64(i)/float64(7*perDay))
		s.Values[i] = math.Min(limit, v*nz.next())
		tr.record(v, 0, nz)
	}
	return s
}

// drift generates a series with no cycle: hourly, eight weeks.
func drift(r *rng, tr *truth) forecast.Series {
	s := forecast.Series{Start: start(r), Step: time.Hour, Values: make([]float64, 8*7*24)}
	level := 10 + 490*r.float()
	x := 0.0
	nz := newNoise(r, 0.02, 0, 0.05+0.05*r.float(), time.Hour)
	// A jump about every eight days.
	tr.rhoLatent, tr.latentSD, tr.jumpP, tr.jumpSD = 0.98, 0.05, 0.005, 0.4
	for i := range s.Values {
		x = tr.stepLatent(x, r)
		s.Values[i] = level * math.Exp(x) * nz.next()
		tr.record(level, x, nz)
	}
	return s
}

// addGaps blanks two whole days and six outages of one to six hours, after the first week.
func addGaps(s forecast.Series, r *rng) {
	perHour := int(time.Hour / s.Step)
	perDay := 24 * perHour
	days := s.Len() / perDay
	for range 2 {
		d := 7 + r.intn(days-7)
		for i := d * perDay; i < (d+1)*perDay && i < s.Len(); i++ {
			s.Values[i] = math.NaN()
		}
	}
	for range 6 {
		from := 7*perDay + r.intn(s.Len()-7*perDay)
		for i := from; i < from+(1+r.intn(6))*perHour && i < s.Len(); i++ {
			s.Values[i] = math.NaN()
		}
	}
}

// outages scales one to three spans after the second week: to 0–20 % for two hours to a day, or
// to 150–250 % for two to twelve hours.
func outages(s forecast.Series, r *rng) {
	perHour := int(time.Hour / s.Step)
	from := s.Steps(2 * forecast.Week)
	for range 1 + r.intn(3) {
		at := from + r.intn(s.Len()-from)
		factor, hours := 0.2*r.float(), 2+r.intn(23)
		if r.float() < 0.4 {
			factor, hours = 1.5+r.float(), 2+r.intn(11)
		}
		for i := at; i < at+hours*perHour && i < s.Len(); i++ {
			s.Values[i] *= factor
		}
	}
}

// migrate scales everything from a point in the last 60 % of s by 5–30 % or by 3–8.
func migrate(s forecast.Series, r *rng) {
	at := s.Len()*2/5 + r.intn(s.Len()*3/5)
	factor := 0.05 + 0.25*r.float()
	if r.float() < 0.5 {
		factor = 3 + 5*r.float()
	}
	for i := at; i < s.Len(); i++ {
		s.Values[i] *= factor
	}
}

// WriteCSV writes s as `ts,value` rows (Unix seconds, five significant digits), leaving out the
// missing points, as recorded traces show an outage.
func WriteCSV(w io.Writer, s forecast.Series) error {
	buf := []byte("ts,value\n")
	for i, v := range s.Values {
		if math.IsNaN(v) {
			continue
		}
		buf = strconv.AppendInt(buf, s.TimeAt(i).Unix(), 10)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, v, 'g', 5, 64)
		buf = append(buf, '\n')
	}
	_, err := w.Write(buf)
	return err
}

// rng is SplitMix64 (Steele, Lea and Flood), small and fixed forever.
type rng struct{ x uint64 }

func newRNG(seed uint64) *rng { return &rng{x: seed} }

func (r *rng) next() uint64 {
	r.x += 0x9e3779b97f4a7c15
	z := r.x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn is uniform in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// norm is a standard normal draw (Box–Muller).
func (r *rng) norm() float64 {
	u := 1 - r.float() // (0, 1]
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// hashString is FNV-1a, so each family draws its own stream from the same seed.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
