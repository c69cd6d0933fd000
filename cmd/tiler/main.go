// Command tiler is the cost-aware GPU node provisioner: `tiler run` is the controller, `tiler plan`
// an offline what-if on a cluster snapshot. Subcommands are defined beside this file; main only
// wires them together.
package main

import (
	"fmt"
	"os"
	// Forecast time zones (timeZone: Asia/Tokyo) resolve in images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/spf13/cobra"
)

// commands holds the constructors of the subcommands; each subcommand's file registers its own in
// an init function so that files can be added without editing this one.
var commands []func() *cobra.Command

func register(c func() *cobra.Command) { commands = append(commands, c) }

func main() {
	root := &cobra.Command{
		Use:           "tiler",
		Short:         "Cost-aware node provisioner for GPU and AI workloads on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tiler:", err)
		os.Exit(1)
	}
}
