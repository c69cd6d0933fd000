package forecast

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
	// Time zone tests resolve zones on machines without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// traceDir is the repository copy of the shared traces (testdata/traces/README.md).
var traceDir = filepath.Join("..", "testdata", "traces")

// loadTrace reads a trace from testdata/traces onto its natural grid.
func loadTrace(tb testing.TB, name string) Series {
	tb.Helper()
	f, err := os.Open(filepath.Join(traceDir, name))
	if err != nil {
		tb.Fatalf("opening trace: %v", err)
	}
	defer f.Close()
	samples, err := ReadCSV(f, CSVOptions{})
	if err != nil {
		tb.Fatalf("reading %s: %v", name, err)
	}
	s, err := NewSeries(samples, InferStep(samples))
	if err != nil {
		tb.Fatalf("building series %s: %v", name, err)
	}
	return s
}

// synthetic builds an hourly series of n points from f(i), with NaN where gap(i) is true.
func synthetic(n int, f func(i int) float64, gap func(i int) bool) Series {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
		if gap != nil && gap(i) {
			v[i] = math.NaN()
		}
	}
	return Series{Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Step: time.Hour, Values: v}
}

// daily is a diurnal shape with its peak at 14:00 and a trough at 02:00.
func daily(i int) float64 { return 100 + 60*math.Sin(2*math.Pi*float64(i%24-8)/24) }

// noise is a deterministic pseudo-random value in [-1, 1).
func noise(i int) float64 {
	x := uint64(i)*6364136223846793005 + 1442695040888963407
	x ^= x >> 33
	return float64(x%2000)/1000 - 1
}
