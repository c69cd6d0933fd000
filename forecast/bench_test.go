//go:build unix

package forecast

import (
	"path"
	"strings"
	"syscall"
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
			start := cpuNanos()
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
			reportCPU(b, start)
			b.ReportMetric(float64(n), "forecasts/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/forecast")
		})
	}
}

// BenchmarkPredict is one controller cycle (provisioner/prescale's defaults): a forecast 15
// minutes ahead from the last four weeks of a trace on a five-minute grid (the trace's own when
// coarser).
func BenchmarkPredict(b *testing.B) {
	for _, tr := range benchTraces {
		s := loadTrace(b, tr)
		if s.Step < 5*time.Minute {
			var err error
			if s, err = s.Resample(5 * time.Minute); err != nil {
				b.Fatal(err)
			}
		}
		from := max(0, s.Len()-s.Steps(4*Week))
		hist := Series{Start: s.TimeAt(from), Step: s.Step, Values: s.Values[from:]}
		opts := Options{Horizon: max(15*time.Minute, s.Step)}
		b.Run(benchTraceName(tr), func(b *testing.B) {
			b.ReportAllocs()
			var fc Forecast
			start := cpuNanos()
			for range b.N {
				var err error
				if fc, err = Predict(hist, hist.End(), opts); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
			b.ReportMetric(fc.Point, "point")
		})
	}
}

// cpuNanos is the CPU time this process has used, user and system. The benchmarks report it per
// operation (cpu-ns/op) beside ns/op: on a machine shared with other work, wall time per
// operation measures the neighbours too.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)
}

// reportCPU reports the CPU time per operation since start (cpuNanos).
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
}
