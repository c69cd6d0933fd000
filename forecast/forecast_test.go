package forecast

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPredictFallsBack(t *testing.T) {
	tests := []struct {
		name         string
		s            Series
		opts         Options
		wantModel    string
		wantFallback string
	}{
		{"daily, two weeks", synthetic(14*24, func(i int) float64 { return daily(i) + 2*noise(i) }, nil), Options{Horizon: time.Hour}, "seasonal/day", ""},
		// 1.5 days of a daily shape: less than two periods.
		{"too short", synthetic(36, daily, nil), Options{Horizon: time.Hour}, "holt", "no daily or weekly cycle"},
		{"forced week, too short", synthetic(10*24, daily, nil), Options{Horizon: time.Hour, Period: PeriodWeek}, "seasonal/day", "less than two weeks"},
		{"noise", synthetic(14*24, func(i int) float64 { return 50 + 10*noise(i) }, nil), Options{Horizon: time.Hour}, "holt", "no daily or weekly cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := Predict(tt.s, tt.s.End(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Model != tt.wantModel || !strings.Contains(fc.Fallback, tt.wantFallback) {
				t.Errorf("Predict = %+v, want model %s and fallback containing %q", fc, tt.wantModel, tt.wantFallback)
			}
			if !(fc.Upper >= fc.Point) || fc.Point < 0 {
				t.Errorf("Upper %g < Point %g", fc.Upper, fc.Point)
			}
		})
	}
	_, err := Predict(synthetic(10, func(int) float64 { return math.NaN() }, nil), time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), Options{Horizon: time.Hour})
	if !errors.Is(err, ErrTooLittleHistory) {
		t.Errorf("all gaps: error = %v, want ErrTooLittleHistory", err)
	}
}

// TestWalkerNoLookAhead checks the property the backtest relies on: a forecast from origin o is
// the same whatever the series holds after o.
func TestWalkerNoLookAhead(t *testing.T) {
	s := loadTrace(t, "nab/nyc_taxi.csv")
	s.Values = s.Values[:8*7*48]
	for _, o := range []int{3 * 7 * 48, 5*7*48 + 17, 8*7*48 - 50} {
		w, _ := NewWalker(s, Options{Horizon: Day})
		want, err := w.At(o)
		if err != nil {
			t.Fatal(err)
		}
		cut := Series{Start: s.Start, Step: s.Step, Values: append([]float64(nil), s.Values...)}
		for i := o + 1; i < cut.Len(); i++ {
			cut.Values[i] = 1e9 * float64(i%3) // garbage after the origin
		}
		w2, _ := NewWalker(cut, Options{Horizon: Day})
		got, err := w2.At(o)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("origin %d: forecast changed with the future: %+v vs %+v", o, got, want)
		}
	}
}

func TestPredictGapsAreNotZeros(t *testing.T) {
	full := synthetic(21*24, daily, nil)
	gappy := synthetic(21*24, daily, func(i int) bool { return i%24 == 14 && i < 20*24 }) // every 14:00 missing
	now := full.End().Add(-10 * time.Hour)                                                // forecast 14:00 of the last day
	a, err := Predict(full, now, Options{Horizon: 5 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Predict(gappy, now, Options{Horizon: 5 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Read as zeros the missing 14:00s would drag the 14:00 forecast to ~0; skipped, the
	// forecast falls back to the trend model or the neighbours and stays near the peak (160).
	if b.Point < 0.5*a.Point {
		t.Errorf("gappy forecast %+v far below the full one %+v", b, a)
	}
}
