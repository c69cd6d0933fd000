package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/fidelity/replaycheck"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/replay"
)

func init() { register(newCrossCheckCmd) }

// crossCheckOptions are the flags of replay-crosscheck.
type crossCheckOptions struct {
	workload, pods, traffic, from string
	fromDay, hours                float64
	policy, catalog               string
	factor                        float64
	step                          time.Duration
	schedulerConfig, logDir       string
	json, check                   bool
}

func newCrossCheckCmd() *cobra.Command {
	o := crossCheckOptions{}
	cmd := &cobra.Command{
		Use:   "replay-crosscheck",
		Short: "Replay a shortened workload fast and on the real control plane (time compressed), and compare",
		Long: `replay-crosscheck replays a shortened workload twice under one policy: the fast replay (tiler
replay's engine, in virtual time) and a live run — the real controller, kube-apiserver,
kube-scheduler and kube-controller-manager of a local control plane (make controlplane), and the
simulated cloud — with every duration divided by --factor, pods created and deleted at the
compressed times. It prints both runs' cost, pending times and launches, and how far apart they
are; --check fails when they are further apart than the cross-check's tolerance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCrossCheck(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "alibaba", "alibaba (workload 1: the GPU trace) or diurnal (workload 2: Deployments scaled on a traffic series)")
	f.StringVar(&o.pods, "pods", "testdata/alibaba-gpu-v2023/openb_pod_list_default.csv", "alibaba: openb pod list CSV with creation_time and deletion_time")
	f.Float64Var(&o.fromDay, "from-day", replay.DefaultAlibabaFrom.Hours()/24, "alibaba: start of the window, in days of the trace's time")
	f.StringVar(&o.traffic, "traffic", "testdata/traces/tune/nab/nyc_taxi.csv", "diurnal: traffic series CSV (time, value)")
	f.StringVar(&o.from, "from", "2014-10-15T06:00:00Z", "diurnal: start of the window in the series' time (RFC 3339)")
	f.Float64Var(&o.hours, "hours", 1, "length of the window, in hours")
	f.StringVar(&o.policy, "policy", replay.PolicyTiler, "policy: tiler, tiler-no-consolidation or karpenter-like")
	f.StringVar(&o.catalog, "catalog", "aws-us-east-1", "embedded catalog name")
	f.Float64Var(&o.factor, "factor", replaycheck.DefaultFactor, "time compression of the live run (60: a simulated hour in a minute)")
	f.DurationVar(&o.step, "step", replaycheck.DefaultStepInterval, "wall time between the simulated cloud's steps")
	f.StringVar(&o.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file kube-scheduler runs with instead of the cross-check's (the default profile, pod backoff capped at 1 s)")
	f.StringVar(&o.logDir, "log-dir", "", "keep the control plane's component logs and the controller's log in this folder")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.BoolVar(&o.check, "check", false, "fail when the live run is outside the cross-check's tolerance")
	return cmd
}

func runCrossCheck(cmd *cobra.Command, o crossCheckOptions) error {
	if o.hours <= 0 {
		return fmt.Errorf("--hours must be positive")
	}
	if o.factor < 1 {
		return fmt.Errorf("--factor must be at least 1")
	}
	wl, err := crossCheckWorkload(o)
	if err != nil {
		return err
	}
	cat, err := catalog.Embedded(o.catalog)
	if err != nil {
		return fmt.Errorf("--catalog: %w", err)
	}
	pols, err := replay.Policies(nil)
	if err != nil {
		return err
	}
	var pol *replay.Policy
	for i := range pols {
		if pols[i].Name == o.policy {
			pol = &pols[i]
		}
	}
	if pol == nil || pol.Consolidation == replay.ConsolidateCA {
		return fmt.Errorf("--policy: %q is not one the controller runs (want tiler, tiler-no-consolidation, karpenter-like)", o.policy)
	}
	cpOpts := controlplane.Options{LogDir: o.logDir, SchedulerConfig: replaycheck.SchedulerConfig}
	if o.schedulerConfig != "" {
		if cpOpts.SchedulerConfig, err = os.ReadFile(o.schedulerConfig); err != nil {
			return fmt.Errorf("--scheduler-config: %w", err)
		}
	}
	log := zap.NewNop()
	if o.logDir != "" {
		zc := zap.NewDevelopmentConfig()
		zc.OutputPaths = []string{filepath.Join(o.logDir, "tiler.log")}
		if err := os.MkdirAll(o.logDir, 0o755); err != nil {
			return fmt.Errorf("--log-dir: %w", err)
		}
		if log, err = zc.Build(); err != nil {
			return fmt.Errorf("--log-dir: %w", err)
		}
		defer func() { _ = log.Sync() }()
	}
	stderr := cmd.ErrOrStderr()
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	dir, err := os.MkdirTemp("", "tiler-crosscheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cpOpts.Logf = progress
	cp, err := controlplane.Start(cmd.Context(), cpOpts)
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer cp.Stop()
	rep, runErr := replaycheck.Run(cmd.Context(), cp.RESTConfig(), replaycheck.Options{Workload: wl, Policy: *pol,
		Replay: replay.DefaultConfig(cat), Factor: o.factor, StepInterval: o.step, Dir: dir, Log: log, Progress: progress})
	if rep != nil {
		out := cmd.OutOrStdout()
		if o.json {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else if err := rep.Write(out); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if o.check {
		if err := rep.Check(replaycheck.DefaultTolerance); err != nil {
			return fmt.Errorf("outside the tolerance:\n%w", err)
		}
	}
	return nil
}

// crossCheckWorkload reads the shortened workload the flags name.
func crossCheckWorkload(o crossCheckOptions) (*replay.Workload, error) {
	length := time.Duration(o.hours * float64(time.Hour))
	switch o.workload {
	case "alibaba":
		f, err := os.Open(o.pods)
		if err != nil {
			return nil, fmt.Errorf("--pods: %w", err)
		}
		defer f.Close()
		from := time.Duration(o.fromDay * 24 * float64(time.Hour))
		wl, err := replay.ReadAlibaba(strings.TrimSuffix(filepath.Base(o.pods), ".csv"), f, from, length)
		if err != nil {
			return nil, fmt.Errorf("--pods: %w", err)
		}
		return wl, nil
	case "diurnal":
		from, err := time.Parse(time.RFC3339, o.from)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		f, err := os.Open(o.traffic)
		if err != nil {
			return nil, fmt.Errorf("--traffic: %w", err)
		}
		defer f.Close()
		wl, err := replay.ReadDiurnal(strings.TrimSuffix(filepath.Base(o.traffic), ".csv")+"-diurnal", f, from, length, replay.DefaultDiurnalDeployments)
		if err != nil {
			return nil, fmt.Errorf("--traffic: %w", err)
		}
		return wl, nil
	}
	return nil, fmt.Errorf("--workload: unknown workload %q (want alibaba, diurnal)", o.workload)
}
