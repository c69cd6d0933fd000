package replay_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/replay"
)

func webSamples(t testing.TB) []forecast.Sample {
	t.Helper()
	f, err := os.Open("../testdata/traces/tune/synth/web-1.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := forecast.ReadCSV(f, forecast.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMixedDay: workload 3's default day is what its documentation says — training gangs
// (native PodGroups, all members alike, 2–4 pods of 4 GPUs) that start between 22:00 and 02:00
// and end by 06:00, or are carried in from the night before; development pods that start in
// working hours and live 15 minutes to 2 hours, 40 CPU pods and 24 quarter-GPU notebooks;
// inference replicas of the Deployments, each with a forecast — and the same seed gives the same
// workload while another seed gives another.
func TestMixedDay(t *testing.T) {
	samples := webSamples(t)
	w, err := replay.Mixed("web-1", samples, replay.DefaultMixedFrom, replay.DefaultMixedLength, replay.DefaultMixedDeployments, 1, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]replay.Pod{}
	cpuDev, gpuDev, inference := 0, 0, map[string]int{}
	for _, p := range w.Pods {
		switch {
		case p.Gang != "":
			members[p.Gang] = append(members[p.Gang], p)
		case strings.HasPrefix(p.Name, "dev-") || strings.HasPrefix(p.Name, "notebook-"):
			if p.Arrive < 9*time.Hour || p.Arrive >= 17*time.Hour+30*time.Minute || p.Depart-p.Arrive < 15*time.Minute || p.Depart-p.Arrive >= 2*time.Hour {
				t.Errorf("development pod %s: %s–%s; want a start in working hours and a life of 15 min to 2 h", p.Name, p.Arrive, p.Depart)
			}
			if p.NumGPUs == 0 {
				cpuDev++
			} else if p.NumGPUs == 1 && p.GPUMilli == 250 {
				gpuDev++
			} else {
				t.Errorf("development pod %s: %d GPUs × %d milli; want none or a quarter", p.Name, p.NumGPUs, p.GPUMilli)
			}
		case p.Workload != "":
			inference[p.Workload]++
		default:
			t.Errorf("pod %s is neither a gang member, a development pod nor a replica", p.Name)
		}
	}
	if cpuDev != replay.MixedDevCPUPods || gpuDev != replay.MixedDevGPUPods {
		t.Errorf("%d CPU and %d GPU development pods; want %d and %d", cpuDev, gpuDev, replay.MixedDevCPUPods, replay.MixedDevGPUPods)
	}
	if len(w.Gangs) < replay.MixedGangsPerNight || len(w.Gangs) != len(members) {
		t.Fatalf("%d gangs declared, %d with members; want at least a night's %d, all with members", len(w.Gangs), len(members), replay.MixedGangsPerNight)
	}
	carried := 0
	for _, g := range w.Gangs {
		ms := members[g.Name]
		if len(ms) != g.MinCount || len(ms) < 2 || len(ms) > 4 {
			t.Errorf("gang %s: %d members, minCount %d; want 2–4, all of them needed", g.Name, len(ms), g.MinCount)
		}
		for _, m := range ms {
			if m.Arrive != ms[0].Arrive || m.Depart != ms[0].Depart || m.NumGPUs != replay.MixedGangGPUs || m.GPUMilli != 1000 {
				t.Errorf("gang %s: member %s %s–%s with %d GPUs; want the members alike", g.Name, m.Name, m.Arrive, m.Depart, m.NumGPUs)
			}
		}
		a, d := ms[0].Arrive, ms[0].Depart
		switch {
		case ms[0].Carried:
			carried++
			if a != 0 || d > 6*time.Hour {
				t.Errorf("carried gang %s: %s–%s; want it from the start to 06:00 at the latest", g.Name, a, d)
			}
		case a < 2*time.Hour:
			if d > 6*time.Hour {
				t.Errorf("gang %s: %s–%s; want it over by 06:00", g.Name, a, d)
			}
		case a >= 22*time.Hour:
			if d > w.Length {
				t.Errorf("gang %s: departs %s after the window", g.Name, d)
			}
		default:
			t.Errorf("gang %s starts at %s; want the night (22:00–02:00)", g.Name, a)
		}
	}
	if carried == 0 {
		t.Error("no gang carried in from the night before the window")
	}
	if len(w.Forecasts) != len(replay.DefaultMixedDeployments) {
		t.Fatalf("%d forecasts; want one per Deployment", len(w.Forecasts))
	}
	for _, f := range w.Forecasts {
		if inference[f.Spec.Workload.Name] == 0 {
			t.Errorf("forecast %s: no replica of it", f.Spec.Workload.Name)
		}
		// Four weeks of history before the window.
		if got := w.Start.Sub(f.Load.Start); got < 4*forecast.Week {
			t.Errorf("forecast %s: load starts %s before the window; want four weeks of history", f.Spec.Workload.Name, got)
		}
	}

	again, err := replay.Mixed("web-1", samples, replay.DefaultMixedFrom, replay.DefaultMixedLength, replay.DefaultMixedDeployments, 1, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.Pods, again.Pods) || !reflect.DeepEqual(w.Gangs, again.Gangs) {
		t.Error("the same seed gave another workload")
	}
	other, err := replay.Mixed("web-1", samples, replay.DefaultMixedFrom, replay.DefaultMixedLength, replay.DefaultMixedDeployments, 2, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(w.Pods, other.Pods) {
		t.Error("seeds 1 and 2 gave the same workload")
	}
}

// TestMixedReplays: two hours of workload 3 (the night's gangs carried in, the first arrivals)
// replay under tiler with every pod accounted for, above the clairvoyant bound.
func TestMixedReplays(t *testing.T) {
	w, err := replay.Mixed("web-1", webSamples(t), replay.DefaultMixedFrom, 2*time.Hour, replay.DefaultMixedDeployments, 1, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	r, b := tilerAndBound(t, w, config(t))
	if r.Pods != len(w.Pods) || r.NeverBound != 0 || r.Cost < b.Cost || len(b.Unplaceable) != 0 {
		t.Fatalf("%d pods (%d bound, %d never), $%.2f vs bound $%.2f (unplaceable %v)", r.Pods, r.Bound, r.NeverBound, r.Cost, b.Cost, b.Unplaceable)
	}
	if r.ForecastRounds == 0 || r.ForecastErrors != 0 {
		t.Errorf("%d forecast rounds, %d failed; want the Deployments forecast every round", r.ForecastRounds, r.ForecastErrors)
	}
}
