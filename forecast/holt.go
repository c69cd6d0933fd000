package forecast

import "math"

// Smoothing constants of the non-seasonal fallback. α = 0.3 follows a level change within a few
// steps; β = 0.05 keeps the trend from chasing noise; φ = 0.9 damps the trend so a ramp is not
// extrapolated forever (Gardner & McKenzie's damped trend).
const (
	holtAlpha = 0.3
	holtBeta  = 0.05
	holtPhi   = 0.9
)

// holt is Holt's linear exponential smoothing with a damped trend, run once over a series; the
// state after index o depends on values ≤ o only. Missing values are skipped: the state just
// advances by the damped trend.
type holt struct {
	level, trend []float64
	resid        []float64 // one-step relative errors, NaN where unknown
	// dampH and dampSum memoise φ+φ²+…+φʰ for the last h point was asked for.
	dampH   int
	dampSum float64
}

func newHolt(y []float64) *holt {
	m := &holt{level: make([]float64, len(y)), trend: make([]float64, len(y)), resid: make([]float64, len(y))}
	l, b, started := 0.0, 0.0, false
	for i, v := range y {
		m.resid[i] = math.NaN()
		switch {
		case !started && !math.IsNaN(v):
			l, started = v, true
		case started && math.IsNaN(v):
			l, b = l+holtPhi*b, holtPhi*b
		case started:
			pred := l + holtPhi*b
			if pred > 0 {
				m.resid[i] = (v - pred) / pred
			}
			nl := holtAlpha*v + (1-holtAlpha)*pred
			b = holtBeta*(nl-l) + (1-holtBeta)*holtPhi*b
			l = nl
		}
		m.level[i], m.trend[i] = l, b
		if !started {
			m.level[i] = math.NaN()
		}
	}
	return m
}

// point is the point forecast h steps after origin o (see predict), without the margin.
func (m *holt) point(o, h int) (float64, bool) {
	if o < 0 || o >= len(m.level) || math.IsNaN(m.level[o]) {
		return 0, false
	}
	if m.dampH != h {
		m.dampH, m.dampSum = h, 0
		for i, f := 1, holtPhi; i <= h; i, f = i+1, f*holtPhi {
			m.dampSum += f
		}
	}
	return math.Max(0, m.level[o]+m.dampSum*m.trend[o]), true
}

// predict forecasts h steps after origin o: level + (φ+φ²+…+φʰ)·trend, floored at zero, with the
// upper forecast scaled by the margin quantile of the one-step errors seen so far (widened by √h,
// the growth of a random walk's spread).
func (m *holt) predict(o, h int, margin float64) (point, upper float64, ok bool) {
	if o < 0 || o >= len(m.level) || math.IsNaN(m.level[o]) {
		return 0, 0, false
	}
	damp := 0.0
	for i, f := 1, holtPhi; i <= h; i, f = i+1, f*holtPhi {
		damp += f
	}
	point = math.Max(0, m.level[o]+damp*m.trend[o])
	var errs []float64
	for _, e := range m.resid[max(0, o-2016+1) : o+1] {
		if !math.IsNaN(e) {
			errs = append(errs, e)
		}
	}
	q := math.Max(0, quantile(errs, margin)) * math.Sqrt(float64(h))
	return point, point * (1 + q), true
}
