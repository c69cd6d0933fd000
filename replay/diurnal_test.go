package replay_test

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/replay"
)

// TestDiurnalScales: replicas follow the traffic rule at every sample; scale-down removes the
// newest pods; a missing sample keeps the replicas; the pods left run to the window's end.
func TestDiurnalScales(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vals := []float64{10, 20, math.NaN(), 40, 20}
	var samples []forecast.Sample
	for i, v := range vals {
		samples = append(samples, forecast.Sample{Time: from.Add(time.Duration(i) * 30 * time.Minute), Value: v})
	}
	dep := replay.Deployment{Name: "svc", PeakReplicas: 4, MinReplicas: 1, CPUMilli: 1000, MemoryMiB: 1024, NumGPUs: 1, GPUMilli: 250}
	w, err := replay.Diurnal("t", samples, from, 3*time.Hour, []replay.Deployment{dep}, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	// Replicas 1, 2, (2), 4, 2: four pods; the two newest leave at 2 h.
	want := map[string][2]time.Duration{
		"svc-00000": {0, 3 * time.Hour},
		"svc-00001": {30 * time.Minute, 3 * time.Hour},
		"svc-00002": {90 * time.Minute, 2 * time.Hour},
		"svc-00003": {90 * time.Minute, 2 * time.Hour},
	}
	if len(w.Pods) != len(want) {
		t.Fatalf("pods %+v; want %d", w.Pods, len(want))
	}
	for _, p := range w.Pods {
		if wt, ok := want[p.Name]; !ok || p.Arrive != wt[0] || p.Depart != wt[1] || p.GPUMilli != 250 {
			t.Errorf("%s: arrive %s depart %s; want %v", p.Name, p.Arrive, p.Depart, wt)
		}
	}
	if _, err := replay.Diurnal("t", samples, from.Add(24*time.Hour), time.Hour, []replay.Deployment{dep}, replay.ReplayEpoch); err == nil {
		t.Error("a window without samples: no error")
	}
}

// TestDiurnalDefaultDay: the default day of the NYC taxi series replays under tiler, forecasts
// included, with every pod accounted for and a cost above the clairvoyant bound (a short window
// keeps the test quick).
func TestDiurnalDefaultDay(t *testing.T) {
	f, err := os.Open("../testdata/traces/tune/nab/nyc_taxi.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := replay.ReadDiurnal("nyc_taxi", f, replay.DefaultDiurnalFrom.Add(6*time.Hour), 3*time.Hour, replay.DefaultDiurnalDeployments)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t)
	// Eight days of history are enough for the daily cycle, and keep the forecasts quick.
	cfg.PrescaleHistory = 8 * 24 * time.Hour
	r, b := tilerAndBound(t, w, cfg)
	if r.Pods != len(w.Pods) || r.Bound+r.NeverBound != r.Pods || r.Cost < b.Cost {
		t.Fatalf("%d pods (%d bound, %d never), $%.2f vs bound $%.2f", r.Pods, r.Bound, r.NeverBound, r.Cost, b.Cost)
	}
	if r.ForecastRounds != len(w.Forecasts)*int(w.Length/cfg.PrescaleInterval) || r.ForecastErrors != 0 {
		t.Errorf("%d forecast rounds, %d failed; want every Deployment forecast every %s", r.ForecastRounds, r.ForecastErrors, cfg.PrescaleInterval)
	}
	t.Logf("tiler $%.2f, bound $%.2f, GPU alloc %.0f%%, pending p95 %s", r.Cost, b.Cost, 100*r.GPUAllocation(), r.PendingP95)
}
