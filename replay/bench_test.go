package replay_test

import (
	"os"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/replay"
)

// BenchmarkReplayAlibabaDay replays one simulated day of the Alibaba trace (the default window)
// under tiler and reports the wall seconds per simulated day besides the allocations.
func BenchmarkReplayAlibabaDay(b *testing.B) {
	wl := alibaba(b, replay.DefaultAlibabaFrom, 24*time.Hour)
	cfg := config(b)
	pol := policy(b, replay.PolicyTiler)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := replay.Run(wl, pol, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "wall-s/simulated-day")
}

// BenchmarkReplayDiurnalDay replays workload 2's default day (the NYC taxi series driving the
// default Deployments) under tiler.
func BenchmarkReplayDiurnalDay(b *testing.B) {
	f, err := os.Open("../testdata/traces/tune/nab/nyc_taxi.csv")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	wl, err := replay.ReadDiurnal("nyc_taxi", f, replay.DefaultDiurnalFrom, replay.DefaultDiurnalLength, replay.DefaultDiurnalDeployments)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config(b)
	pol := policy(b, replay.PolicyTiler)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := replay.Run(wl, pol, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "wall-s/simulated-day")
}
