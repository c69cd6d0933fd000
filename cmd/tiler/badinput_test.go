package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tiler-dev/tiler/api/catalog"
)

// execute runs a command with args as the binary does and returns its output and error.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

// badInputFiles writes the bad inputs of TestBadInput into dir and returns their paths by name.
func badInputFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	node := func(name string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `","labels":{"topology.kubernetes.io/zone":"us-east-1a"}},` +
			`"status":{"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}}`
	}
	list := func(name string) string {
		return "apiVersion: v1\nkind: List\nitems:\n- " + node(name) + "\nmetadata: {resourceVersion: \"\"}\n"
	}
	pod := func(resources string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {containers: [{name: c, resources: " + resources + "}]}\n"
	}
	const policyHead = "apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\n"
	hugeCatalog, _ := json.Marshal(catalog.Catalog{Name: "huge", Provider: "aws", Region: "us-east-1", Zones: []string{"us-east-1a"},
		Types: []catalog.InstanceType{{Name: "x.huge", VCPU: 1 << 62, MemoryMiB: 1024, Arch: "amd64",
			Offerings: []catalog.ZonePrice{{Zone: "us-east-1a", CapacityType: "on-demand", PricePerHour: 1}}}}})
	zeros := "ts,value\n"
	for i := 0; i < 400; i++ {
		zeros += strconv.Itoa(1700000000+300*i) + ",0\n"
	}
	files := map[string]string{
		"lists-appended.yaml":    list("a") + list("b"),
		"cpu-1e30.yaml":          pod("{requests: {cpu: 1e30}}"),
		"cpu-1Ei.yaml":           pod("{requests: {cpu: 1Ei}}"),
		"cpu-9e18.yaml":          pod("{requests: {cpu: 9e18}}"),
		"cpu-negative.yaml":      node("n1") + "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: hog, namespace: ml}\nspec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: -8}}}]}\n",
		"gpu-500m.yaml":          pod("{limits: {nvidia.com/gpu: 500m}}"),
		"node-twice.yaml":        node("n1") + "\n---\n" + list("n1"),
		"catalog-huge.json":      string(hugeCatalog),
		"policy-two-docs.yaml":   policyHead + "pools: [{name: a}]\n---\n" + policyHead + "pools: [{name: b}]\n",
		"policy-family.yaml":     policyHead + "pools: [{name: general, instanceFamilies: [m7i, m99z]}]\n",
		"policy-dup-key.yaml":    policyHead + "pools: [{name: a}]\npools: [{name: b}]\n",
		"policy-negative.yaml":   policyHead + "pools: [{name: a, limits: {maxVCPU: -1}}]\n",
		"empty.yaml":             "",
		"policy-budget.yaml":     policyHead + "pools: [{name: a, disruption: {budgets: [{nodes: \"0\", schedule: \"0 0 30 2 *\", duration: 1h}]}}]\n",
		"one-row.csv":            "timestamp,value\n1700000000,5\n",
		"stray-quote.csv":        "timestamp,value\n1700000000,5\n\"1700000060,6\n1700000120,7\n",
		"bad-cell.csv":           "timestamp,value\n1700000000,5\n1700000060,abc\n",
		"zeros.csv":              zeros,
		"trace.csv":              "",
		"pods-no-gpu.csv":        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,8000,30517,0,0\np1,32000,49152,0,0\n",
		"nodes-twice.csv":        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn0,64000,262144,2,P100\n",
		"expected-nan.csv":       "workload,sc_policy,alloc_pct_at_arrived_090,alloc_pct_at_arrived_100,alloc_pct_at_arrived_100_std,alloc_pct_at_arrived_130,alloc_pct_at_arrived_130_std,frag_pct_at_arrived_100,frag_pct_at_arrived_130\nx,06-FGD,NaN,1,1,1,1,1,1\n",
		"pods-bad-cell.csv":      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,lots,1,1,1000\n",
		"nodes-gpu-no-model.csv": "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,2\n",
	}
	trace, err := os.ReadFile("../../testdata/traces/tune/crane-dsp/input0.csv")
	if err != nil {
		t.Fatal(err)
	}
	files["trace.csv"] = string(trace)
	paths := map[string]string{}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

