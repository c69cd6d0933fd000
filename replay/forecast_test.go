package replay_test

import (
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/replay"
)

// stepDay is a traffic series of days days on a 30-minute grid: 10 from 20:00 to 08:00, 100 from
// 08:00 to 20:00.
func stepDay(from time.Time, days int) []forecast.Sample {
	var out []forecast.Sample
	for t := from; t.Before(from.Add(time.Duration(days) * 24 * time.Hour)); t = t.Add(30 * time.Minute) {
		v := 10.0
		if h := t.Hour(); h >= 8 && h < 20 {
			v = 100
		}
		out = append(out, forecast.Sample{Time: t, Value: v})
	}
	return out
}

// TestForecastBuysAhead: a Deployment that steps from 1 to 10 replicas at 08:00 every day, on
// two weeks of that history. Reactive tiler (tiler-no-forecast) buys when the replicas are pending,
// so they wait a GPU node's boot; tiler's pre-scaler forecasts the step a lead time ahead and the
// controller buys for the expected replicas, so they bind on arrival, for a little more money.
// The figures come from prescale.Size and provisioner.Decide, the controller's own.
func TestForecastBuysAhead(t *testing.T) {
	day0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	samples := stepDay(day0, 16)
	dep := replay.Deployment{Name: "chat", PeakReplicas: 10, MinReplicas: 1, CPUMilli: 2000, MemoryMiB: 8192, NumGPUs: 1, GPUMilli: 250}
	w, err := replay.Diurnal("step", samples, day0.Add(15*24*time.Hour+7*time.Hour), 2*time.Hour, []replay.Deployment{dep}, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t)
	reactive, err := replay.Run(w, policy(t, replay.PolicyTilerNoForecast), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := replay.Run(w, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	boot := cfg.GPUBootDelay + cfg.DeviceDelay
	if reactive.PendingMax < boot || reactive.ForecastRounds != 0 {
		t.Errorf("tiler-no-forecast: waited at most %s, %d forecast rounds; want the replicas waiting a GPU boot (%s), no forecast", reactive.PendingMax, reactive.ForecastRounds, boot)
	}
	if ahead.PendingMax != 0 || ahead.NeverBound != 0 {
		t.Errorf("tiler: waited at most %s, %d never bound; want every replica bound on arrival", ahead.PendingMax, ahead.NeverBound)
	}
	if ahead.ForecastRounds != int(w.Length/cfg.PrescaleInterval) || ahead.ForecastErrors != 0 || ahead.ExpectedPodBatches == 0 {
		t.Errorf("tiler: %d forecast rounds (%d failed), %d expected pods over the batches; want one round per %s, none failed, some pods expected",
			ahead.ForecastRounds, ahead.ForecastErrors, ahead.ExpectedPodBatches, cfg.PrescaleInterval)
	}
	if ahead.Cost < reactive.Cost || ahead.Cost > 1.5*reactive.Cost {
		t.Errorf("tiler $%.2f, tiler-no-forecast $%.2f; want buying ahead to cost a little more (at most 50 %% over two hours)", ahead.Cost, reactive.Cost)
	}
	t.Logf("tiler $%.2f (max wait %s), tiler-no-forecast $%.2f (max wait %s)", ahead.Cost, ahead.PendingMax, reactive.Cost, reactive.PendingMax)
}
