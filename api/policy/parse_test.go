package policy

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
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
		"unknown-field.bad.yaml":                       `unknown field "pools[0].instanceFamily"`,
		"capacity-type.bad.yaml":                       `pools[0]: capacityTypes[0] "reserved" must be spot or on-demand`,
		"negative-limit.bad.yaml":                      "pools[0]: limits.maxNodes must not be negative (omit it for no limit)",
		"duplicate-pool.bad.yaml":                      `pools[1].name "a" is used twice`,
		"bad-taint.bad.yaml":                           `pools[0]: taints[0]: effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute`,
		"replicas-without-sharing.bad.yaml":            `pools[0]: gpu.replicas needs sharing time-slicing or mps`,
		"gpu-driver.bad.yaml":                          `pools[0]: gpu.driver "nvidia" must be device-plugin or dra`,
		"gpu-driver-sharing.bad.yaml":                  `pools[0]: gpu.driver dra needs sharing exclusive or dynamic-mig, not "time-slicing"`,
		"gpu-driver-consumable.bad.yaml":               `pools[0]: gpu.driver device-plugin cannot serve consumableMemory or dynamic-mig sharing`,
		"configmap-missing-key.bad.yaml":               "data.policy.yaml is missing",
		"wrong-kind.bad.yaml":                          `kind must be CostPolicy, not "CostPolice"`,
		"forecast-missing-query.bad.yaml":              "policy: forecasts[0].loadQuery: must be set",
		"forecast-unknown-field.bad.yaml":              `unknown field "forecasts[0].loadQuerry"`,
		"forecast-template.bad.yaml":                   `forecasts[0].workload.template: unknown field "spec.containerz"`,
		"forecast-template-name.bad.yaml":              "forecasts[0].workload.template.metadata.name: must be set",
		"forecast-duplicate.bad.yaml":                  "forecasts[1].workload: Deployment/llm/chat is already forecast by forecasts[0]",
		"forecast-time-zone.bad.yaml":                  `forecasts[0].timeZone: "CET+1" is not an IANA time zone name`,
		"disruption-consolidation.bad.yaml":            `pools[1].disruption.consolidation: "sometimes" must be whenEmpty, whenUnderutilized or never`,
		"disruption-budget-nodes.bad.yaml":             `pools[1].disruption.budgets[0].nodes: "ten" must be a number of nodes ("3") or a percentage ("10%")`,
		"disruption-budget-reason.bad.yaml":            `pools[0].disruption.budgets[1].reasons[0]: "Unhealthy" must be Empty, Underutilized, Drifted or Expired: repairs have their own budget (disruption.repair.budget)`,
		"disruption-expire-after.bad.yaml":             "pools[1].disruption.expireAfter: 0s must be positive",
		"disruption-termination-grace-period.bad.yaml": "pools[0].disruption.terminationGracePeriod: -1h0m0s must be positive",
		"disruption-repair-budget.bad.yaml":            `pools[0].disruption.repair.budget: "150%" is more than 100%`,
		"disruption-repair-max-unhealthy.bad.yaml":     `pools[0].disruption.repair.maxUnhealthy: "a few" must be a number of nodes ("3") or a percentage ("10%")`,
		"disruption-repair-condition.bad.yaml":         `pools[0].disruption.repair.conditions[1].status: "Broken" must be True, False or Unknown`,
		"disruption-repair-unknown-field.bad.yaml":     `unknown field "pools[0].disruption.repair.notReadyGrace"`,
		"disruption-schedule-duration.bad.yaml":        "pools[0].disruption.budgets[1].schedule: schedule and duration must be set together",
		"disruption-schedule.bad.yaml":                 `pools[0].disruption.budgets[0].schedule: "61 * * * *": end of range (61) above maximum (59)`,
		"disruption-threshold.bad.yaml":                "pools[0].disruption.savingsThreshold: 1.5 must be between 0 and 1",
		"disruption-unknown-field.bad.yaml":            `unknown field "pools[0].disruption.consolidateAfterr"`,
		"team-namespace-twice.bad.yaml":                `teams[1].namespaces[1] "chat" already belongs to team "a" (teams[0])`,
		"team-unknown-pool.bad.yaml":                   `teams[0].pools[0] "gpu" is not a pool of the policy`,
		"team-negative-gpus.bad.yaml":                  "teams[0].limits.gpus must not be negative",
		"team-mig-profile.bad.yaml":                    `teams[0].limits.migProfiles: "big-slice" is not a MIG profile`,
		"team-gpu-model.bad.yaml":                      `teams[0].limits.gpusByModel: "H100 SXM" is not a GPU model as the label tiler.dev/gpu-model carries it`,
		"team-unknown-field.bad.yaml":                  `unknown field "teams[0].limits.maxGPUs"`,
		"team-no-namespaces.bad.yaml":                  `teams[0].namespaces: team "a" needs namespaces or a namespaceSelector`,
		"team-selector.bad.yaml":                       `teams[0].namespaceSelector: "Within" is not a valid label selector operator`,
		"disruption-consolidate-after.bad.yaml":        `cannot unmarshal duration "ten minutes" (want e.g. 10m, 1h30m) into Go struct field Disruption.pools.disruption.consolidateAfter`,
		"soft-premium.bad.yaml":                        "policy: softConstraints.maxPremiumPercent 150 must be between 0 and 100",
		"soft-unknown-field.bad.yaml":                  `unknown field "softConstraints.maxPremium"`,
		"second-document.bad.yaml":                     "policy: a second YAML document",
		"duplicate-key.bad.yaml":                       `key "limits" already set in map`,
		"forecast-template-negative.bad.yaml":          "forecasts[0].workload.template: spec.containers[0].resources.requests.cpu: -2 must not be negative",
		"priority-range.bad.yaml":                      "policy: pools[0]: minPriority 1000 is above maxPriority 100: no pod could be bought for in the pool",
		"priority-class-name.bad.yaml":                 `policy: pools[0]: priorityClassNames[1] "Research_Low" is not a PriorityClass name`,
		"priority-type.bad.yaml":                       "pools.maxPriority",
	}
	for f, w := range mixBadPolicies {
		want[f] = w
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
		{"team price limit too large", head + "pools: [{name: a}]\nteams: [{name: t, namespaces: [ml], limits: {maxPricePerHour: 1e300}}]\n",
			"teams[0].limits.maxPricePerHour 1e+300 must be at most 1e+09"},
		{"minNodes above a zero maxNodes", head + "pools: [{name: a, minNodes: 1, limits: {maxNodes: 0}}]\n", "minNodes 1 exceeds limits.maxNodes 0"},
		{"budget nodes overflow", head + "pools: [{name: a, disruption: {budgets: [{nodes: \"99999999999999999999\"}]}}]\n",
			`pools[0].disruption.budgets[0].nodes: "99999999999999999999" is too large a number of nodes`},
		{"budget percentage overflow", head + "pools: [{name: a, disruption: {budgets: [{nodes: \"99999999999999999999%\"}]}}]\n",
			`pools[0].disruption.budgets[0].nodes: "99999999999999999999%" is more than 100%`},
		{"schedule that never fires", head + "pools: [{name: a, disruption: {budgets: [{nodes: \"0\", schedule: \"0 0 30 2 *\", duration: 1h}]}}]\n",
			`pools[0].disruption.budgets[0].schedule: "0 0 30 2 *" never fires`},
		{"savings threshold NaN", head + "pools: [{name: a, disruption: {savingsThreshold: \"NaN%\"}}]\n",
			"pools[0].disruption.savingsThreshold: NaN must be between 0 and 1"},
		{"negative consolidateAfter", head + "pools: [{name: a, disruption: {consolidateAfter: -1m}}]\n",
			"pools[0].disruption.consolidateAfter: -1m0s must not be negative"},
		{"negative spotToSpotMinOfferings", head + "pools: [{name: a, disruption: {spotToSpotMinOfferings: -1}}]\n",
			"pools[0].disruption.spotToSpotMinOfferings: -1 must not be negative"},
		{"zero budget duration", head + "pools: [{name: a, disruption: {budgets: [{nodes: \"0\", schedule: \"@daily\", duration: 0s}]}}]\n",
			"pools[0].disruption.budgets[0].duration: 0s must be positive"},
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

func TestDisruptionDefaultsAndGoodFile(t *testing.T) {
	b, err := os.ReadFile("../../testdata/config/policy-disruption.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	dev, gpu, batch, pinned := &p.Pools[0], &p.Pools[1], &p.Pools[2], &p.Pools[3]
	if got := dev.SavingsThresholdOf(); math.Abs(got-0.05) > 1e-12 {
		t.Errorf("dev threshold %g, want 0.05 from \"5%%\"", got)
	}
	if dev.ConsolidateAfterOf(false) != 3*time.Minute || gpu.ConsolidateAfterOf(true) != 15*time.Minute || batch.ConsolidateAfterOf(false) != 0 {
		t.Error("consolidateAfter not read")
	}
	if gpu.SpotToSpotMinOfferingsOf() != 8 || dev.SpotToSpotMinOfferingsOf() != DefaultSpotToSpotMinOfferings {
		t.Error("spotToSpotMinOfferings not read or defaulted")
	}
	if batch.ConsolidationOf() != WhenEmpty || pinned.ConsolidationOf() != Never || dev.ConsolidationOf() != WhenUnderutilized {
		t.Error("consolidation not read")
	}
	var none Pool
	if none.ConsolidationOf() != WhenUnderutilized || none.ConsolidateAfterOf(true) != DefaultConsolidateAfterGPU ||
		none.ConsolidateAfterOf(false) != DefaultConsolidateAfter || none.SavingsThresholdOf() != DefaultSavingsThreshold {
		t.Error("defaults of a pool without disruption settings")
	}
}

// TestAllowedDisruptions: the most restrictive active budget for the reason, percentages rounded
// up, schedules in UTC, the 10 % default.
func TestAllowedDisruptions(t *testing.T) {
	b, _ := os.ReadFile("../../testdata/config/policy-disruption.good.yaml")
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	gpu := &p.Pools[1] // 20 %; 0 weekdays 09:00–17:00 UTC; 1 for Underutilized
	monday := func(h, m int) time.Time { return time.Date(2026, 3, 2, h, m, 0, 0, time.UTC) }
	cases := []struct {
		name   string
		pool   *Pool
		now    time.Time
		reason api.DisruptionReason
		nodes  int
		want   int
	}{
		{"window open", gpu, monday(10, 0), api.ReasonEmpty, 20, 0},
		{"window opens at 9", gpu, monday(9, 0), api.ReasonEmpty, 20, 0},
		{"window closed at 17", gpu, monday(17, 0), api.ReasonEmpty, 20, 4},
		{"before the window", gpu, monday(8, 59), api.ReasonEmpty, 20, 4},
		{"in another zone it is 10:00, in UTC 08:00", gpu, time.Date(2026, 3, 2, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600)), api.ReasonEmpty, 20, 4},
		{"saturday", gpu, time.Date(2026, 3, 7, 10, 0, 0, 0, time.UTC), api.ReasonEmpty, 20, 4},
		{"reason-specific budget", gpu, monday(20, 0), api.ReasonUnderutilized, 20, 1},
		{"20% of 3 rounds up", gpu, monday(20, 0), api.ReasonEmpty, 3, 1},
		{"default 10% of 25", &p.Pools[0], monday(10, 0), api.ReasonUnderutilized, 25, 3},
		{"default of an empty pool", &p.Pools[0], monday(10, 0), api.ReasonEmpty, 0, 0},
	}
	for _, c := range cases {
		if got := c.pool.AllowedDisruptions(c.now, c.reason, c.nodes); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	only := Pool{Disruption: &Disruption{Budgets: []DisruptionBudget{{Nodes: "2", Reasons: []api.DisruptionReason{api.ReasonEmpty}}}}}
	if got := only.AllowedDisruptions(monday(0, 0), api.ReasonUnderutilized, 10); got != math.MaxInt {
		t.Errorf("no budget for the reason: %d, want unlimited", got)
	}
}
