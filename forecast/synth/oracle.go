package synth

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// truth is what the generator knows of each sample besides its value: the value before the
// noise (and before the saturation limit), the noise's two lasting deviations, and, for Drift,
// the latent log level the noise multiplies.
type truth struct {
	clean      []float64
	fast, slow []float64
	latent     []float64
	// rhoFast and rhoSlow are the deviations' correlations from one sample to the next,
	// fastSD, slowSD and iid their standard deviations and the independent draw's.
	rhoFast, rhoSlow    float64
	fastSD, slowSD, iid float64
	// Drift's latent log level: x ← rhoLatent·x + latentSD·z, plus a jump of jumpSD·z with
	// probability jumpP, at every sample; rhoLatent is 0 for the families without one.
	rhoLatent, latentSD, jumpP, jumpSD float64
	limit                              float64 // the saturation level (Batch), +Inf for none
}

// record appends a sample's truth: its value before the noise, its latent log level, and the
// noise's state after drawing it.
func (t *truth) record(clean, latent float64, n *noise) {
	t.clean = append(t.clean, clean)
	t.latent = append(t.latent, latent)
	t.fast, t.slow = append(t.fast, n.fast), append(t.slow, n.slow)
	t.rhoFast, t.rhoSlow, t.fastSD, t.slowSD, t.iid = n.rhoFast, n.rhoSlow, n.fastSD, n.slowSD, n.iid
}

// stepLatent carries Drift's latent log level x one sample on: the generator's step, which the
// oracle's futures repeat.
func (t *truth) stepLatent(x float64, r *rng) float64 {
	x = t.rhoLatent*x + t.latentSD*r.norm()
	if r.float() < t.jumpP {
		x += t.jumpSD * r.norm()
	}
	return x
}

// oracleDraws is how many futures the oracle draws for each forecast: the median of 301 draws is
// within about 7 % of a standard deviation of the predictive distribution's own.
const oracleDraws = 301

// state is the noise's state at a sample: the two deviations and Drift's latent log level.
type state struct{ fast, slow, latent float64 }

// median forecasts the mean of the values at samples js (increasing, all after o) by the median
// of that mean over oracleDraws futures, each drawn from a state at o that start returns: the
// deviations and the latent level carried forward as the generator carries them, the
// independent draw and the saturation limit applied to each sample. The median, because it
// minimises the absolute error WAPE counts; the mean of the samples, because the hourly mean of
// a saturated load sits below the limit when a single sample's median is at it.
func (t *truth) median(o int, js []int, r *rng, draws []float64, start func() state) float64 {
	for d := range draws {
		s0 := start()
		fast, slow, x, at, sum := s0.fast, s0.slow, s0.latent, o, 0.0
		for _, j := range js {
			// The deviations are AR(1): n samples on, exactly ρⁿ of the deviation plus a normal
			// draw of variance (1−ρ²ⁿ)·sd². The latent level's jumps are not normal, so it is
			// carried a sample at a time.
			n := float64(j - at)
			rf, rs := math.Pow(t.rhoFast, n), math.Pow(t.rhoSlow, n)
			fast = rf*fast + math.Sqrt(1-rf*rf)*t.fastSD*r.norm()
			slow = rs*slow + math.Sqrt(1-rs*rs)*t.slowSD*r.norm()
			for ; t.rhoLatent != 0 && at < j; at++ {
				x = t.stepLatent(x, r)
			}
			at = j
			v := t.clean[j] * math.Exp(x+fast+slow+t.iid*r.norm()-0.5*t.iid*t.iid)
			sum += math.Min(t.limit, math.Max(0, v))
		}
		draws[d] = sum / float64(len(js))
	}
	sort.Float64s(draws)
	return draws[len(draws)/2]
}

// estimate is a normal belief about the noise's state: its mean and covariance, in the order
// fast, slow, latent.
type estimate struct {
	m [3]float64
	p [3][3]float64
}

// filter returns, for every sample of values, the belief about the noise's state after seeing
// the values up to it: a Kalman filter on log(value/clean), which is the state's sum plus the
// independent draw (a normal of sd iid, once its −iid²/2 is added back). The state evolves as
// the generator's (truth.stepLatent's jumps taken as normal, of the same variance). Values that
// say nothing exact of the state are skipped: missing ones, zeros, and a saturated load at its
// limit. Before the first sample the state is 0, as the generator starts it.
func (t *truth) filter(values []float64) []estimate {
	rho := [3]float64{t.rhoFast, t.rhoSlow, t.rhoLatent}
	q := [3]float64{(1 - t.rhoFast*t.rhoFast) * t.fastSD * t.fastSD, (1 - t.rhoSlow*t.rhoSlow) * t.slowSD * t.slowSD, 0}
	if t.rhoLatent != 0 {
		q[2] = t.latentSD*t.latentSD + t.jumpP*t.jumpSD*t.jumpSD
	}
	out := make([]estimate, len(values))
	var e estimate
	for i, y := range values {
		// One sample on: m ← ρ·m, P ← ρPρ + Q.
		for a := range 3 {
			e.m[a] *= rho[a]
			for b := range 3 {
				e.p[a][b] *= rho[a] * rho[b]
			}
			e.p[a][a] += q[a]
		}
		if c := t.clean[i]; !math.IsNaN(y) && y > 0 && y < t.limit && c > 0 {
			z := math.Log(y/c) + 0.5*t.iid*t.iid
			// The observation is the state's sum: gain K = P·1/(1ᵀP1 + iid²).
			var p1 [3]float64
			s := t.iid * t.iid
			for a := range 3 {
				p1[a] = e.p[a][0] + e.p[a][1] + e.p[a][2]
				s += p1[a]
			}
			innov := z - (e.m[0] + e.m[1] + e.m[2])
			for a := range 3 {
				e.m[a] += p1[a] / s * innov
				for b := range 3 {
					e.p[a][b] -= p1[a] * p1[b] / s
				}
			}
		}
		out[i] = e
	}
	return out
}

