package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator"
)

func init() { register(newCostCmd) }

type costOptions struct{ file, catalog, policy, output string }

func newCostCmd() *cobra.Command {
	o := costOptions{}
	cmd := &cobra.Command{
		Use:   "cost -f SNAPSHOT",
		Short: "Attribute a cluster snapshot's node prices to the namespaces of its pods (chargeback), idle capacity per pool",
		Long: `cost reads a cluster snapshot (as tiler plan does) and shares each priced node's $/h among
the namespaces of its running pods, in proportion to what they take of the node's scarcest resource:
its GPUs on GPU nodes (a whole GPU, a time-sliced replica, a MIG slice by its compute slices, a DRA
device), the larger of CPU and memory on CPU nodes. What no pod takes is the idle line of the node's
pool and capacity type. Nodes are priced from their instance-type, zone and capacity-type labels and
the catalog; nodes the catalog does not know are listed and left out. With --policy, a policy
with teams adds each namespace's team to its lines and a total per team.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCost(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "snapshot file, or - for standard input (required)")
	f.StringVar(&o.catalog, "catalog", catalog.DefaultName, "embedded catalog name ("+strings.Join(catalog.EmbeddedNames(), ", ")+") or a catalog JSON file")
	f.StringVar(&o.policy, "policy", "", "cost policy file whose teams group the namespaces (a CostPolicy document or a ConfigMap with a policy.yaml key)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runCost(w io.Writer, o costOptions) error {
	if o.output != "table" && o.output != "json" && o.output != "csv" {
		return fmt.Errorf("--output %q must be table, json or csv", o.output)
	}
	snap, cat, pol, err := readInputs(o.file, o.catalog, o.policy)
	if err != nil {
		return err
	}
	r, err := simulator.Chargeback(snap, cat, pol)
	if err != nil {
		return err
	}
	switch o.output {
	case "json":
		return r.WriteJSON(w)
	case "csv":
		return r.WriteCSV(w)
	}
	return r.WriteTable(w)
}
