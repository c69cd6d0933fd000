package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/promsource"
	"github.com/tiler-dev/tiler/promsource/kubestate"
	"github.com/tiler-dev/tiler/replay"
)

func init() { register(newFleetReplayCmd) }

// fleetReplayOptions are the flags of `tiler replay`.
type fleetReplayOptions struct {
	workload          string
	pods, catalog     string
	traffic, from     string
	fromDay, hours    float64
	seed              uint64
	interruptionSeed  uint64
	interruptionRate  float64
	policies, capType string
	json              bool
	html              string
	// The cluster's own history (--prometheus-url).
	promURL, until  string
	since, promStep time.Duration
	promTimeout     time.Duration
}

func newFleetReplayCmd() *cobra.Command {
	o := fleetReplayOptions{}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a workload over simulated time under tiler and the baselines, and compare what each costs",
		Long: "Replays the Alibaba GPU trace's arrivals and departures (a window of its creation_time and\n" +
			"deletion_time) through the controller's own decisions (provisioner.Decide, simulator.PlanDisruption)\n" +
			"with a simulated cloud and a scheduler model in virtual time, under each policy on the same catalog\n" +
			"and prices, and prints $, the ratio to the clairvoyant bound, GPU/CPU allocation, pending times,\n" +
			"nodes launched and removed, evictions and spot interruptions.\n\n" +
			"With --prometheus-url it replays your own cluster instead: the pods of the last --since before\n" +
			"--until, rebuilt from the kube-state-metrics series the Prometheus server keeps (creation, deletion\n" +
			"or completion, requests, owner), so you see what Tiler would have cost on your own workload.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkPrometheusFlags(cmd, o); err != nil {
				return err
			}
			return runFleetReplay(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.promURL, "prometheus-url", "", "replay the cluster's own last days instead: the Prometheus server (base URL) that scrapes its kube-state-metrics (and DCGM exporter, if any)")
	o.since = 7 * 24 * time.Hour
	f.Var((*durationFlag)(&o.since), "since", "with --prometheus-url: how far back the window starts from --until (1d, 7d, 36h, …)")
	f.StringVar(&o.until, "until", "", "with --prometheus-url: end of the window (RFC 3339; default now)")
	o.promStep = time.Minute
	f.Var((*durationFlag)(&o.promStep), "prometheus-step", "with --prometheus-url: resolution of the last-seen and finished-phase subqueries")
	o.promTimeout = 2 * time.Minute
	f.Var((*durationFlag)(&o.promTimeout), "prometheus-timeout", "with --prometheus-url: timeout of each query")
	f.StringVar(&o.workload, "workload", "alibaba", "alibaba (the GPU trace's arrivals and departures), diurnal (inference Deployments scaled on a traffic series) "+
		"or mixed (night training gangs, daytime inference, development pods)")
	f.StringVar(&o.traffic, "traffic", "", "diurnal, mixed: traffic series CSV (time, value) (default "+defaultDiurnalTraffic+", mixed "+defaultMixedTraffic+")")
	f.StringVar(&o.from, "from", "", "diurnal, mixed: start of the window in the series' time, RFC 3339 (default "+
		replay.DefaultDiurnalFrom.Format(time.RFC3339)+", mixed "+replay.DefaultMixedFrom.Format(time.RFC3339)+")")
	f.Uint64Var(&o.seed, "seed", replay.DefaultMixedSeed, "mixed: seed of the training and development pods' draws")
	f.StringVar(&o.pods, "pods", envOr("TILER_REPLAY_PODS", benchDefaultPods), "Alibaba openb pod list CSV with creation_time and deletion_time [TILER_REPLAY_PODS]")
	f.Float64Var(&o.fromDay, "from-day", replay.DefaultAlibabaFrom.Hours()/24, "alibaba: start of the window, in days of the trace's time")
	f.Float64Var(&o.hours, "hours", replay.DefaultAlibabaLength.Hours(), "length of the window, in hours")
	f.StringVar(&o.catalog, "catalog", "aws-us-east-1", "embedded catalog name or catalog JSON file")
	f.StringVar(&o.policies, "policies", strings.Join(allReplayPolicies(), ","), "policies to replay, comma-separated")
	f.StringVar(&o.capType, "capacity-types", string(api.OnDemand), "capacity types every policy buys, comma-separated: on-demand, spot "+
		"(spot instances are interrupted at --spot-interruption-rate, with EC2's two-minute notice)")
	f.Float64Var(&o.interruptionRate, "spot-interruption-rate", replay.DefaultSpotInterruptionRate,
		"expected interruptions per spot instance-hour (default: AWS Spot Instance Advisor's worst band, >20 % a month)")
	f.Uint64Var(&o.interruptionSeed, "interruption-seed", replay.DefaultInterruptionSeed, "seed of the spot interruptions' draws (each launch's from the seed and its launch ID)")
	f.BoolVar(&o.json, "json", false, "write the report, time series included, as JSON")
	f.StringVar(&o.html, "html", "", "also write the report as one self-contained HTML file (table, savings, plots over time)")
	return cmd
}

