package forecast

import (
	"math"
	"strings"
	"testing"
)

// TestReshapedFallback walks tune's synthetic migration-3 a day ahead: a load with a weekly
// shape whose level changes for good in its scored part. Every expert misses the days after the
// change while same time yesterday follows it at once, so over the eight weeks judged the mix
// trails same time yesterday and falls back to it for weeks. Re-shaped by the weekday/weekend
// profile it beats same time yesterday on the evidence and replaces it; on the targets it
// forecast its error is well under same time yesterday's (across the weekend's edges, where
// same time yesterday copies a Friday into a Saturday), and a week or more of them are.
func TestReshapedFallback(t *testing.T) {
	s := loadTrace(t, "tune/synth/migration-3.csv")
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	h := w.HorizonSteps()
	var errFc, errNaive float64
	n := 0
	for o := 0; o+h < s.Len(); o++ {
		fc, err := w.At(o)
		if err != nil || !strings.HasPrefix(fc.Model, "reshaped/") || !strings.Contains(fc.Fallback, "re-shaped") {
			continue
		}
		y, naive := s.Values[o+h], s.Values[o+h-s.Steps(Day)]
		if math.IsNaN(y) || math.IsNaN(naive) {
			continue
		}
		errFc += math.Abs(y - fc.Point)
		errNaive += math.Abs(y - naive)
		n++
	}
	t.Logf("%d forecasts the re-shaped fallback: error %.0f, same time yesterday's %.0f", n, errFc, errNaive)
	if n < 7*s.Steps(Day) {
		t.Fatalf("%d forecasts the re-shaped fallback, want a week of them or more", n)
	}
	if errFc > 0.8*errNaive {
		t.Errorf("error %.0f where the fallback was the re-shaped one, want under 0.8 of same time yesterday's %.0f", errFc, errNaive)
	}
}
