package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoodPolicies(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/config/*.good.yaml")
	if len(files) == 0 {
		t.Fatal("no good policy files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestBadPolicies: every bad file fails with an error that names the field.
func TestBadPolicies(t *testing.T) {
	want := map[string]string{
		"unknown-field.bad.yaml":              `unknown field "pools[0].instanceFamily"`,
		"capacity-type.bad.yaml":              `pools[0]: capacityTypes[0] "reserved" must be spot or on-demand`,
		"negative-limit.bad.yaml":             "pools[0]: limits.maxNodes must not be negative (omit it for no limit)",
		"duplicate-pool.bad.yaml":             `pools[1].name "a" is used twice`,
		"bad-taint.bad.yaml":                  `pools[0]: taints[0]: effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute`,
		"replicas-without-sharing.bad.yaml":   `pools[0]: gpu.replicas needs sharing time-slicing or mps`,
		"configmap-missing-key.bad.yaml":      "data.policy.yaml is missing",
		"wrong-kind.bad.yaml":                 `kind must be CostPolicy, not "CostPolice"`,
		"forecast-missing-query.bad.yaml":     "policy: forecasts[0].loadQuery: must be set",
		"forecast-unknown-field.bad.yaml":     `unknown field "forecasts[0].loadQuerry"`,
		"forecast-template.bad.yaml":          `forecasts[0].workload.template: unknown field "spec.containerz"`,
		"forecast-template-name.bad.yaml":     "forecasts[0].workload.template.metadata.name: must be set",
		"forecast-duplicate.bad.yaml":         "forecasts[1].workload: Deployment/llm/chat is already forecast by forecasts[0]",
		"forecast-time-zone.bad.yaml":         `forecasts[0].timeZone: "CET+1" is not an IANA time zone name`,
		"second-document.bad.yaml":            "policy: a second YAML document",
		"duplicate-key.bad.yaml":              `key "limits" already set in map`,
		"forecast-template-negative.bad.yaml": "forecasts[0].workload.template: spec.containers[0].resources.requests.cpu: -2 must not be negative",
	}
	files, _ := filepath.Glob("../../testdata/config/*.bad.yaml")
	if len(files) != len(want) {
		t.Fatalf("%d bad files, %d expectations", len(files), len(want))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(b)
		w := want[filepath.Base(f)]
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %v, want it to contain %q", filepath.Base(f), err, w)
		}
	}
}

// TestLimitsSemantics: a written 0 is kept apart from an absent limit, for every limit.
func TestLimitsSemantics(t *testing.T) {
	p, err := Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: a\n  limits: {maxNodes: 0, maxVCPU: 0, maxGPUs: 0, maxPricePerHour: 0}\n- name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Pools[0].Limits, p.Pools[1].Limits
	if a.MaxNodes == nil || *a.MaxNodes != 0 || a.MaxVCPU == nil || a.MaxGPUs == nil || a.MaxPricePerHour == nil || *a.MaxPricePerHour != 0 {
		t.Errorf("written zeros lost: %+v", a)
	}
	if b.MaxNodes != nil || b.MaxVCPU != nil || b.MaxGPUs != nil || b.MaxPricePerHour != nil {
		t.Errorf("absent limits are not nil: %+v", b)
	}
}

func TestParseBadInput(t *testing.T) {
	const head = "apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\n"
	cases := []struct{ name, doc, want string }{
		{"two JSON objects", `{"apiVersion":"tiler.dev/v1alpha1","kind":"CostPolicy","pools":[{"name":"a"}]}{"apiVersion":"tiler.dev/v1alpha1","kind":"CostPolicy","pools":[{"name":"b"}]}`, "content after the first document"},
		{"document after ...", head + "pools: [{name: a}]\n...\n" + head + "pools: [{name: b}]\n", "content after the first document"},
		{"second ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {policy.yaml: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: q}\n", "a second YAML document"},
		{"duplicate key in the ConfigMap's policy", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p, namespace: tiler}\ndata:\n  policy.yaml: |\n    " +
			"apiVersion: tiler.dev/v1alpha1\n    kind: CostPolicy\n    pools: [{name: a}]\n    pools: [{name: b}]\n", `ConfigMap tiler/p: data.policy.yaml: policy: yaml: unmarshal errors`},
		{"price limit too large", head + "pools: [{name: a, limits: {maxPricePerHour: 1e300}}]\n", "pools[0]: limits.maxPricePerHour 1e+300 must be in 0..1e+09"},
		{"budget too large", head + "budget: {maxPricePerHour: 1e300}\npools: [{name: a}]\n", "budget.maxPricePerHour 1e+300 must be positive and at most 1e+09"},
		{"minNodes above a zero maxNodes", head + "pools: [{name: a, minNodes: 1, limits: {maxNodes: 0}}]\n", "minNodes 1 exceeds limits.maxNodes 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}