// TestBadInput runs every command on malformed and extreme inputs: each fails with an error that
// names the file, the object or column, and the field or cause — never a panic, a hang or a
// plausible wrong answer.
func TestBadInput(t *testing.T) {
	f := badInputFiles(t, t.TempDir())
	nodes := "../../" + benchDefaultNodes
	bench := func(nodes, pods, expected string) []string {
		return []string{"fgd", "--nodes", nodes, "--pods", pods, "--expected", expected, "--seeds", "42", "--policy", "bestfit"}
	}
	cases := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		want []string
	}{
		// tiler plan: the snapshot.
		{"Lists appended", newPlanCmd, []string{"-f", f["lists-appended.yaml"]}, []string{f["lists-appended.yaml"], "document 0", "duplicate key"}},
		{"cpu 1e30", newPlanCmd, []string{"-f", f["cpu-1e30.yaml"]}, []string{f["cpu-1e30.yaml"], "Pod/ml/p", "spec.containers[0].resources.requests.cpu", "too large"}},
		{"cpu 1Ei", newPlanCmd, []string{"-f", f["cpu-1Ei.yaml"]}, []string{"Pod/ml/p", "requests.cpu", "too large"}},
		{"cpu 9e18", newPlanCmd, []string{"-f", f["cpu-9e18.yaml"]}, []string{"Pod/ml/p", "requests.cpu", "too large"}},
		{"negative cpu of a bound pod", newPlanCmd, []string{"-f", f["cpu-negative.yaml"]}, []string{"Pod/ml/hog", "requests.cpu", "-8 must not be negative"}},
		{"500m GPU", newPlanCmd, []string{"-f", f["gpu-500m.yaml"]}, []string{"Pod/ml/p", "limits.nvidia.com/gpu", "500m is not a whole number"}},
		{"node twice", newPlanCmd, []string{"-f", f["node-twice.yaml"]}, []string{"document 1 item 0 (Node/n1)", "listed twice", "also document 0"}},
		{"empty policy", newPlanCmd, []string{"-f", f["empty.yaml"], "--policy", f["empty.yaml"]}, []string{f["empty.yaml"], "the document is empty"}},
		// tiler plan: the catalog and the policy.
		{"catalog 2^62 vCPU", newPlanCmd, []string{"-f", f["empty.yaml"], "--catalog", f["catalog-huge.json"]}, []string{f["catalog-huge.json"], "type x.huge: vcpu 4611686018427387904 must be in 1..65536"}},
		{"policy second document", newPlanCmd, []string{"-f", f["empty.yaml"], "--policy", f["policy-two-docs.yaml"]}, []string{f["policy-two-docs.yaml"], "a second YAML document"}},
		{"policy unknown family", newPlanCmd, []string{"-f", f["empty.yaml"], "--policy", f["policy-family.yaml"]}, []string{f["policy-family.yaml"], "pools[0] (general): instanceFamilies[1]", `"m99z"`}},
		{"policy duplicate key", newPlanCmd, []string{"-f", f["empty.yaml"], "--policy", f["policy-dup-key.yaml"]}, []string{f["policy-dup-key.yaml"], `key "pools" already set`}},
		{"policy negative limit", newPlanCmd, []string{"-f", f["empty.yaml"], "--policy", f["policy-negative.yaml"]}, []string{"pools[0]: limits.maxVCPU must not be negative"}},
		// tiler plan --disruption.
		{"disruption budget never opens", newPlanCmd, []string{"-f", f["empty.yaml"], "--disruption", "--policy", f["policy-budget.yaml"]}, []string{f["policy-budget.yaml"], `pools[0].disruption.budgets[0].schedule: "0 0 30 2 *" never fires`}},
		{"disruption --now", newPlanCmd, []string{"-f", f["empty.yaml"], "--disruption", "--now", "tomorrow"}, []string{`--now "tomorrow"`}},
		{"disruption on a bad snapshot", newPlanCmd, []string{"-f", f["cpu-negative.yaml"], "--disruption"}, []string{f["cpu-negative.yaml"], "Pod/ml/hog", "-8 must not be negative"}},
		// tiler catalog.
		{"embedded catalog of another region", newCatalogCmd, []string{"--region", "us-west-2"}, []string{"--region us-west-2", "catalog aws-us-east-1 is of region us-east-1", "--catalog"}},
		{"unknown region", newCatalogCmd, []string{"--region", "mars-north-9"}, []string{"--region mars-north-9", "embedded catalogs"}},
		{"GCP region for AWS", newCatalogCmd, []string{"--cloud", "aws", "--region", "us-central1"}, []string{`--region "us-central1" is not an AWS region name`}},
		{"AWS region for GCP", newCatalogCmd, []string{"--cloud", "gcp", "--project", "p", "--region", "us-east-1"}, []string{`--region "us-east-1" is not a GCP region name`}},
		// tiler forecast.
		{"series shorter than the horizon", newForecastCmd, []string{"backtest", "--csv", f["one-row.csv"], "--horizon", "1h"}, []string{f["one-row.csv"], "spans 1m0s (1 points", "--horizon 1h0m0s"}},
		{"margin NaN", newForecastCmd, []string{"backtest", "--csv", f["trace.csv"], "--margin", "NaN"}, []string{"--margin NaN: must be a quantile in [0.5, 1)"}},
		{"margin Inf, replay", newForecastCmd, []string{"replay", "--csv", f["trace.csv"], "--per-gpu", "6", "--margin", "Inf"}, []string{"--margin +Inf"}},
		{"stray quote", newForecastCmd, []string{"backtest", "--csv", f["stray-quote.csv"]}, []string{f["stray-quote.csv"], "line 3", "breaks on line 4"}},
		{"cell names its column", newForecastCmd, []string{"backtest", "--csv", f["bad-cell.csv"]}, []string{f["bad-cell.csv"], `line 3: column "value": "abc"`}},
		{"per-gpu Inf", newForecastCmd, []string{"replay", "--csv", f["trace.csv"], "--per-gpu", "Inf"}, []string{"--per-gpu +Inf"}},
		{"NaN result in JSON", newForecastCmd, []string{"backtest", "--csv", f["zeros.csv"], "--horizon", "1h", "-o", "json"}, []string{"the result's wape is NaN", "-o text"}},
		// tiler bench fgd.
		{"pods without GPU demand", newBenchCmd, bench(nodes, f["pods-no-gpu.csv"], ""), []string{"pods-no-gpu", "no pod asks for a GPU"}},
		{"node listed twice", newBenchCmd, bench(f["nodes-twice.csv"], f["pods-no-gpu.csv"], ""), []string{f["nodes-twice.csv"], "line 3", `node "n0" is listed twice`}},
		{"GPU node without model", newBenchCmd, bench(f["nodes-gpu-no-model.csv"], f["pods-no-gpu.csv"], ""), []string{f["nodes-gpu-no-model.csv"], "(model)"}},
		{"pod cell", newBenchCmd, bench(nodes, f["pods-bad-cell.csv"], ""), []string{f["pods-bad-cell.csv"], "line 2", "(cpu_milli)", `"lots" is not an integer`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := execute(t, c.cmd(), c.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestStreamsReadWhole: two JSON nodes back to back are two nodes (the second was lost and the
// plan bought a node for what it would have held).
func TestStreamsReadWhole(t *testing.T) {
	dir := t.TempDir()
	node := func(name string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `","labels":{"topology.kubernetes.io/zone":"us-east-1a"}},` +
			`"status":{"allocatable":{"cpu":"2","memory":"8Gi","pods":"110"}}}`
	}
	pods := ""
	for _, n := range []string{"a", "b"} {
		pods += `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + n + `","namespace":"ml"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1500m"}}}]}}`
	}
	p := filepath.Join(dir, "stream.json")
	if err := os.WriteFile(p, []byte(node("n1")+node("n2")+pods), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, newPlanCmd(), "-f", p, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		NewNodes      []json.RawMessage `json:"newNodes"`
		ExistingNodes []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) != 0 || len(plan.ExistingNodes) != 2 {
		t.Errorf("%d new nodes, %d existing nodes used; want 0 and 2:\n%s", len(plan.NewNodes), len(plan.ExistingNodes), out)
	}
}

// TestBenchFGDFiveColumns: the published five-column variant of the trace runs.
func TestBenchFGDFiveColumns(t *testing.T) {
	in, err := os.ReadFile("../../" + benchDefaultPods)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(in)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var five bytes.Buffer
	w := csv.NewWriter(&five)
	for _, r := range rows {
		_ = w.Write(r[:5])
	}
	w.Flush()
	if !strings.HasPrefix(five.String(), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n") {
		t.Fatalf("header %q", strings.SplitN(five.String(), "\n", 2)[0])
	}
	p := filepath.Join(t.TempDir(), "openb_pod_list_default.csv")
	if err := os.WriteFile(p, five.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, newBenchCmd(), "fgd", "--nodes", "../../"+benchDefaultNodes, "--pods", p, "--expected", "", "--seeds", "42", "--policy", "bestfit", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r benchFGDResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.AllocAt130 < 90 {
		t.Errorf("alloc at 130 %% = %.2f", r.AllocAt130)
	}
}
