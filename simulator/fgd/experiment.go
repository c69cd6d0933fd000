package fgd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// Policy names a placement policy of package gpushare.
type Policy string

// The policies compared in the experiment.
const (
	PolicyBestFit Policy = "bestfit"
	PolicyFGD     Policy = "fgd"
	PolicyTiler   Policy = "tiler"
)

// Policies lists every policy in report order.
var Policies = []Policy{PolicyBestFit, PolicyFGD, PolicyTiler}

// ParsePolicy accepts a policy name, case-insensitively.
func ParsePolicy(s string) (Policy, error) {
	p := Policy(strings.ToLower(strings.TrimSpace(s)))
	for _, q := range Policies {
		if p == q {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want bestfit, fgd or tiler)", s)
}

// NewScorer builds the policy's scorer; FGD and TilerPack measure fragmentation against mix.
func NewScorer(p Policy, mix gpushare.PodMix) (gpushare.Scorer, error) {
	switch p {
	case PolicyBestFit:
		return gpushare.NewBestFit(), nil
	case PolicyFGD:
		return gpushare.NewFGD(mix), nil
	case PolicyTiler:
		return gpushare.NewTilerPack(mix), nil
	}
	return nil, fmt.Errorf("unknown policy %q", p)
}

// Workload is one experiment input: the cluster and the trace's pod list.
type Workload struct {
	// Name is the pod list's name, e.g. "openb_pod_list_default".
	Name  string
	Nodes []Node
	Pods  []Pod
}

// Config holds the experiment's parameters; DefaultConfig has the paper's.
type Config struct {
	// Policy is the placement policy.
	Policy Policy
	// Seeds are the runs' seeds; the paper uses 42..51.
	Seeds []int64
	// TuneRatio is the GPU request, as a multiple of cluster GPU capacity, the arrivals are
	// topped up (or cut down) to; the paper's "tune" 1.3.
	TuneRatio float64
	// ReportAtPct are the arrived-GPU percentages at which allocation is read off.
	ReportAtPct []int
	// MixCoveragePct is the share of pods the typical-pod mix of FGD and TilerPack covers.
	MixCoveragePct float64
	// TieBreak decides between nodes with equal scores.
	TieBreak TieBreak
}

// TieBreak is how the scheduler chooses between nodes with the highest score.
type TieBreak string

const (
	// TieByNodeOrder takes the first node in the scheduler's node order, which the paper
	// randomises per seed by renaming the nodes (Arrivals.NodeRank). This is what reproduces the
	// published numbers: the paper's scheduler is a fork of kube-scheduler v1.20.5
	// (mental2008/kubernetes v1.20.5-minor, a replace in its go.mod), and with first-in-order
	// ties our BestFit and FGD land within 0.05 points of its results, while stock
	// kube-scheduler's random tie-break leaves FGD near 90 % instead of 95 %. Taking the first of
	// equal nodes packs the cluster, which FGD's coarse integer scores rely on.
	TieByNodeOrder TieBreak = "node-order"
	// TieRandom draws uniformly among the best nodes, as stock kube-scheduler's selectHost.
	TieRandom TieBreak = "random"
)

// DefaultConfig returns the paper's protocol for the given policy: seeds 42..51, tune 1.3,
// reports at 90/100/130 % arrived, a typical-pod mix covering 95 % of the pods.
func DefaultConfig(p Policy) Config {
	return Config{
		Policy:         p,
		Seeds:          SeedRange(42, 51),
		TuneRatio:      1.3,
		ReportAtPct:    []int{90, 100, 130},
		MixCoveragePct: gpushare.DefaultMixCoveragePct,
		TieBreak:       TieByNodeOrder,
	}
}

// SeedRange returns first..last inclusive.
func SeedRange(first, last int64) []int64 {
	var out []int64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case len(c.Seeds) == 0:
		return errors.New("seeds: need at least one seed")
	case c.TuneRatio <= 0:
		return fmt.Errorf("tune ratio %v must be positive", c.TuneRatio)
	case len(c.ReportAtPct) == 0:
		return errors.New("report points: need at least one arrived percentage")
	case c.MixCoveragePct <= 0 || c.MixCoveragePct > 100:
		return fmt.Errorf("mix coverage %v%% must be in (0, 100]", c.MixCoveragePct)
	case c.TieBreak != TieByNodeOrder && c.TieBreak != TieRandom:
		return fmt.Errorf("tie break %q: want %q or %q", c.TieBreak, TieByNodeOrder, TieRandom)
	}
	_, err := ParsePolicy(string(c.Policy))
	return err
}

