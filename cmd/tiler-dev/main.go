// Command tiler-dev is Tiler's developer binary: the harnesses that start a local control plane
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) — `tiler-dev demo`, the main job
// end to end on the simulated cloud, `tiler-dev fidelity`, the differential test of plans
// against the real kube-scheduler, and `tiler-dev replay-crosscheck`, the replay against the real
// control plane in compressed time. They live apart from cmd/tiler so that the controller image
// carries neither the code that starts etcd nor any test machinery (internal/archtest asserts it).
// Subcommands are defined beside this file; main only wires them together.
package main

import (
	"fmt"
	"os"
	// Policies of the demo's --examples folder may name forecast time zones; they resolve on hosts
	// without /usr/share/zoneinfo as they do in `tiler`.
	_ "time/tzdata"

	"github.com/spf13/cobra"
)

// commands holds the constructors of the subcommands; each subcommand's file registers its own in
// an init function so that files can be added without editing this one.
var commands []func() *cobra.Command

func register(c func() *cobra.Command) { commands = append(commands, c) }

// newRoot is the tiler-dev command with every registered subcommand.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "tiler-dev",
		Short:         "Tiler's developer harnesses: the end-to-end demo, the fidelity campaign and the replay cross-check on a local control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tiler-dev:", err)
		os.Exit(1)
	}
}
