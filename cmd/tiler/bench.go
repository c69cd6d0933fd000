package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tiler-dev/tiler/simulator/fgd"
)

func init() { register(newBenchCmd) }

// Default inputs of `tiler bench fgd`: the FGD paper's cluster and default trace, relative to the
// repository root.
const (
	benchTraceDir        = "testdata/alibaba-gpu-v2023"
	benchDefaultNodes    = benchTraceDir + "/openb_node_list_gpu_node.csv"
	benchDefaultPods     = benchTraceDir + "/openb_pod_list_default.csv"
	benchDefaultExpected = benchTraceDir + "/fgd-expected-results/summary_by_workload_policy.csv"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run offline placement experiments",
	}
	cmd.AddCommand(newBenchFGDCmd())
	return cmd
}

// benchFGDOptions are the flags of `tiler bench fgd`; each has a TILER_BENCH_* environment twin.
type benchFGDOptions struct {
	nodes, pods, expected string
	policy, seeds, output string
	tieBreak              string
}

func newBenchFGDCmd() *cobra.Command {
	o := benchFGDOptions{}
	cmd := &cobra.Command{
		Use:   "fgd",
		Short: "Reproduce the FGD paper's packing experiment (allocation at 90/100/130 % GPU arrived)",
		Long: "Places the trace's pods, shuffled and topped up to 130 % of the cluster's GPU capacity per seed,\n" +
			"one at a time with the chosen policy, and reports the GPU allocation ratio as the FGD paper\n" +
			"(Weng et al., USENIX ATC '23) does. Published numbers are shown beside ours when known.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchFGD(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.nodes, "nodes", envOr("TILER_BENCH_NODES", benchDefaultNodes), "node list CSV (sn,cpu_milli,memory_mib,gpu,model) [TILER_BENCH_NODES]")
	f.StringVar(&o.pods, "pods", envOr("TILER_BENCH_PODS", benchDefaultPods), "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...) [TILER_BENCH_PODS]")
	f.StringVar(&o.expected, "expected", envOr("TILER_BENCH_EXPECTED", benchDefaultExpected), "published results CSV; empty or missing to skip [TILER_BENCH_EXPECTED]")
	f.StringVar(&o.policy, "policy", envOr("TILER_BENCH_POLICY", string(fgd.PolicyTiler)), "placement policy: bestfit, fgd or tiler [TILER_BENCH_POLICY]")
	f.StringVar(&o.seeds, "seeds", envOr("TILER_BENCH_SEEDS", "42-51"), "seeds: a range 42-51 or a list 42,43 [TILER_BENCH_SEEDS]")
	f.StringVar(&o.tieBreak, "tie-break", envOr("TILER_BENCH_TIE_BREAK", string(fgd.TieByNodeOrder)), "ties between nodes: node-order (the paper's) or random (stock kube-scheduler) [TILER_BENCH_TIE_BREAK]")
	f.StringVarP(&o.output, "output", "o", envOr("TILER_BENCH_OUTPUT", "table"), "output format: json or table [TILER_BENCH_OUTPUT]")
	return cmd
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// benchFGDResult is the JSON output of `tiler bench fgd`; percentages are of cluster GPU capacity.
type benchFGDResult struct {
	Workload    string  `json:"workload"`
	Policy      string  `json:"policy"`
	Seeds       []int64 `json:"seeds"`
	TieBreak    string  `json:"tieBreak"`
	AllocAt90   float64 `json:"allocAt90"`
	AllocAt100  float64 `json:"allocAt100"`
	AllocAt130  float64 `json:"allocAt130"`
	Std90       float64 `json:"std90"`
	Std100      float64 `json:"std100"`
	Std130      float64 `json:"std130"`
	FragAt100   float64 `json:"fragAt100"`
	FragAt130   float64 `json:"fragAt130"`
	ArrivedPods float64 `json:"arrivedPods"`
	FailedPods  float64 `json:"failedPods"`
	// SecondsPerRun is wall time per seed, measured here in cmd (the simulator reads no clock).
	SecondsPerRun float64        `json:"secondsPerRun"`
	Published     *fgd.Published `json:"published,omitempty"`
}

func runBenchFGD(out io.Writer, o benchFGDOptions) error {
	policy, err := fgd.ParsePolicy(o.policy)
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	seeds, err := parseSeeds(o.seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if o.output != "json" && o.output != "table" {
		return fmt.Errorf("--output %q: want json or table", o.output)
	}
	w, err := loadWorkload(o.nodes, o.pods)
	if err != nil {
		return err
	}
	cfg := fgd.DefaultConfig(policy)
	cfg.Seeds, cfg.TieBreak = seeds, fgd.TieBreak(o.tieBreak)
	start := time.Now()
	s, err := fgd.Sweep(w, cfg)
	if err != nil {
		return fmt.Errorf("bench fgd: %w", err)
	}
	res := newBenchFGDResult(s, cfg.TieBreak, time.Since(start)/time.Duration(len(seeds)))
	if pub, err := loadPublished(o.expected, w.Name, policy); err != nil {
		return err
	} else if pub != nil {
		res.Published = pub
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return writeBenchTable(out, res)
}

func newBenchFGDResult(s fgd.Summary, tb fgd.TieBreak, perRun time.Duration) benchFGDResult {
	r := benchFGDResult{Workload: s.Workload, Policy: string(s.Policy), Seeds: s.Seeds, TieBreak: string(tb),
		ArrivedPods: s.ArrivedPods, FailedPods: s.FailedPods, SecondsPerRun: perRun.Seconds()}
	if p, ok := s.At(90); ok {
		r.AllocAt90, r.Std90 = p.Alloc.Mean, p.Alloc.Std
	}
	if p, ok := s.At(100); ok {
		r.AllocAt100, r.Std100, r.FragAt100 = p.Alloc.Mean, p.Alloc.Std, p.Frag.Mean
	}
	if p, ok := s.At(130); ok {
		r.AllocAt130, r.Std130, r.FragAt130 = p.Alloc.Mean, p.Alloc.Std, p.Frag.Mean
	}
	return r
}

func writeBenchTable(out io.Writer, r benchFGDResult) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload %s, policy %s, %d seeds (%d..%d), tie-break %s, %.0f pods arrived, %.0f failed, %.2fs/run\n",
		r.Workload, r.Policy, len(r.Seeds), r.Seeds[0], r.Seeds[len(r.Seeds)-1], r.TieBreak, r.ArrivedPods, r.FailedPods, r.SecondsPerRun)
	fmt.Fprintln(tw, "arrived\talloc %\tstd\tfrag %\tpublished alloc %")
	pub := func(v float64) string {
		if r.Published == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	var p fgd.Published
	if r.Published != nil {
		p = *r.Published
	}
	fmt.Fprintf(tw, "90%%\t%.2f\t%.2f\t-\t%s\n", r.AllocAt90, r.Std90, pub(p.AllocAt90))
	fmt.Fprintf(tw, "100%%\t%.2f\t%.2f\t%.2f\t%s\n", r.AllocAt100, r.Std100, r.FragAt100, pub(p.AllocAt100))
	fmt.Fprintf(tw, "130%%\t%.2f\t%.2f\t%.2f\t%s\n", r.AllocAt130, r.Std130, r.FragAt130, pub(p.AllocAt130))
	return tw.Flush()
}

// parseSeeds accepts "42-51" (inclusive) or "42,43,50".
func parseSeeds(s string) ([]int64, error) {
	s = strings.TrimSpace(s)
	if a, b, ok := strings.Cut(s, "-"); ok && !strings.Contains(s, ",") && a != "" {
		first, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		last, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("range %q: %w", s, err)
		}
		if last < first || last-first >= 1000 {
			return nil, fmt.Errorf("range %q: want first <= last and at most 1000 seeds", s)
		}
		return fgd.SeedRange(first, last), nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seed %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func loadWorkload(nodesPath, podsPath string) (fgd.Workload, error) {
	nf, err := os.Open(nodesPath)
	if err != nil {
		return fgd.Workload{}, fmt.Errorf("--nodes: %w", err)
	}
	defer nf.Close()
	nodes, err := fgd.ParseNodes(nf)
	if err != nil {
		return fgd.Workload{}, fmt.Errorf("%s: %w", nodesPath, err)
	}
	pf, err := os.Open(podsPath)
	if err != nil {
		return fgd.Workload{}, fmt.Errorf("--pods: %w", err)
	}
	defer pf.Close()
	pods, err := fgd.ParsePods(pf)
	if err != nil {
		return fgd.Workload{}, fmt.Errorf("%s: %w", podsPath, err)
	}
	name := strings.TrimSuffix(filepath.Base(podsPath), filepath.Ext(podsPath))
	return fgd.Workload{Name: name, Nodes: nodes, Pods: pods}, nil
}

// loadPublished returns the published row for the workload and policy, nil when the file is
// not given, missing, or has no such row.
func loadPublished(path, workload string, p fgd.Policy) (*fgd.Published, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("--expected: %w", err)
	}
	defer f.Close()
	rows, err := fgd.ParsePublished(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r, ok := fgd.FindPublished(rows, workload, p); ok {
		return &r, nil
	}
	return nil, nil
}
