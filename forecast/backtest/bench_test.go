//go:build unix

package backtest

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// BenchmarkBacktest walks forward through each trace at each horizon and reports the accuracy:
// wape, mape, the best baseline's WAPE and their ratio (the target is ratio ≤ 0.8 at 1d).
func BenchmarkBacktest(b *testing.B) {
	for _, tr := range []string{"tune/nab/nyc_taxi.csv", "tune/crane-dsp/input0.csv", "tune/crane-dsp/input1.csv", "tune/crane-dsp/input2.csv"} {
		s := loadTrace(b, tr)
		for _, h := range []time.Duration{forecast.Day, time.Hour, 15 * time.Minute} {
			if h < s.Step {
				continue // NYC taxi has 30-minute samples
			}
			name := benchName(tr) + "/h=" + h.String()
			b.Run(name, func(b *testing.B) {
				var r Result
				start := cpuNanos()
				for range b.N {
					var err error
					if r, err = Run(tr, s, Config{Horizon: h}); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, start)
				b.ReportMetric(r.WAPE, "wape")
				b.ReportMetric(r.MAPE, "mape")
				b.ReportMetric(r.BestBaseline, "baseline-wape")
				b.ReportMetric(r.Ratio, "wape/baseline")
			})
		}
	}
}

// BenchmarkReplay reports the replay figures of every trace (boot 5m, lead 15m).
func BenchmarkReplay(b *testing.B) {
	for _, tt := range replayTargets {
		s := loadTrace(b, tt.trace)
		b.Run(benchName(tt.trace), func(b *testing.B) {
			var r ReplayResult
			start := cpuNanos()
			for range b.N {
				var err error
				if r, err = Replay(tt.trace, s, ReplayConfig{PerGPU: tt.perGPU, Boot: 5 * time.Minute}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
			b.ReportMetric(r.Reactive.UnderGPUMinutes, "reactive-under-gpu-min")
			b.ReportMetric(r.Forecast.UnderGPUMinutes, "forecast-under-gpu-min")
			b.ReportMetric(r.Reactive.GPUHours, "reactive-gpu-h")
			b.ReportMetric(r.Forecast.GPUHours, "forecast-gpu-h")
			b.ReportMetric(100*r.UnderReduction, "under-reduction-%")
			b.ReportMetric(100*r.GPUHoursIncrease, "gpu-h-increase-%")
		})
	}
}

// benchName is the benchmark name of a trace: its path below its set (tune/, eval/) with slashes
// as underscores, so names stay comparable (benchstat) across moves between the sets.
func benchName(trace string) string {
	_, rest, ok := strings.Cut(trace, "/")
	if !ok {
		rest = trace
	}
	return strings.TrimSuffix(strings.ReplaceAll(rest, "/", "_"), ".csv")
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
