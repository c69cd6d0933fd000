package simulator_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestMinNodesLowerBound: a plan that buys nodes only for a pool's minNodes had a lower bound of 0
// and printed "gap ≤ 0 %" for any cost; the bound now counts the nodes every plan must keep, and
// the table says which nodes are empty.
func TestMinNodesLowerBound(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: warm\n  instanceTypes: [m7i.large]\n  minNodes: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{}
	snap.Nodes = append(snap.Nodes, simtest.Node("warm-0", "m7i.large", "us-east-1a", simtest.Resources("cpu", "2", "memory", "8Gi", "pods", "110")))
	snap.Nodes[0].Labels[api.LabelPool] = "warm"
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) != 4 {
		t.Fatalf("%d new nodes, want 4 (minNodes 5, one existing)", len(plan.NewNodes))
	}
	if plan.LowerBoundPerHour <= 0 || plan.LowerBoundPerHour != plan.CostPerHour {
		t.Errorf("lower bound $%v/h for a cost of $%v/h: four cheapest nodes are the least any plan pays", plan.LowerBoundPerHour, plan.CostPerHour)
	}
	var buf bytes.Buffer
	if err := plan.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(buf.String(), "\n"); !strings.Contains(first, "4 nodes (4 empty, for pools' minNodes)") || !strings.Contains(first, "gap ≤ 0.0%") {
		t.Errorf("summary %q", first)
	}
}

// TestGapUnknownWithoutBound: a plan with a cost and no bound says the gap is not known.
func TestGapUnknownWithoutBound(t *testing.T) {
	p := &api.Plan{CostPerHour: 1.5, NewNodes: []api.NewNode{{Name: "n", Pods: []string{"a/b"}}}}
	var buf bytes.Buffer
	if err := p.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "gap n/a") {
		t.Errorf("table %q", buf.String())
	}
}
