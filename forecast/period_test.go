package forecast

import (
	"math"
	"testing"
)

func TestDetectPeriodTraces(t *testing.T) {
	tests := []struct {
		trace string
		want  Period
	}{
		// crane's own expectations for its DSP test data (signal_test.go): day, day, week.
		{"tune/crane-dsp/input0.csv", PeriodDay},
		{"tune/crane-dsp/input1.csv", PeriodDay},
		{"tune/crane-dsp/input2.csv", PeriodWeek},
		// NYC taxi: daily ACF 0.80 and weekly 0.89 (traces README); the week wins.
		{"tune/nab/nyc_taxi.csv", PeriodWeek},
	}
	for _, tt := range tests {
		t.Run(tt.trace, func(t *testing.T) {
			s := loadTrace(t, tt.trace)
			// Truncate to whole weeks as crane does before testing the weekly cycle.
			if w, m := s.TrimToPeriods(Week); m >= 2 {
				s = w
			}
			got := DetectPeriod(s)
			t.Logf("%s: %s (%s)", tt.trace, got.Period, got.Reason)
			if got.Period != tt.want {
				t.Errorf("DetectPeriod = %s, want %s (%s)", got.Period, tt.want, got.Reason)
			}
		})
	}
}

func TestDetectPeriodSynthetic(t *testing.T) {
	weekend := func(i int) float64 {
		if d := (i / 24) % 7; d >= 5 {
			return 0.4
		}
		return 1
	}
	tests := []struct {
		name string
		s    Series
		want Period
	}{
		{"daily 14 days", synthetic(14*24, func(i int) float64 { return daily(i) + 5*noise(i) }, nil), PeriodDay},
		// 20 % of points missing in runs of 5 hours: gaps are skipped, not zeros.
		{"daily with gaps", synthetic(14*24, func(i int) float64 { return daily(i) + 5*noise(i) }, func(i int) bool { return (i/5)%5 == 0 }), PeriodDay},
		// The level doubles halfway through: a step must not hide the cycle.
		{"daily with level shift", synthetic(14*24, func(i int) float64 {
			if i > 7*24+5 {
				return 2*daily(i) + 200
			}
			return daily(i)
		}, nil), PeriodDay},
		{"weekly 4 weeks", synthetic(28*24, func(i int) float64 { return daily(i)*weekend(i) + 3*noise(i) }, nil), PeriodWeek},
		{"noise", synthetic(14*24, func(i int) float64 { return 100 + 20*noise(i) }, nil), PeriodNone},
		{"constant", synthetic(14*24, func(int) float64 { return 5 }, nil), PeriodNone},
		// 1.5 days: less than two cycles of anything.
		{"too short", synthetic(36, daily, nil), PeriodNone},
		{"all missing", synthetic(72, func(int) float64 { return math.NaN() }, nil), PeriodNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectPeriod(tt.s)
			if got.Period != tt.want {
				t.Errorf("DetectPeriod = %s, want %s (%s)", got.Period, tt.want, got.Reason)
			}
		})
	}
}
