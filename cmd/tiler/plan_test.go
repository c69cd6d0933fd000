package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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

// TestPlanTeams: on the teams example, tiler plan reports the team over its GPU limit and the
// namespace over its quota with the new reasons, buys for neither, and ignores the gated pod.
func TestPlanTeams(t *testing.T) {
	o := planOptions{file: "../../testdata/snapshots/teams.yaml", catalog: "aws-us-east-1",
		policy: "../../testdata/config/policy-teams.good.yaml", output: "table", seed: "what-if"}
	var out bytes.Buffer
	if err := runPlan(&out, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pods placed: 3, unschedulable: 2",
		"lab/sweep-0        TeamLimitExceeded  team research is at its limit limits.gpus 8: 8 GPUs in use or planned, the pod requests 4",
		"chat/serve-1       QuotaExceeded      namespace chat's ResourceQuota gpus: nvidia.com/gpu requested 1 with 1 in use exceeds hard 1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "queued-0") {
		t.Errorf("the gated pod is in the plan:\n%s", out.String())
	}
	o.output = "json"
	out.Reset()
	if err := runPlan(&out, o); err != nil {
		t.Fatal(err)
	}
	var plan api.Plan
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	codes := map[string]api.ReasonCode{}
	for _, u := range plan.Unschedulable {
		codes[u.Pod] = u.Code
	}
	if codes["lab/sweep-0"] != api.TeamLimitExceeded || codes["chat/serve-1"] != api.QuotaExceeded || len(codes) != 2 {
		t.Errorf("JSON reasons %v", codes)
	}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			if p == "lab/sweep-0" || p == "chat/serve-1" || p == "lab/queued-0" {
				t.Errorf("bought %s for %s", n.Name, p)
			}
		}
	}
}

// TestPlanDisruptionImages: --images gives the drift the cloud would report, which the snapshot
// does not show: dev-4, booted from an image its pool no longer launches, is removed as Drifted
// (it takes the dev pool's budget, so dev-1 is no longer consolidated). Bad files name the node
// or the field.
func TestPlanDisruptionImages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := disruptionFlags("table")
	o.images = write("images.yaml", "dev-4: {booted: ami-0a, now: ami-0b}\n")
	var out bytes.Buffer
	if err := runPlan(&out, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Delete  Drifted        dev    dev-4",
		"drifted: booted from image ami-0a; its nodes now boot from ami-0b",
		"dev-1            dev     Budget",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	for _, c := range []struct{ file, body, want string }{
		{"unknown-node.yaml", "dev-9: {booted: a, now: b}\n", `node "dev-9" is not in the snapshot`},
		{"unknown-field.yaml", "dev-4: {image: a}\n", `unknown field "image"`},
		{"empty-entry.yaml", "dev-4: {}\n", `node "dev-4": set booted and now, or settings and settingsNow`},
	} {
		o.images = write(c.file, c.body)
		if err := runPlan(&out, o); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--images") {
			t.Errorf("%s: got %v, want an --images error with %q", c.file, err, c.want)
		}
	}
	o = planOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", output: "table", images: o.images}
	if err := runPlan(&out, o); err == nil || !strings.Contains(err.Error(), "with --disruption only") {
		t.Errorf("--images without --disruption: got %v", err)
	}
}
