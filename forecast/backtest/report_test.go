package backtest

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// TestReport checks what Run reports besides the WAPE: the experts' shares sum to one overall
// and in every period, the periods tile the scored span in order, the bootstrap interval holds
// the ratio and is the same on every run, and the verdict names the best baseline.
func TestReport(t *testing.T) {
	s := loadTrace(t, "tune/crane-dsp/input2.csv")
	r, err := Run("input2", s, Config{Horizon: forecast.Day, Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(m map[string]float64) float64 {
		total := 0.0
		for _, v := range m {
			total += v
		}
		return total
	}
	if math.Abs(sum(r.Shares)-1) > 1e-9 {
		t.Errorf("shares sum to %g, want 1: %v", sum(r.Shares), r.Shares)
	}
	if len(r.SharesOverTime) != 2 { // nine scored days: a week and two days
		t.Errorf("%d share periods, want 2 (a week and the rest)", len(r.SharesOverTime))
	}
	for i, p := range r.SharesOverTime {
		if math.Abs(sum(p.Shares)-1) > 1e-9 {
			t.Errorf("period %d: shares sum to %g, want 1", i, sum(p.Shares))
		}
		if i == 0 && !p.From.Equal(r.From) || i > 0 && !p.From.Equal(r.SharesOverTime[i-1].To) {
			t.Errorf("period %d starts at %s, want it to follow the previous one", i, p.From)
		}
	}
	ci := r.RatioInterval
	if !(ci.Low <= r.Ratio && r.Ratio <= ci.High) || ci.Resamples != bootstrapResamples || ci.BlockTargets < 1 {
		t.Errorf("interval %+v does not hold the ratio %.3f", ci, r.Ratio)
	}
	again, _ := Run("input2", s, Config{Horizon: forecast.Day, Step: time.Hour})
	if !reflect.DeepEqual(again.RatioInterval, ci) {
		t.Errorf("interval %+v on a second run, %+v on the first: the bootstrap must be seeded", again.RatioInterval, ci)
	}
	if r.BestBaselineName != SeasonalMeanWeeks || !strings.Contains(r.Verdict, baselineWords[SeasonalMeanWeeks]) {
		t.Errorf("best baseline %q, verdict %q: want the mean of weeks named", r.BestBaselineName, r.Verdict)
	}
}

// TestBootstrapNarrowsWithData: the interval of NYC taxi's ratio (187 scored days) is far
// narrower than that of crane's input2 (9 days), and on NYC it excludes 1. Far: under half.
// Equally varied days would give √(9/187) ≈ 0.22 of the width, but NYC's holidays and storms
// vary its days more than input2's: the ratio of widths was 0.30 with the median profile and
// 0.34 with the robust mean (seasonal.centre).
func TestBootstrapNarrowsWithData(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through a whole trace")
	}
	nyc, err := Run("nyc", loadTrace(t, "tune/nab/nyc_taxi.csv"), Config{Horizon: forecast.Day, Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	crane, err := Run("input2", loadTrace(t, "tune/crane-dsp/input2.csv"), Config{Horizon: forecast.Day, Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wn, wc := nyc.RatioInterval.High-nyc.RatioInterval.Low, crane.RatioInterval.High-crane.RatioInterval.Low
	t.Logf("NYC %.3f [%.3f, %.3f], input2 %.3f [%.3f, %.3f]", nyc.Ratio, nyc.RatioInterval.Low, nyc.RatioInterval.High, crane.Ratio, crane.RatioInterval.Low, crane.RatioInterval.High)
	if wn > wc/2 || nyc.RatioInterval.High >= 1 || !strings.Contains(nyc.Verdict, "beats") {
		t.Errorf("NYC interval width %.3f (verdict %q), input2's %.3f: want NYC's under half and below 1", wn, nyc.Verdict, wc)
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name     string
		ratio    float64
		low, hig float64
		want     string
	}{
		{"loses clearly", 1.2, 1.05, 1.4, "LOSES to its best baseline on this series: its WAPE is 20 % higher than forecasting the same time yesterday"},
		{"loses within the noise", 1.02, 0.9, 1.15, "loses to its best baseline on this series, though within the noise"},
		{"wins within the noise", 0.97, 0.9, 1.04, "not clearly better than forecasting the same time yesterday"},
		{"wins", 0.8, 0.75, 0.86, "beats its best baseline, the same time yesterday, by 20 %"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Result{Ratio: tt.ratio, BestBaselineName: SeasonalNaiveDay, RatioInterval: Interval{Low: tt.low, High: tt.hig, Level: 0.95}}
			if got := verdict(r); !strings.Contains(got, tt.want) {
				t.Errorf("verdict = %q, want it to contain %q", got, tt.want)
			}
		})
	}
	if got := verdict(Result{}); !strings.Contains(got, "No baseline") {
		t.Errorf("verdict without baselines = %q", got)
	}
}