// Event is the cluster after one pod arrived (the paper's per-pod "[Alloc]" and "[Report]" log
// lines).
type Event struct {
	// ArrivedGPUMilli is the GPU request of all pods arrived so far, placed or not.
	ArrivedGPUMilli int64
	// UsedGPUMilli is the GPU allocated to placed pods.
	UsedGPUMilli int64
	// FragGPUMilli is the cluster's fragmentation (Σ PodMix.Fragmentation over nodes).
	FragGPUMilli float64
}

// RunResult is one seed's run.
type RunResult struct {
	Seed int64
	// Pods arrived; Failed of them fit nowhere.
	Pods, Failed int
	// CapacityGPUMilli is the cluster's GPU (6,212,000 on the paper's cluster).
	CapacityGPUMilli int64
	// Events has one entry per arrived pod.
	Events []Event
}

// Run performs one seed's run of the experiment.
func Run(w Workload, cfg Config, seed int64) (RunResult, error) {
	if err := cfg.Validate(); err != nil {
		return RunResult{}, fmt.Errorf("config: %w", err)
	}
	if len(w.Nodes) == 0 || len(w.Pods) == 0 {
		return RunResult{}, fmt.Errorf("workload %q: needs nodes and pods", w.Name)
	}
	reqs := make([]gpushare.Request, len(w.Pods))
	for i, p := range w.Pods {
		reqs[i] = p.Request
	}
	mix, err := gpushare.NewPodMix(reqs, cfg.MixCoveragePct)
	if err != nil {
		return RunResult{}, fmt.Errorf("workload %q: %w", w.Name, err)
	}
	scorer, err := NewScorer(cfg.Policy, mix)
	if err != nil {
		return RunResult{}, err
	}
	res := RunResult{Seed: seed}
	for _, n := range w.Nodes {
		res.CapacityGPUMilli += int64(n.GPUs) * gpushare.MilliPerGPU
	}
	var demand int64
	for _, p := range w.Pods {
		demand += p.TotalGPUMilli()
	}
	switch {
	case res.CapacityGPUMilli == 0:
		return RunResult{}, fmt.Errorf("workload %q: no node has a GPU; the experiment measures GPU allocation", w.Name)
	case demand == 0:
		return RunResult{}, fmt.Errorf("workload %q: no pod asks for a GPU (num_gpu is 0 on every row); the experiment measures GPU allocation", w.Name)
	}
	arr := ArrivalOrder(w.Pods, w.Nodes, res.CapacityGPUMilli, cfg.TuneRatio, seed)
	if len(arr.Pods) >= MaxArrivals {
		return RunResult{}, fmt.Errorf("workload %q: its pods ask for %d milli-GPU; reaching %.0f%% of the cluster's %d takes more than %d arrivals",
			w.Name, demand, 100*cfg.TuneRatio, res.CapacityGPUMilli, MaxArrivals)
	}
	shapeOf, numShapes := internShapes(w.Pods)
	c, err := newCluster(w.Nodes, &mix, numShapes, arr.NodeRank, cfg.TieBreak)
	if err != nil {
		return RunResult{}, fmt.Errorf("workload %q: %w", w.Name, err)
	}
	order, rng := arr.Pods, arr.Rand
	res.Pods, res.Events = len(order), make([]Event, 0, len(order))
	var arrived, used int64
	for _, pi := range order {
		pod := w.Pods[pi].Request
		arrived += pod.TotalGPUMilli()
		ok, err := c.place(shapeOf[pi], pod, scorer, rng)
		if err != nil {
			return RunResult{}, fmt.Errorf("seed %d, pod %q: %w", seed, w.Pods[pi].Name, err)
		}
		if ok {
			used += pod.TotalGPUMilli()
		} else {
			res.Failed++
		}
		res.Events = append(res.Events, Event{ArrivedGPUMilli: arrived, UsedGPUMilli: used, FragGPUMilli: c.fragTotal})
	}
	return res, nil
}

// shapeKey is everything a scorer looks at in a request.
type shapeKey struct {
	cpu, mem, milli int64
	gpus            int
	models          string
}

// internShapes numbers the distinct request shapes of the pods so that scores can be cached
// per shape.
func internShapes(pods []Pod) ([]int, int) {
	ids := map[shapeKey]int{}
	out := make([]int, len(pods))
	for i, p := range pods {
		k := shapeKey{p.CPUMilli, p.MemoryMiB, p.GPUMilli, p.NumGPUs, strings.Join(p.GPUModels, "|")}
		id, ok := ids[k]
		if !ok {
			id = len(ids)
			ids[k] = id
		}
		out[i] = id
	}
	return out, len(ids)
}
