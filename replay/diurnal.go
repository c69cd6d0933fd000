package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Deployment is one Deployment of a diurnal workload: its pods' requests and the traffic rule
// that sizes it, as an HPA on queue depth would: ⌈traffic / (PeakTraffic / PeakReplicas)⌉
// replicas, at least MinReplicas, where PeakTraffic is the series' maximum over the window (so
// the Deployment runs PeakReplicas at the busiest sample).
type Deployment struct {
	Name                string
	PeakReplicas        int
	MinReplicas         int
	CPUMilli, MemoryMiB int64
	NumGPUs             int
	GPUMilli            int64
}

// DefaultDiurnalDeployments are workload 2's Deployments: two inference services sharing GPUs (a
// quarter and a half of a GPU per replica), a whole-GPU model server, and a CPU API tier.
var DefaultDiurnalDeployments = []Deployment{
	{Name: "chat-small", PeakReplicas: 24, MinReplicas: 2, CPUMilli: 2000, MemoryMiB: 8192, NumGPUs: 1, GPUMilli: 250},
	{Name: "embed", PeakReplicas: 12, MinReplicas: 1, CPUMilli: 3000, MemoryMiB: 12288, NumGPUs: 1, GPUMilli: 500},
	{Name: "rerank-large", PeakReplicas: 6, MinReplicas: 1, CPUMilli: 6000, MemoryMiB: 24576, NumGPUs: 1, GPUMilli: 1000},
	{Name: "api", PeakReplicas: 30, MinReplicas: 3, CPUMilli: 1000, MemoryMiB: 2048},
}

// The default window of workload 2: one weekday of the NYC taxi series (30-minute samples).
var (
	DefaultDiurnalFrom   = time.Date(2014, 10, 15, 0, 0, 0, 0, time.UTC)
	DefaultDiurnalLength = 24 * time.Hour
)

// ReadDiurnal reads a traffic series (forecast.ReadCSV: a time and a value column) and returns the
// diurnal workload of the window [from, from+length) under the Deployments.
func ReadDiurnal(name string, r io.Reader, from time.Time, length time.Duration, deps []Deployment) (*Workload, error) {
	samples, err := forecast.ReadCSV(r, forecast.CSVOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Diurnal(name, samples, from, length, deps, ReplayEpoch)
}

// Diurnal turns a traffic series into Deployment replicas over the window [from, from+length),
// replayed from start: at each sample each Deployment scales to its rule's replicas — new pods
// arrive, the newest pods leave first (as a ReplicaSet scales down) — and the pods still running
// leave at the window's end. The replicas of the first sample were running when the window opened
// (Carried). Missing samples keep the replicas as they are.
func Diurnal(name string, samples []forecast.Sample, from time.Time, length time.Duration, deps []Deployment, start time.Time) (*Workload, error) {
	if len(deps) == 0 {
		return nil, errors.New("diurnal workload: no deployments")
	}
	var in []forecast.Sample
	peak := 0.0
	for _, s := range samples {
		if !s.Time.Before(from) && s.Time.Before(from.Add(length)) {
			in = append(in, s)
			if !math.IsNaN(s.Value) {
				peak = math.Max(peak, s.Value)
			}
		}
	}
	if len(in) == 0 || peak <= 0 {
		return nil, fmt.Errorf("diurnal workload %s: no positive sample in [%s, %s)", name, from.Format(time.RFC3339), from.Add(length).Format(time.RFC3339))
	}
	w := &Workload{Name: name, Start: start, Length: length}
	for _, d := range deps {
		if d.PeakReplicas <= 0 || d.MinReplicas < 0 || d.MinReplicas > d.PeakReplicas {
			return nil, fmt.Errorf("deployment %s: peakReplicas must be positive and minReplicas in 0..peakReplicas", d.Name)
		}
		var live []int // indexes into w.Pods, oldest first
		serial := 0
		for i, s := range in {
			at := s.Time.Sub(from)
			if i == 0 {
				at = 0
			}
			if math.IsNaN(s.Value) {
				continue
			}
			want := max(d.MinReplicas, int(math.Ceil(s.Value/(peak/float64(d.PeakReplicas))-1e-9)))
			for len(live) < want {
				w.Pods = append(w.Pods, Pod{Name: fmt.Sprintf("%s-%05d", d.Name, serial), Arrive: at, Depart: length,
					CPUMilli: d.CPUMilli, MemoryMiB: d.MemoryMiB, NumGPUs: d.NumGPUs, GPUMilli: d.GPUMilli, Workload: d.Name, Carried: i == 0})
				live = append(live, len(w.Pods)-1)
				serial++
			}
			for len(live) > want {
				j := live[len(live)-1]
				live = live[:len(live)-1]
				if at > w.Pods[j].Arrive {
					w.Pods[j].Depart = at
				} else {
					w.Pods = append(w.Pods[:j], w.Pods[j+1:]...) // arrived and left at once: never there
				}
			}
		}
	}
	fs, err := diurnalForecasts(samples, from, length, deps, peak, start)
	if err != nil {
		return nil, fmt.Errorf("diurnal workload %s: %w", name, err)
	}
	w.Forecasts = fs
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("diurnal workload %s: %w", name, err)
	}
	return w, nil
}

// diurnalForecasts declares a forecast per Deployment, as an operator would in the cost policy:
// the load is the traffic series (its history before the window and the window, moved to virtual
// time), one replica serves peak/PeakReplicas of it (the HPA rule's), replicas between
// MinReplicas and PeakReplicas, the lead time the pool's boot time plus forecast.LeadBuffer.
func diurnalForecasts(samples []forecast.Sample, from time.Time, length time.Duration, deps []Deployment, peak float64, start time.Time) ([]Forecast, error) {
	var moved []forecast.Sample
	for _, s := range samples {
		if s.Time.Before(from.Add(length)) {
			moved = append(moved, forecast.Sample{Time: start.Add(s.Time.Sub(from)), Value: s.Value})
		}
	}
	load, err := forecast.NewSeries(moved, forecast.InferStep(moved))
	if err != nil {
		return nil, fmt.Errorf("traffic series: %w", err)
	}
	out := make([]Forecast, 0, len(deps))
	for _, d := range deps {
		out = append(out, Forecast{
			Spec: forecast.WorkloadForecast{Workload: forecast.WorkloadRef{Kind: "Deployment", Namespace: Namespace, Name: d.Name},
				LoadQuery: "traffic", PerReplica: peak / float64(d.PeakReplicas), GPUsPerReplica: max(1, d.NumGPUs),
				MinReplicas: d.MinReplicas, MaxReplicas: d.PeakReplicas},
			Replica: Pod{Name: d.Name, CPUMilli: d.CPUMilli, MemoryMiB: d.MemoryMiB, NumGPUs: d.NumGPUs, GPUMilli: d.GPUMilli, Workload: d.Name},
			Load:    load,
		})
	}
	return out, nil
}
