package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator"
)

func init() { register(newCostCmd) }

type costOptions struct{ file, kubeconfig, namespace, catalog, policy, output string }

func newCostCmd() *cobra.Command {
	o := costOptions{}
	cmd := &cobra.Command{
		Use:   "cost -f SNAPSHOT | --kubeconfig KUBECONFIG",
		Short: "Attribute a cluster snapshot's node prices to the namespaces of its pods (chargeback), idle capacity per pool",
		Long: `cost reads a cluster snapshot (as tiler plan does) and shares each priced node's $/h among
the namespaces of its running pods, in proportion to what they take of the node's scarcest resource:
its GPUs on GPU nodes (a whole GPU, a time-sliced replica, a MIG slice by its compute slices, a DRA
device), the larger of CPU and memory on CPU nodes. What no pod takes is the idle line of the node's
pool and capacity type. Nodes are priced from their instance-type, zone and capacity-type labels and
the catalog; nodes the catalog does not know are listed and left out. With --policy, a policy
with teams adds each namespace's team to its lines and a total per team.

With --kubeconfig instead of -f, cost reads the live cluster as the controller's batches do (the
same informers and snapshot: nodes and active pods) and, unless --policy is given, the cost policy
of the cluster's cost-policy ConfigMaps (label tiler.dev/cost-policy=true) in --namespace. Prices
come from --catalog (the embedded catalog by default), not the cloud's live prices.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCost(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "snapshot file, or - for standard input")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "read the live cluster of this kubeconfig file instead of a snapshot")
	f.StringVar(&o.namespace, "namespace", provisioner.DefaultConfig().Namespace, "with --kubeconfig: the namespace of the cost-policy ConfigMaps (when no --policy)")
	f.StringVar(&o.catalog, "catalog", catalog.DefaultName, "embedded catalog name ("+strings.Join(catalog.EmbeddedNames(), ", ")+") or a catalog JSON file")
	f.StringVar(&o.policy, "policy", "", "cost policy file whose teams group the namespaces (a CostPolicy document or a ConfigMap with a policy.yaml key)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	cmd.MarkFlagsOneRequired("file", "kubeconfig")
	cmd.MarkFlagsMutuallyExclusive("file", "kubeconfig")
	return cmd
}

func runCost(ctx context.Context, w io.Writer, o costOptions) error {
	if o.output != "table" && o.output != "json" && o.output != "csv" {
		return fmt.Errorf("--output %q must be table, json or csv", o.output)
	}
	var snap *snapshot.Snapshot
	var cat *catalog.Catalog
	var pol *policy.CostPolicy
	var err error
	switch {
	case o.file != "" && o.kubeconfig != "":
		return errors.New("-f and --kubeconfig: give one, a snapshot or a live cluster")
	case o.file != "":
		if snap, cat, pol, err = readInputs(o.file, o.catalog, o.policy); err != nil {
			return err
		}
	case o.kubeconfig != "":
		if snap, cat, pol, err = observeLive(ctx, o); err != nil {
			return err
		}
	default:
		return errors.New("give -f SNAPSHOT or --kubeconfig KUBECONFIG")
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

// observeLive reads the cluster of --kubeconfig as the controller's batches do
// (provisioner.ObserveCluster), with the catalog of --catalog and the policy of --policy, else the
// cluster's.
func observeLive(ctx context.Context, o costOptions) (*snapshot.Snapshot, *catalog.Catalog, *policy.CostPolicy, error) {
	cat, err := loadCatalog(o.catalog)
	if err != nil {
		return nil, nil, nil, err
	}
	filePol, err := loadPolicy(o.policy)
	if err != nil {
		return nil, nil, nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	snap, err := provisioner.ObserveCluster(ctx, kube, time.Now())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the cluster of --kubeconfig %s: %w", o.kubeconfig, err)
	}
	if filePol != nil {
		return snap, cat, filePol, nil
	}
	pol, err := provisioner.ClusterPolicy(ctx, kube, o.namespace)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the cluster's cost policy (--namespace %s; --policy replaces it): %w", o.namespace, err)
	}
	return snap, cat, pol, nil
}
