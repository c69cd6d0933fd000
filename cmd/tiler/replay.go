package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tiler-dev/tiler/api"
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
	policies, capType string
	json              bool
	html              string
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
			"nodes launched and removed, and evictions.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFleetReplay(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
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
	f.StringVar(&o.capType, "capacity-types", string(api.OnDemand), "capacity types every policy buys, comma-separated (spot interruptions are not modelled yet)")
	f.BoolVar(&o.json, "json", false, "write the report, time series included, as JSON")
	f.StringVar(&o.html, "html", "", "also write the report as one self-contained HTML file (table, savings, plots over time)")
	return cmd
}

func allReplayPolicies() []string {
	return []string{replay.PolicyTiler, replay.PolicyTilerNoForecast, replay.PolicyTilerNoConsolidation, replay.PolicyWholeGPU, replay.PolicyKarpenterLike}
}

func runFleetReplay(out io.Writer, o fleetReplayOptions) error {
	if o.hours <= 0 {
		return fmt.Errorf("--hours must be positive")
	}
	if o.fromDay < 0 {
		return fmt.Errorf("--from-day must not be negative")
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
	wl, err := replayWorkload(o)
	if err != nil {
		return err
	}
	cfg := replay.DefaultConfig(cat)
	cfg.CapacityTypes = caps
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
