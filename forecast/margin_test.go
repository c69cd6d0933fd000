package forecast

import (
	"math"
	"testing"
	"time"
)

func TestCeiling(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		v    []float64
		want float64
	}{
		// 2 of 20 values (10 % ≥ 5 %) within 3 % of the top 100.
		{"saturated", append(repeat(50, 18), 98, 100), 100},
		// 1 of 40 (2.5 % < 5 %): a one-off peak is no limit.
		{"one peak", append(repeat(50, 39), 100), math.Inf(1)},
		// 96 is 4 % below the top, outside the band: 1 of 40; at 97.5, inside it, 2 of 40.
		{"just outside the band", append(repeat(50, 38), 96, 100), math.Inf(1)},
		{"just inside the band", append(repeat(50, 38), 97.5, 100), 100},
		// Gaps count neither way: 2 of 20 observed.
		{"gaps", append(append(repeat(50, 18), nan, nan), 99, 100), 100},
		{"all gaps", []float64{nan, nan}, math.Inf(1)},
		{"all zero", repeat(0, 10), math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ceiling(tt.v); got != tt.want {
				t.Errorf("ceiling = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestUpperStopsAtTheCeiling(t *testing.T) {
	e := ensemble{q: 0.3, ceiling: 100}
	for _, tt := range []struct{ p, want float64 }{
		{50, 65},   // 50·1.3, under the ceiling
		{90, 100},  // 90·1.3 = 117, cut to the ceiling
		{120, 120}, // above the ceiling: the point stands, no margin
	} {
		if got := e.upper(0, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("upper(%g) = %g, want %g", tt.p, got, tt.want)
		}
	}
	if got := (ensemble{q: 0.3, ceiling: math.Inf(1)}).upper(0, 90); math.Abs(got-117) > 1e-9 {
		t.Errorf("upper(90) without a ceiling = %g, want 117", got)
	}
}

func repeat(x float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = x
	}
	return v
}

func TestMarginByTimeOfDay(t *testing.T) {
	// Half-hourly, starting at 01:00 UTC: step 2 is 02:00, the first step of the second two-hour
	// bin; a day has 48 steps, so step 46 is 00:00 of the next day, bin 0 again, and step 50 02:00.
	s := Series{Start: time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC), Step: 30 * time.Minute, Values: make([]float64, 96)}
	b := newPhaseBins(s)
	for _, tt := range []struct{ T, want int }{{0, 0}, {1, 0}, {2, 1}, {45, 11}, {46, 0}, {50, 1}} {
		if got := b.of(tt.T); got != tt.want {
			t.Errorf("bin of step %d = %d, want %d", tt.T, got, tt.want)
		}
	}
	if b.n() != 12 {
		t.Errorf("%d bins, want 12", b.n())
	}
	e := ensemble{q: 0.2, bins: b, qBin: []float64{0.5, 0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ceiling: math.Inf(1)}
	for _, tt := range []struct {
		T       int
		p, want float64
	}{{0, 10, 15}, {2, 10, 11}, {6, 10, 10}} { // bins 0, 1, 2: 10·1.5, 10·1.1, 10·1.0
		if got := e.upper(tt.T, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("upper(%d, %g) = %g, want %g", tt.T, tt.p, got, tt.want)
		}
	}
}
