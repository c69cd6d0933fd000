package forecast

import (
	"path"
	"strings"
	"testing"
	"time"
)

// benchTraces are the real traces the forecaster's benchmarks walk through.
var benchTraces = []string{"tune/nab/nyc_taxi.csv", "tune/crane-dsp/input1.csv", "tune/crane-dsp/input2.csv"}

// benchTraceName names a trace by its last directory and file (nab_nyc_taxi), so benchmark names
// stay comparable (benchstat) across moves between the sets of testdata/traces.
func benchTraceName(trace string) string {
	dir, file := path.Split(trace)
	return path.Base(dir) + "_" + strings.TrimSuffix(file, ".csv")
}

// BenchmarkWalk walks forward through a trace, one forecast a day ahead from every hourly origin
// after the first week, as the backtest does, and reports the cost per forecast.
func BenchmarkWalk(b *testing.B) {
	for _, tr := range benchTraces {
		s, err := loadTrace(b, tr).Resample(time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(benchTraceName(tr), func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for range b.N {
				w, err := NewWalker(s, Options{Horizon: Day})
				if err != nil {
					b.Fatal(err)
				}
				n = 0
				for o := s.Steps(7 * Day); o+w.HorizonSteps() < s.Len(); o++ {
					if _, err := w.At(o); err == nil {
						n++
					}
				}
			}
			if n == 0 {
				b.Fatal("no forecast")
			}
			b.ReportMetric(float64(n), "forecasts/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/forecast")
		})
	}
}

// BenchmarkPredict is one controller cycle: a forecast 15 minutes ahead from the whole history of
// a trace at its own step.
func BenchmarkPredict(b *testing.B) {
	for _, tr := range benchTraces {
		s := loadTrace(b, tr)
		b.Run(benchTraceName(tr), func(b *testing.B) {
			b.ReportAllocs()
			var fc Forecast
			for range b.N {
				var err error
				if fc, err = Predict(s, s.End(), Options{Horizon: max(15*time.Minute, s.Step)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(fc.Point, "point")
		})
	}
}