// normal3 is a belief ready to draw from: its mean and its covariance's Cholesky factor.
type normal3 struct {
	m [3]float64
	l [3][3]float64
}

// sampler factors the belief's covariance once for the draws of one forecast.
func (e *estimate) sampler() normal3 {
	var l [3][3]float64
	for a := range 3 {
		for b := 0; b <= a; b++ {
			v := e.p[a][b]
			for k := range b {
				v -= l[a][k] * l[b][k]
			}
			if a == b {
				l[a][a] = math.Sqrt(math.Max(v, 0))
			} else if l[b][b] > 0 {
				l[a][b] = v / l[b][b]
			}
		}
	}
	return normal3{e.m, l}
}

// draw returns a state drawn from the belief: its mean plus the Cholesky factor times three
// standard normals.
func (n *normal3) draw(r *rng) state {
	z := [3]float64{r.norm(), r.norm(), r.norm()}
	var x [3]float64
	for a := range 3 {
		x[a] = n.m[a]
		for b := 0; b <= a; b++ {
			x[a] += n.l[a][b] * z[b]
		}
	}
	return state{x[0], x[1], x[2]}
}

// withEvents are the families with one-off events (a level shift, holidays, outages, a
// migration) that nothing before them announces: an oracle that knew them would bound nothing.
var withEvents = map[Family]bool{Shift: true, Holiday: true, Outage: true, Migration: true}

// Oracle returns, on a grid of the given step (a whole multiple of the family's), the forecast
// of each step's mean value made horizon earlier, from the end of the step horizon before it,
// by an oracle that knows the generator: the series without its noise, the state of the noise
// (and of Drift's latent level) at the origin, and how they evolve. Its forecast is the median
// of the step's mean over futures drawn from that state (truth.median), over the samples
// Resample averages. A forecaster that sees only the series knows less, so the oracle's error
// estimates the floor of what can be reached on the series (an estimate: its median is drawn,
// not computed). Families with one-off events have no oracle (withEvents). A point with no
// observed sample, or within horizon of the start, is NaN. The draws are seeded from the family
// and seed, so the same arguments always give the same forecasts.
func Oracle(f Family, seed uint64, horizon, step time.Duration) (forecast.Series, error) {
	return oracle(f, seed, horizon, step, false)
}

// FilterOracle is Oracle without the noise's state: it knows the series without its noise and
// how the noise evolves, but not where the noise stands at the origin. It estimates that from
// the values up to the origin, as well as they can tell it (truth.filter: a Kalman filter,
// optimal for the generator's normal deviations), and draws its futures from that estimate. A
// forecaster must also learn the shape and the noise's laws from the series, so FilterOracle's
// error is a floor no forecaster can be expected to pass, and a tighter one than Oracle's, whose
// knowledge of the state no one who sees only the series has.
func FilterOracle(f Family, seed uint64, horizon, step time.Duration) (forecast.Series, error) {
	return oracle(f, seed, horizon, step, true)
}

func oracle(f Family, seed uint64, horizon, step time.Duration, filtered bool) (forecast.Series, error) {
	if withEvents[f] {
		return forecast.Series{}, fmt.Errorf("family %q has one-off events no forecast can know of: it has no oracle", f)
	}
	s, tr, err := generate(f, seed)
	if err != nil {
		return forecast.Series{}, err
	}
	if step < s.Step || step%s.Step != 0 {
		return forecast.Series{}, fmt.Errorf("step %s: must be a whole multiple of the family's %s", step, s.Step)
	}
	if horizon < step || horizon%step != 0 {
		return forecast.Series{}, fmt.Errorf("horizon %s: must be a whole multiple of the step %s", horizon, step)
	}
	if !s.Start.Equal(s.Start.Truncate(step)) {
		return forecast.Series{}, fmt.Errorf("series starts at %s, not on the %s grid", s.Start, step)
	}
	label := "oracle/"
	var beliefs []estimate
	if filtered {
		label, beliefs = "filter-oracle/", tr.filter(s.Values)
	}
	k, lead := int(step/s.Step), int(horizon/step)
	out := forecast.Series{Start: s.Start, Step: step, Values: make([]float64, (s.Len()+k-1)/k)}
	r, draws, js := newRNG(seed^hashString(label+string(f))), make([]float64, oracleDraws), make([]int, 0, k)
	for b := range out.Values {
		out.Values[b] = math.NaN()
		if b < lead {
			continue
		}
		o := (b-lead+1)*k - 1 // the last sample of the origin's step
		js = js[:0]
		for j := b * k; j < min((b+1)*k, s.Len()); j++ {
			if !math.IsNaN(s.Values[j]) {
				js = append(js, j)
			}
		}
		if len(js) == 0 {
			continue
		}
		start := func() state { return state{tr.fast[o], tr.slow[o], tr.latent[o]} }
		if filtered {
			belief := beliefs[o].sampler()
			start = func() state { return belief.draw(r) }
		}
		out.Values[b] = tr.median(o, js, r, draws, start)
	}
	return out, nil
}
