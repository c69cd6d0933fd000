package fgd

import (
	"fmt"
	"math"
)

// Point is allocation and fragmentation read off one run at an arrived percentage.
type Point struct {
	// ArrivedPct is the arrived GPU request as a percentage of capacity (90, 100, 130, ...).
	ArrivedPct int
	// AllocPct is the allocated GPU as a percentage of capacity.
	AllocPct float64
	// FragPct is the fragmented GPU as a percentage of capacity.
	FragPct float64
}

// At reads the run off at pct percent arrived the way the paper's analysis scripts
// (experiments/analysis/merge_alloc_discrete_0920.py, merge_frag_discrete_0928.py) do:
//
//	arrived_i = round_half_even(100 · ArrivedGPUMilli_i / capacity)       (whole percent)
//	alloc_i   = round(100 · UsedGPUMilli_i / capacity, 2)
//	AllocPct  = round(mean{alloc_i : arrived_i = pct}, 2)
//	FragPct   = round(100 · mean{FragGPUMilli_i : arrived_i = pct} / capacity, 2)
//
// falling back to the events with |arrived_i − pct| ≤ 1 when none rounds to pct exactly. Each
// arrived pod is one event, CPU-only pods included. ok is false when no event is near pct.
func (r RunResult) At(pct int) (Point, bool) {
	if r.CapacityGPUMilli <= 0 {
		return Point{}, false
	}
	gpus := float64(r.CapacityGPUMilli) / 1000
	sel := func(tol float64) (alloc, frag float64, n int) {
		for _, e := range r.Events {
			arr := math.RoundToEven(float64(e.ArrivedGPUMilli) / gpus / 10)
			if math.Abs(arr-float64(pct)) <= tol {
				alloc += round2(float64(e.UsedGPUMilli) / gpus / 10)
				frag += e.FragGPUMilli
				n++
			}
		}
		return alloc, frag, n
	}
	alloc, frag, n := sel(0)
	if n == 0 {
		if alloc, frag, n = sel(1); n == 0 {
			return Point{}, false
		}
	}
	return Point{
		ArrivedPct: pct,
		AllocPct:   round2(alloc / float64(n)),
		FragPct:    round2(100 * frag / float64(n) / 1000 / gpus),
	}, true
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// Stat is a mean and sample standard deviation (n−1 denominator, as pandas' std) over seeds.
type Stat struct {
	Mean, Std float64
}

// newStat summarises xs; Std is 0 for fewer than two values.
func newStat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	var s Stat
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// SummaryPoint is allocation and fragmentation at one arrived percentage over all seeds.
type SummaryPoint struct {
	ArrivedPct int
	Alloc      Stat
	Frag       Stat
}

// Summary is the experiment's result for one workload and policy.
type Summary struct {
	Workload string
	Policy   Policy
	Seeds    []int64
	// Points follow Config.ReportAtPct.
	Points []SummaryPoint
	// FailedPods is the mean number of pods that fit nowhere; ArrivedPods the mean arrived.
	FailedPods, ArrivedPods float64
}

// At returns the summary point at pct, if reported.
func (s Summary) At(pct int) (SummaryPoint, bool) {
	for _, p := range s.Points {
		if p.ArrivedPct == pct {
			return p, true
		}
	}
	return SummaryPoint{}, false
}

// Summarize aggregates runs of one workload and policy at the given arrived percentages.
func Summarize(workload string, policy Policy, runs []RunResult, pcts []int) (Summary, error) {
	s := Summary{Workload: workload, Policy: policy}
	for _, r := range runs {
		s.Seeds = append(s.Seeds, r.Seed)
		s.FailedPods += float64(r.Failed) / float64(len(runs))
		s.ArrivedPods += float64(r.Pods) / float64(len(runs))
	}
	for _, pct := range pcts {
		var alloc, frag []float64
		for _, r := range runs {
			p, ok := r.At(pct)
			if !ok {
				return Summary{}, fmt.Errorf("seed %d: no pod arrived near %d%% of capacity", r.Seed, pct)
			}
			alloc, frag = append(alloc, p.AllocPct), append(frag, p.FragPct)
		}
		s.Points = append(s.Points, SummaryPoint{ArrivedPct: pct, Alloc: newStat(alloc), Frag: newStat(frag)})
	}
	return s, nil
}

// Sweep runs every seed of cfg one after the other and summarises them.
func Sweep(w Workload, cfg Config) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, fmt.Errorf("config: %w", err)
	}
	runs := make([]RunResult, 0, len(cfg.Seeds))
	for _, seed := range cfg.Seeds {
		r, err := Run(w, cfg, seed)
		if err != nil {
			return Summary{}, err
		}
		runs = append(runs, r)
	}
	return Summarize(w.Name, cfg.Policy, runs, cfg.ReportAtPct)
}
