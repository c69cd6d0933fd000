package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

func init() { register(newPlanCmd) }

type planOptions struct {
	file, catalog, policy, output, seed string
	// disruption plans what to give back instead of what to buy; now is its time (RFC 3339,
	// default the clock) and candidateWait honours the nodes' candidate-since annotations.
	disruption    bool
	now           string
	candidateWait bool
	// images is a file of, by node, the image it booted from and the image a launch gets now
	// (and the launch settings' digests): the drift the cloud would report.
	images string
	// migRelayout lets the purchase plan re-partition idle MIG GPUs instead of buying.
	migRelayout bool
}

func newPlanCmd() *cobra.Command {
	o := planOptions{}
	cmd := &cobra.Command{
		Use:   "plan -f SNAPSHOT",
		Short: "Plan the cheapest new nodes for a cluster snapshot's pending pods, or (--disruption) what to give back (offline what-if)",
		Long: `plan reads a cluster snapshot (multi-document YAML or JSON of Nodes, Pods, PriorityClasses,
DaemonSets, PodDisruptionBudgets, Namespaces, ResourceQuotas and DRA objects, or a v1 List such as 'kubectl get nodes,pods -A -o yaml'
prints), simulates where the pending pods can go and which instance types, zones and capacity types to
buy, and prints the plan. Pods beyond their namespace's ResourceQuota (QuotaExceeded) or their
team's limits in the policy (TeamLimitExceeded) are reported instead of bought for, and so are
pods kube-scheduler would place by preempting lower-priority pods on an existing node (PREEMPTING
POD; their victims are planned as pending pods); gated pods (spec.schedulingGates) are not planned.

With --disruption it plans consolidation instead: which managed nodes (labelled tiler.dev/pool) to
remove or replace with a cheaper node, where their pods would go, the savings, and why every other
node stays. Node ages and budget windows are measured at --now; the nodes' candidate-since
annotations are honoured only with --candidate-wait (the controller's view). The snapshot does
not show which image a node booted from: --images names it per node, with the image a launch gets
now (and, optionally, the digests of the other launch settings), as the controller asks the cloud,
so that nodes whose image or settings moved are planned as Drifted:

    dev-4: {booted: ami-0a, now: ami-0b}
    gpu-3: {booted: ami-0a, now: ami-0a, settings: 3f2c, settingsNow: 9e1d}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "snapshot file, or - for standard input (required)")
	f.StringVar(&o.catalog, "catalog", catalog.DefaultName, "embedded catalog name ("+strings.Join(catalog.EmbeddedNames(), ", ")+") or a catalog JSON file")
	f.StringVar(&o.policy, "policy", "", "cost policy file: a CostPolicy document or a ConfigMap with a policy.yaml key")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.StringVar(&o.seed, "seed", "", "seed for new node names")
	f.BoolVar(&o.disruption, "disruption", false, "plan what to remove or replace (consolidation) instead of what to buy")
	f.StringVar(&o.now, "now", "", "with --disruption: the decision's time, RFC 3339 (default: now)")
	f.BoolVar(&o.candidateWait, "candidate-wait", false, "with --disruption: act only on nodes that have been candidates (tiler.dev/disruption-candidate-since) for their pool's consolidateAfter")
	f.StringVar(&o.images, "images", "", "with --disruption: YAML or JSON file of, by node, {booted, now, settings, settingsNow}: the image (and launch settings) it booted from and a launch gets now")
	f.BoolVar(&o.migRelayout, "mig-relayout", false, "let the plan re-partition idle GPUs of existing MIG nodes (nvidia.com/mig.config) instead of buying; the controller does not apply re-layouts yet")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runPlan(w io.Writer, o planOptions) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output %q must be table or json", o.output)
	}
	snap, cat, pol, err := readInputs(o.file, o.catalog, o.policy)
	if err != nil {
		return err
	}
	if pol != nil {
		if err := simulator.CheckPolicy(cat, pol); err != nil {
			return fmt.Errorf("%s: %w", o.policy, err)
		}
	}
	if o.disruption {
		return runDisruption(w, o, snap, cat, pol)
	}
	if o.images != "" {
		return fmt.Errorf("--images %s: drift is planned with --disruption only", o.images)
	}
	// A snapshot file without its time is planned as of now (capacity reservations that start or
	// end are judged at that time).
	now := snap.Now
	if now.IsZero() {
		now = time.Now()
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol,
		Options: simulator.Options{Now: now, Seed: o.seed, MIGRelayout: o.migRelayout}})
	if err != nil {
		return err
	}
	if o.output == "json" {
		return plan.WriteJSON(w)
	}
	return plan.WriteTable(w)
}

// readInputs reads what the offline commands work on: the snapshot file, the catalog (embedded
// name or file) and the cost policy file (nil without one).
func readInputs(file, catalogName, policyFile string) (*snapshot.Snapshot, *catalog.Catalog, *policy.CostPolicy, error) {
	snap, err := readSnapshot(file)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err := loadCatalog(catalogName)
	if err != nil {
		return nil, nil, nil, err
	}
	pol, err := loadPolicy(policyFile)
	if err != nil {
		return nil, nil, nil, err
	}
	return snap, cat, pol, nil
}

func readSnapshot(path string) (*snapshot.Snapshot, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	snap, err := snapshot.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return snap, nil
}

// loadCatalog returns the named embedded catalog, or reads a catalog JSON file.
func loadCatalog(nameOrFile string) (*catalog.Catalog, error) {
	if _, err := os.Stat(nameOrFile); err == nil {
		f, err := os.Open(nameOrFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cat, err := catalog.Decode(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", nameOrFile, err)
		}
		return cat, nil
	}
	return catalog.Embedded(nameOrFile)
}

func loadPolicy(path string) (*policy.CostPolicy, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// runDisruption plans consolidation on the snapshot and writes the disruption plan.
func runDisruption(w io.Writer, o planOptions, snap *snapshot.Snapshot, cat *catalog.Catalog, pol *policy.CostPolicy) error {
	now := time.Now()
	if o.now != "" {
		t, err := time.Parse(time.RFC3339, o.now)
		if err != nil {
			return fmt.Errorf("--now %q: %w", o.now, err)
		}
		now = t
	}
	images, err := readImages(o.images, snap)
	if err != nil {
		return err
	}
	plan, err := simulator.PlanDisruption(simulator.DisruptionInput{Snapshot: snap, Catalog: cat, Policy: pol,
		Options: simulator.DisruptionOptions{Now: now, Seed: o.seed, IgnoreCandidateWait: !o.candidateWait, Images: images}})
	if err != nil {
		return err
	}
	if o.output == "json" {
		return plan.WriteJSON(w)
	}
	return plan.WriteTable(w)
}

// readImages reads --images: by node of the snapshot, the image it booted from and the image a
// launch gets now, and the digests of the other launch settings; nil without the flag.
func readImages(path string, snap *snapshot.Snapshot) (map[string]simulator.NodeImage, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	var in map[string]struct {
		Booted      string `json:"booted"`
		Now         string `json:"now"`
		Settings    string `json:"settings"`
		SettingsNow string `json:"settingsNow"`
	}
	if err := yaml.UnmarshalStrict(b, &in); err != nil {
		return nil, fmt.Errorf("--images %s: %w", path, err)
	}
	nodes := map[string]bool{}
	for _, n := range snap.Nodes {
		nodes[n.Name] = true
	}
	out := map[string]simulator.NodeImage{}
	for name, m := range in {
		if !nodes[name] {
			return nil, fmt.Errorf("--images %s: node %q is not in the snapshot", path, name)
		}
		if m.Booted == "" && m.Now == "" && m.Settings == "" && m.SettingsNow == "" {
			return nil, fmt.Errorf("--images %s: node %q: set booted and now, or settings and settingsNow", path, name)
		}
		out[name] = simulator.NodeImage{Booted: m.Booted, Now: m.Now, Settings: m.Settings, SettingsNow: m.SettingsNow}
	}
	return out, nil
}
