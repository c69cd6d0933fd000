package forecast

import (
	"math"
	"testing"
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
		if got := e.upper(tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("upper(%g) = %g, want %g", tt.p, got, tt.want)
		}
	}
	if got := (ensemble{q: 0.3, ceiling: math.Inf(1)}).upper(90); math.Abs(got-117) > 1e-9 {
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
