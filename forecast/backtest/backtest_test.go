package backtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// loadTrace reads a trace of testdata/traces onto its natural grid.
func loadTrace(tb testing.TB, name string) forecast.Series {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "traces", name))
	if err != nil {
		tb.Fatalf("opening trace: %v", err)
	}
	defer f.Close()
	samples, err := forecast.ReadCSV(f, forecast.CSVOptions{})
	if err != nil {
		tb.Fatalf("reading %s: %v", name, err)
	}
	s, err := forecast.NewSeries(samples, forecast.InferStep(samples))
	if err != nil {
		tb.Fatalf("building series %s: %v", name, err)
	}
	return s
}

var allTraces = []string{"nab/nyc_taxi.csv", "crane-dsp/input0.csv", "crane-dsp/input1.csv", "crane-dsp/input2.csv"}

func TestFigures(t *testing.T) {
	for _, tr := range allTraces {
		s := loadTrace(t, tr)
		for _, h := range []time.Duration{24 * time.Hour, time.Hour, 15 * time.Minute} {
			start := time.Now()
			r, err := Run(tr, s, Config{Horizon: h})
			if err != nil {
				t.Logf("%s %s: %v", tr, h, err)
				continue
			}
			t.Logf("%s h=%s step=%s model=%v wape=%.4f mape=%.4f cov=%.2f base=%v ratio=%.3f n=%d (%s)", tr, h, r.Step, r.Models, r.WAPE, r.MAPE, r.Coverage, r.Baselines, r.Ratio, r.Targets, time.Since(start).Round(time.Millisecond))
		}
	}
}

func TestReplayFigures(t *testing.T) {
	for _, tc := range []struct {
		trace  string
		perGPU float64
	}{{"nab/nyc_taxi.csv", 1500}, {"crane-dsp/input0.csv", 6}, {"crane-dsp/input1.csv", 0.25}, {"crane-dsp/input2.csv", 25}} {
		s := loadTrace(t, tc.trace)
		start := time.Now()
		r, err := Replay(tc.trace, s, ReplayConfig{PerGPU: tc.perGPU, Boot: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: reactive %+v forecast %+v under -%.1f%% hours +%.1f%% (%s)", tc.trace, r.Reactive, r.Forecast, 100*r.UnderReduction, 100*r.GPUHoursIncrease, time.Since(start).Round(time.Millisecond))
	}
}
