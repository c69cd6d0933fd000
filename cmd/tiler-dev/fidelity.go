package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tiler-dev/tiler/fidelity"
)

func init() { register(newFidelityCmd) }

func newFidelityCmd() *cobra.Command {
	c := fidelity.Campaign{}
	cmd := &cobra.Command{
		Use:   "fidelity",
		Short: "Compare Tiler's plans with what the real kube-scheduler binds, over generated scenarios",
		Long: `fidelity starts a local control plane (make controlplane builds it), and for every seed
generates a scenario, plans and launches it with the controller on the simulated cloud, lets the real
kube-scheduler bind, and compares pod by pod — in each mode: "on" (nominations and node reservations,
the default), "nominations" (nominations only) and "off". It prints, per constraint
kind, how many planned pods were not bound, how many were bound elsewhere than planned, and how many
pods the plan had no place for were bound on bought nodes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			c.Progress = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			rep, err := c.Run(cmd.Context())
			if rep != nil {
				if werr := rep.Write(out); werr != nil && err == nil {
					err = werr
				}
				if werr := c.WriteReport(rep); werr != nil && err == nil {
					err = werr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Seeds, "seeds", 20, "number of generated scenarios")
	f.Uint64Var(&c.First, "first", 1, "first seed")
	f.BoolVar(&c.Gen.DRA, "dra", false, "add workloads that get their GPU through a DRA claim")
	f.BoolVar(&c.Gen.Soft, "soft", false, "give some workloads soft constraints (preferred affinity, ScheduleAnyway spread)")
	schedulerConfig := f.String("scheduler-config", "", "KubeSchedulerConfiguration file kube-scheduler runs with (e.g. deploy/scheduler/gpu-mostallocated.yaml)")
	f.IntVar(&c.Gen.MaxPods, "max-pods", fidelity.DefaultMaxPods, "pending pods per scenario at most")
	modes := f.StringSlice("modes", []string{"on", "nominations", "off"}, "modes to run each scenario in: on, nominations, off")
	f.StringVar(&c.Out, "out", "", "folder for the report and the scenarios that showed a disagreement (regression files)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if c.Seeds <= 0 {
			return fmt.Errorf("--seeds must be positive")
		}
		if *schedulerConfig != "" {
			cfg, err := os.ReadFile(*schedulerConfig)
			if err != nil {
				return fmt.Errorf("--scheduler-config: %w", err)
			}
			c.ControlPlane.SchedulerConfig = cfg
		}
		c.Modes = nil
		for _, s := range *modes {
			m, err := fidelity.ParseMode(s)
			if err != nil {
				return fmt.Errorf("--modes: %w", err)
			}
			c.Modes = append(c.Modes, m)
		}
		if c.Out != "" {
			if err := os.MkdirAll(c.Out, 0o755); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
		return nil
	}
	return cmd
}
