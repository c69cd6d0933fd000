package replay_test

import (
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
