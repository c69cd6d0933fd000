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
		"unknown-field.bad.yaml":                `unknown field "pools[0].instanceFamily"`,
		"capacity-type.bad.yaml":                `pools[0]: capacityTypes[0] "reserved" must be spot or on-demand`,
		"negative-limit.bad.yaml":               "pools[0]: limits.maxNodes must not be negative",
		"duplicate-pool.bad.yaml":               `pools[1].name "a" is used twice`,
		"bad-taint.bad.yaml":                    `pools[0]: taints[0]: effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute`,
		"replicas-without-sharing.bad.yaml":     `pools[0]: gpu.replicas needs sharing time-slicing or mps`,
		"configmap-missing-key.bad.yaml":        "data.policy.yaml is missing",
		"wrong-kind.bad.yaml":                   `kind must be CostPolicy, not "CostPolice"`,
		"forecast-missing-query.bad.yaml":       "policy: forecasts[0].loadQuery: must be set",
		"forecast-unknown-field.bad.yaml":       `unknown field "forecasts[0].loadQuerry"`,
		"forecast-template.bad.yaml":            `forecasts[0].workload.template: unknown field "spec.containerz"`,
		"forecast-template-name.bad.yaml":       "forecasts[0].workload.template.metadata.name: must be set",
		"forecast-duplicate.bad.yaml":           "forecasts[1].workload: Deployment/llm/chat is already forecast by forecasts[0]",
		"forecast-time-zone.bad.yaml":           `forecasts[0].timeZone: "CET+1" is not an IANA time zone name`,
		"disruption-consolidation.bad.yaml":     `pools[1].disruption.consolidation: "sometimes" must be whenEmpty, whenUnderutilized or never`,
		"disruption-budget-nodes.bad.yaml":      `pools[1].disruption.budgets[0].nodes: "ten" must be a number of nodes ("3") or a percentage ("10%")`,
		"disruption-budget-reason.bad.yaml":     `pools[0].disruption.budgets[0].reasons[0]: "Drifted" must be Empty or Underutilized`,
		"disruption-schedule-duration.bad.yaml": "pools[0].disruption.budgets[1].schedule: schedule and duration must be set together",
		"disruption-schedule.bad.yaml":          `pools[0].disruption.budgets[0].schedule: "61 * * * *": end of range (61) above maximum (59)`,
		"disruption-threshold.bad.yaml":         "pools[0].disruption.savingsThreshold: 1.5 must be between 0 and 1",
		"disruption-unknown-field.bad.yaml":     `unknown field "pools[0].disruption.consolidateAfterr"`,
		"disruption-consolidate-after.bad.yaml": `cannot unmarshal duration "ten minutes" (want e.g. 10m, 1h30m) into Go struct field Disruption.pools.disruption.consolidateAfter`,
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
