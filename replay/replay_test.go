package replay_test

import (
	"os"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/replay"
)

const tracePath = "../testdata/alibaba-gpu-v2023/openb_pod_list_default.csv"

func alibaba(t testing.TB, from, length time.Duration) *replay.Workload {
	t.Helper()
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := replay.ReadAlibaba("openb_pod_list_default", f, from, length)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func config(t testing.TB) replay.Config {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return replay.DefaultConfig(cat)
}

func TestSmoke(t *testing.T) {
	w := alibaba(t, replay.DefaultAlibabaFrom, 2*time.Hour)
	pols, err := replay.Policies(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pols {
		start := time.Now()
		r, err := replay.Run(w, p, config(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.2f$ gpuh %.1f/%.1f pend p50 %s p95 %s max %s launched %d removed %d evict %d never %d batches %d errs %d (%s)",
			p.Name, r.Cost, r.GPUHoursRequested, r.GPUHoursBought, r.PendingP50, r.PendingP95, r.PendingMax, r.NodesLaunched, r.NodesRemoved, r.Evictions, r.NeverBound, r.Batches, r.PlanErrors, time.Since(start))
	}
}

func TestBoundSmoke(t *testing.T) {
	w := alibaba(t, replay.DefaultAlibabaFrom, 2*time.Hour)
	start := time.Now()
	b, err := replay.ClairvoyantBound(w, config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bound %.2f$ over %d intervals, unplaceable %v (%s)", b.Cost, b.Intervals, b.Unplaceable, time.Since(start))
}