func allReplayPolicies() []string {
	return []string{replay.PolicyTiler, replay.PolicyTilerNoForecast, replay.PolicyTilerNoConsolidation, replay.PolicyWholeGPU, replay.PolicyKarpenterLike}
}

// checkPrometheusFlags refuses flags that do not go together with --prometheus-url (or need it).
func checkPrometheusFlags(cmd *cobra.Command, o fleetReplayOptions) error {
	f := cmd.Flags()
	if o.promURL == "" {
		for _, name := range []string{"since", "until", "prometheus-step", "prometheus-timeout"} {
			if f.Changed(name) {
				return fmt.Errorf("--%s: only with --prometheus-url", name)
			}
		}
		return nil
	}
	for _, name := range []string{"workload", "pods", "traffic", "from", "from-day", "hours"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s: not with --prometheus-url (the window is --since and --until)", name)
		}
	}
	return nil
}

func runFleetReplay(ctx context.Context, out, errOut io.Writer, o fleetReplayOptions) error {
	if o.hours <= 0 {
		return fmt.Errorf("--hours must be positive")
	}
	if o.fromDay < 0 {
		return fmt.Errorf("--from-day must not be negative")
	}
	if o.interruptionRate < 0 || math.IsNaN(o.interruptionRate) || math.IsInf(o.interruptionRate, 0) {
		return fmt.Errorf("--spot-interruption-rate %v: must be a finite number ≥ 0 (interruptions per spot instance-hour)", o.interruptionRate)
	}
	var caps []api.CapacityType
	for _, c := range strings.Split(o.capType, ",") {
		switch ct := api.CapacityType(strings.TrimSpace(c)); ct {
		case api.OnDemand, api.Spot:
			caps = append(caps, ct)
		default:
			return fmt.Errorf("--capacity-types: unknown capacity type %q (want on-demand, spot)", c)
		}
	}
	all, err := replay.Policies(caps)
	if err != nil {
		return err
	}
	var pols []replay.Policy
	for _, name := range strings.Split(o.policies, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, p := range all {
			if p.Name == name {
				pols, found = append(pols, p), true
			}
		}
		if !found {
			return fmt.Errorf("--policies: unknown policy %q (want %s)", name, strings.Join(allReplayPolicies(), ", "))
		}
	}
	cat, err := loadCatalog(o.catalog)
	if err != nil {
		return err
	}
	var wl *replay.Workload
	if o.promURL != "" {
		summary := out
		if o.json {
			summary = errOut
		}
		wl, err = prometheusWorkload(ctx, summary, o)
	} else {
		wl, err = replayWorkload(o)
	}
	if err != nil {
		return err
	}
	cfg := replay.DefaultConfig(cat)
	cfg.CapacityTypes = caps
	cfg.SpotInterruptionRate, cfg.InterruptionSeed = o.interruptionRate, o.interruptionSeed
	if term.IsTerminal(int(os.Stderr.Fd())) {
		cfg.Progress, cfg.ProgressEvery = terminalProgress(os.Stderr), 15*time.Minute
		defer fmt.Fprint(os.Stderr, "\r\033[K")
	}
	rep, err := replay.Compare(wl, pols, cfg)
	if err != nil {
		return err
	}
	if o.html != "" {
		if err := writeReplayHTML(o.html, rep); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if o.json {
		return rep.WriteJSON(out)
	}
	return rep.WriteTable(out)
}

// terminalProgress shows on one terminal line the virtual time each policy has reached and the
// wall time it still needs at its pace so far.
func terminalProgress(w io.Writer) func(string, time.Duration, time.Duration) {
	var policy string
	var start time.Time
	return func(p string, reached, total time.Duration) {
		if p != policy {
			policy, start = p, time.Now()
		}
		eta := "?"
		if reached > 0 {
			left := time.Duration(float64(time.Since(start)) * float64(total-reached) / float64(reached))
			eta = left.Round(time.Second).String()
		}
		fmt.Fprintf(w, "\r\033[K%s: %s of %s simulated, ETA %s", p, reached.Round(time.Minute), total, eta)
	}
}

// replayWorkload reads the workload the flags name.
func replayWorkload(o fleetReplayOptions) (*replay.Workload, error) {
	length := time.Duration(o.hours * float64(time.Hour))
	switch o.workload {
	case "alibaba":
		f, err := os.Open(o.pods)
		if err != nil {
			return nil, fmt.Errorf("--pods: %w", err)
		}
		defer f.Close()
		from := time.Duration(o.fromDay * 24 * float64(time.Hour))
		wl, err := replay.ReadAlibaba(strings.TrimSuffix(pathBase(o.pods), ".csv"), f, from, length)
		if err != nil {
			return nil, fmt.Errorf("--pods: %w", err)
		}
		return wl, nil
	case "diurnal", "mixed":
		traffic, from := defaultDiurnalTraffic, replay.DefaultDiurnalFrom
		if o.workload == "mixed" {
			traffic, from = defaultMixedTraffic, replay.DefaultMixedFrom
		}
		if o.traffic != "" {
			traffic = o.traffic
		}
		if o.from != "" {
			t, err := time.Parse(time.RFC3339, o.from)
			if err != nil {
				return nil, fmt.Errorf("--from: %w", err)
			}
			from = t
		}
		f, err := os.Open(traffic)
		if err != nil {
			return nil, fmt.Errorf("--traffic: %w", err)
		}
		defer f.Close()
		name := strings.TrimSuffix(pathBase(traffic), ".csv") + "-" + o.workload
		var wl *replay.Workload
		if o.workload == "mixed" {
			wl, err = replay.ReadMixed(name, f, from, length, o.seed)
		} else {
			wl, err = replay.ReadDiurnal(name, f, from, length, replay.DefaultDiurnalDeployments)
		}
		if err != nil {
			return nil, fmt.Errorf("--traffic: %w", err)
		}
		return wl, nil
	}
	return nil, fmt.Errorf("--workload: unknown workload %q (want alibaba, diurnal, mixed)", o.workload)
}

// prometheusWorkload reads the window of --since before --until of the cluster whose metrics the
// Prometheus server at --prometheus-url keeps, and writes what it found to summary.
func prometheusWorkload(ctx context.Context, summary io.Writer, o fleetReplayOptions) (*replay.Workload, error) {
	if o.since <= 0 {
		return nil, fmt.Errorf("--since must be positive")
	}
	if o.promStep < time.Second {
		return nil, fmt.Errorf("--prometheus-step must be at least 1s")
	}
	if o.promTimeout <= 0 {
		return nil, fmt.Errorf("--prometheus-timeout must be positive")
	}
	until := time.Now().UTC().Truncate(time.Second)
	if o.until != "" {
		t, err := time.Parse(time.RFC3339, o.until)
		if err != nil {
			return nil, fmt.Errorf("--until: %w", err)
		}
		until = t
	}
	u, err := url.Parse(o.promURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus-url %q: want an http(s) base URL such as http://prometheus.monitoring:9090", o.promURL)
	}
	c, err := promsource.New(promsource.Config{Address: o.promURL, Timeout: o.promTimeout})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cl, err := kubestate.Read(ctx, c, kubestate.Options{From: until.Add(-o.since), Until: until, Resolution: o.promStep})
	if err != nil {
		return nil, err
	}
	wl, skipped, err := cl.Workload()
	if err != nil {
		return nil, err
	}
	writeClusterSummary(summary, cl, wl, skipped)
	return wl, nil
}

// writeClusterSummary says what the cluster's metrics gave: pods replayed and left out, the
// nodes it ran, and its GPUs' utilisation.
func writeClusterSummary(w io.Writer, cl *kubestate.Cluster, wl *replay.Workload, skipped map[string]int) {
	carried, running := 0, 0
	for _, p := range wl.Pods {
		if p.Carried {
			carried++
		}
		if p.Depart == wl.Length {
			running++
		}
	}
	fmt.Fprintf(w, "%s, %s – %s: %d pods replayed (%d already running at the start, %d still running at the end), from %d seen in %d queries\n",
		cl.Address, cl.From.Format(time.RFC3339), cl.Until.Format(time.RFC3339), len(wl.Pods), carried, running, len(cl.Pods), cl.Queries)
	for _, r := range slices.Sorted(maps.Keys(skipped)) {
		fmt.Fprintf(w, "  left out: %s: %d\n", r, skipped[r])
	}
	if len(cl.Nodes) > 0 {
		var parts []string
		total := 0
		for _, it := range slices.Sorted(maps.Keys(cl.Nodes)) {
			total += cl.Nodes[it]
			name := it
			if name == "" {
				name = "instance type not exposed"
			}
			parts = append(parts, fmt.Sprintf("%d %s", cl.Nodes[it], name))
		}
		fmt.Fprintf(w, "  the cluster ran %d nodes (%s)\n", total, strings.Join(parts, ", "))
	}
	if g := cl.GPU; g != nil {
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(g.Models)) {
			parts = append(parts, fmt.Sprintf("%d %s", g.Models[m], m))
		}
		fmt.Fprintf(w, "  DCGM: %d GPUs (%s) averaged %.1f%% utilisation\n", g.GPUs, strings.Join(parts, ", "), g.MeanPercent)
	}
	fmt.Fprintln(w)
}

// The default traffic series of workloads 2 and 3.
const (
	defaultDiurnalTraffic = "testdata/traces/tune/nab/nyc_taxi.csv"
	defaultMixedTraffic   = "testdata/traces/tune/synth/web-1.csv"
)

// writeReplayHTML writes the HTML report to path.
func writeReplayHTML(path string, rep *replay.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteHTML(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pathBase is the last element of a slash- or OS-separated path.
func pathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
