package replay

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Workload 3, a mixed day: night training gangs, daytime inference, development pods in working
// hours. Every random draw comes from the seed, so a seed gives one workload.

// DefaultMixedDeployments are workload 3's inference Deployments, scaled on the traffic series as
// workload 2's are: an assistant on a quarter of a GPU, a vision model on half a GPU, and a CPU
// gateway.
var DefaultMixedDeployments = []Deployment{
	{Name: "assistant", PeakReplicas: 16, MinReplicas: 2, CPUMilli: 2000, MemoryMiB: 8192, NumGPUs: 1, GPUMilli: 250},
	{Name: "vision", PeakReplicas: 8, MinReplicas: 1, CPUMilli: 4000, MemoryMiB: 16384, NumGPUs: 1, GPUMilli: 500},
	{Name: "gateway", PeakReplicas: 12, MinReplicas: 2, CPUMilli: 1000, MemoryMiB: 2048},
}

// The default window of workload 3: a Tuesday of the synthetic web series
// testdata/traces/tune/synth/web-1.csv (a noon and an evening peak), 32 days into it, so the
// pre-scaler has four weeks of history.
var (
	DefaultMixedFrom   = time.Date(2024, 6, 18, 0, 0, 0, 0, time.UTC)
	DefaultMixedLength = 24 * time.Hour
	DefaultMixedSeed   = uint64(1)
)

// The shape of workload 3's training and development pods.
const (
	// Each night, from 22:00, MixedGangsPerNight training jobs start within MixedGangStartSpread;
	// each is a gang of 2–4 pods of MixedGangGPUs GPUs, all or nothing, that runs 2–5 hours and
	// ends by 06:00.
	MixedGangsPerNight   = 4
	MixedGangStartSpread = 4 * time.Hour
	MixedGangGPUs        = 4
	// Each working day (09:00–18:00) MixedDevCPUPods CPU pods (2 vCPU, 4 GiB) and MixedDevGPUPods
	// notebooks on a quarter of a GPU (2 vCPU, 8 GiB) start at uniform times before 17:30 and
	// live 15 minutes to 2 hours.
	MixedDevCPUPods = 40
	MixedDevGPUPods = 24
)

// ReadMixed reads a traffic series (forecast.ReadCSV) and returns the mixed workload of the
// window [from, from+length) with the given seed.
func ReadMixed(name string, r io.Reader, from time.Time, length time.Duration, seed uint64) (*Workload, error) {
	samples, err := forecast.ReadCSV(r, forecast.CSVOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Mixed(name, samples, from, length, DefaultMixedDeployments, seed, ReplayEpoch)
}

// Mixed is workload 3 over the window [from, from+length) of the traffic series, replayed from
// start, days counted from from's midnight (UTC):
//
//   - night training: each night from 22:00 to 06:00 (the one that ends on the window's first
//     morning included), MixedGangsPerNight jobs start at uniform times in the first
//     MixedGangStartSpread; a job is a gang — a native PodGroup of gang policy, minCount all of
//     its pods — of 2–4 pods, each of MixedGangGPUs whole GPUs, 32 vCPU and 128 GiB, running a
//     uniform 2–5 hours, cut at 06:00. Jobs running when the window opens are carried into it.
//   - daytime inference: the Deployments scaled on the traffic series as Diurnal does, each with
//     its forecast.
//   - development: each day, MixedDevCPUPods CPU pods and MixedDevGPUPods quarter-GPU notebooks
//     starting in working hours (see the constants), each living 15 minutes to 2 hours.
//
// Pods past the window's end leave at it.
func Mixed(name string, samples []forecast.Sample, from time.Time, length time.Duration, deps []Deployment, seed uint64, start time.Time) (*Workload, error) {
	if length <= 0 {
		return nil, errors.New("mixed workload: length must be positive")
	}
	w, err := Diurnal(name, samples, from, length, deps, start)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d69786564)) // "mixed"
	midnight := from.Truncate(24 * time.Hour)
	offset := from.Sub(midnight) // the window's start after its first midnight
	between := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Truncate(time.Second)
	}
	// clip places [a, b) of the day-relative timeline in the window; ok is false when it is
	// outside.
	clip := func(a, b time.Duration) (arrive, depart time.Duration, carried, ok bool) {
		a, b = a-offset, b-offset
		if b <= 0 || a >= length {
			return 0, 0, false, false
		}
		return max(0, a), min(length, b), a < 0, true
	}
	days := int((offset+length+24*time.Hour-1)/(24*time.Hour)) + 1
	for day := -1; day < days; day++ {
		base := time.Duration(day) * 24 * time.Hour
		night := base + 22*time.Hour
		for g := range MixedGangsPerNight {
			size := 2 + rng.IntN(3)
			begin := night + between(0, MixedGangStartSpread)
			end := min(begin+between(2*time.Hour, 5*time.Hour), night+8*time.Hour)
			arrive, depart, carried, ok := clip(begin, end)
			if !ok {
				continue
			}
			gang := fmt.Sprintf("train-d%d-%d", day+1, g)
			w.Gangs = append(w.Gangs, Gang{Name: gang, MinCount: size})
			for m := range size {
				w.Pods = append(w.Pods, Pod{Name: fmt.Sprintf("%s-%d", gang, m), Arrive: arrive, Depart: depart, Carried: carried,
					CPUMilli: 32000, MemoryMiB: 128 << 10, NumGPUs: MixedGangGPUs, GPUMilli: 1000, Gang: gang})
			}
		}
		for i := range MixedDevCPUPods + MixedDevGPUPods {
			begin := base + 9*time.Hour + between(0, 8*time.Hour+30*time.Minute)
			arrive, depart, carried, ok := clip(begin, begin+between(15*time.Minute, 2*time.Hour))
			if !ok {
				continue
			}
			p := Pod{Name: fmt.Sprintf("dev-d%d-%03d", day+1, i), Arrive: arrive, Depart: depart, Carried: carried, CPUMilli: 2000, MemoryMiB: 4096}
			if i >= MixedDevCPUPods {
				p.Name, p.MemoryMiB, p.NumGPUs, p.GPUMilli = fmt.Sprintf("notebook-d%d-%03d", day+1, i-MixedDevCPUPods), 8192, 1, 250
			}
			w.Pods = append(w.Pods, p)
		}
	}
	sort.SliceStable(w.Pods, func(i, j int) bool {
		if w.Pods[i].Arrive != w.Pods[j].Arrive {
			return w.Pods[i].Arrive < w.Pods[j].Arrive
		}
		return w.Pods[i].Name < w.Pods[j].Name
	})
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("mixed workload %s: %w", name, err)
	}
	return w, nil
}
