package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
)

// disruptionFlags are the flags of the disruption what-if on the example snapshot: a Saturday, so
// the gpu pool's weekday window (budget 0) is closed.
func disruptionFlags(output string) planOptions {
	return planOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1",
		policy: "../../testdata/config/policy-disruption.good.yaml", output: output, disruption: true,
		now: "2026-03-07T12:00:00Z", seed: "what-if"}
}

// TestPlanDisruptionTable: `tiler plan --disruption` shows the actions with their savings and
// moves, and why each kept node stays.
func TestPlanDisruptionTable(t *testing.T) {
	var out bytes.Buffer
	if err := runPlan(&out, disruptionFlags("table")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Managed fleet: $3.1693/h → $2.1770/h",
		"Delete  Empty          batch  batch-1",
		"gpu    gpu-2", "1 pod: 1 → batch-2", // the GPU node that only runs a CPU pod goes first
		"dev-2            dev     PDB", "dev-3            dev     TooYoung", "PodWithoutController",
		"gpu-1            gpu     Budget", "DoNotDisrupt", "pool pinned: consolidation is never", "Unmanaged",
		"Candidates (tiler.dev/disruption-candidate-since): batch-1, dev-1, gpu-2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPlanDisruptionJSON: -o json is the api.DisruptionPlan contract; --candidate-wait honours the
// nodes' candidate annotations, which this snapshot lacks, so nothing is removed yet and the
// candidates are named.
func TestPlanDisruptionJSON(t *testing.T) {
	var out bytes.Buffer
	if err := runPlan(&out, disruptionFlags("json")); err != nil {
		t.Fatal(err)
	}
	var plan api.DisruptionPlan
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) != 3 || plan.Actions[0].Reason != api.ReasonEmpty || plan.Actions[0].ID == "" || len(plan.Kept) != 8 {
		t.Errorf("plan %+v", plan)
	}
	o := disruptionFlags("json")
	o.candidateWait = true
	out.Reset()
	if err := runPlan(&out, o); err != nil {
		t.Fatal(err)
	}
	plan = api.DisruptionPlan{}
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) != 1 || plan.Actions[0].Nodes[0] != "batch-1" || len(plan.Candidates) != 3 {
		// batch-1's pool waits 0s; the others must first be candidates for minutes.
		t.Errorf("with --candidate-wait: actions %+v, candidates %v", plan.Actions, plan.Candidates)
	}
	o.now = "yesterday"
	if err := runPlan(&out, o); err == nil || !strings.Contains(err.Error(), "--now") {
		t.Errorf("a bad --now: %v", err)
	}
}

// TestPlanPurchase: without --disruption, plan prints the purchase plan of the pending pods, and
// rejects an unknown output format.
func TestPlanPurchase(t *testing.T) {
	var out bytes.Buffer
	o := planOptions{file: "../../testdata/snapshots/example.yaml", catalog: "aws-us-east-1", output: "json", seed: "what-if"}
	if err := runPlan(&out, o); err != nil {
		t.Fatal(err)
	}
	var plan api.Plan
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) == 0 || plan.CostPerHour <= 0 {
		t.Errorf("plan %+v", plan)
	}
	o.output = "yaml"
	if err := runPlan(&out, o); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Errorf("-o yaml: %v", err)
	}
}
