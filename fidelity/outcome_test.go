package fidelity

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		planned, bound string
		boundNew, pre  bool
		want           Verdict
	}{
		{"n1", "n1", true, false, VerdictAgree},
		{"n1", "", false, false, VerdictNotBound},
		{"n1", "n2", true, false, VerdictMoved},
		{"", "", false, false, VerdictUnschedulable},
		{"", "n2", true, false, VerdictPessimistic},
		{"", "existing-0", false, false, VerdictUnschedulable},
		{"", "existing-0", false, true, VerdictPreBound},
	} {
		if got := verdict(c.planned, c.bound, c.boundNew, c.pre); got != c.want {
			t.Errorf("verdict(%q, %q, %t, %t) = %s, want %s", c.planned, c.bound, c.boundNew, c.pre, got, c.want)
		}
	}
}

func TestKinds(t *testing.T) {
	ts := &policy.CostPolicy{Pools: []policy.Pool{{Name: "gpu", GPU: &policy.GPUPolicy{Sharing: api.TimeSlicing, Replicas: 4}}}}
	for _, c := range []struct {
		pod  *corev1.Pod
		pol  *policy.CostPolicy
		want string
	}{
		{simtest.Pod("a").CPU("1").Obj(), nil, "plain"},
		{simtest.Pod("a").GPU(1).Obj(), nil, "gpu"},
		{simtest.Pod("a").GPU(1).Obj(), ts, "gpu-time-sliced"},
		{extended(simtest.Pod("a"), "nvidia.com/mig-1g.5gb", 1).Tolerate("nvidia.com/gpu").Obj(), nil, "mig"},
		{simtest.Pod("a").Label("app", "x").Spread(corev1.LabelTopologyZone, 1, true).
			Spread(corev1.LabelHostname, 1, false).Obj(), nil, "soft,zone-spread"},
		{simtest.Pod("a").PreferNode(10, corev1.LabelTopologyZone, "z").Obj(), nil, "soft"},
		{simtest.Pod("a").Label("app", "x").Spread(corev1.LabelHostname, 1, true).Tolerate("workload").Obj(), nil,
			"hostname-spread,toleration"},
		{simtest.Pod("a").AntiAffinity(corev1.LabelHostname, "x").AntiAffinity(corev1.LabelTopologyZone, "x").
			Affinity(corev1.LabelTopologyZone, "y").Obj(), nil, "anti-affinity,pod-affinity,zone-anti-affinity"},
		{simtest.Pod("a").NodeSelector("k", "v").Require("k", corev1.NodeSelectorOpIn, "v").Gang("g", 2, "zone").Obj(), nil,
			"gang,gang-zone,node-affinity,node-selector"},
	} {
		var got []string
		for _, k := range Kinds(c.pod, c.pol) {
			got = append(got, string(k))
		}
		if s := strings.Join(got, ","); s != c.want {
			t.Errorf("Kinds = %s, want %s", s, c.want)
		}
	}
}

func TestReport(t *testing.T) {
	var r Report
	r.Add(&Outcome{Scenario: "s", Mode: ModeOn, Pods: []PodOutcome{
		{Pod: "a", Kinds: []Kind{KindPlain}, Planned: "n1", Bound: "n1", BoundNew: true, Verdict: VerdictAgree},
		{Pod: "b", Kinds: []Kind{KindZoneSpread}, Planned: "n1", Bound: "n2", BoundNew: true, Verdict: VerdictMoved},
		{Pod: "c", Kinds: []Kind{KindZoneSpread}, Planned: "n2", Verdict: VerdictNotBound, Message: "0/3 nodes"},
		{Pod: "d", Kinds: []Kind{KindGang}, Reason: "GangIncomplete", Bound: "n2", BoundNew: true, Verdict: VerdictPessimistic},
	}, Notes: []string{"launch of planned node n3 (m7i.large) failed"}})
	all := r.Tally(ModeOn, KindAll)
	if all.Placed != 3 || all.NotBound != 1 || all.Moved != 1 || all.Unplaced != 1 || all.Pessimistic != 1 {
		t.Errorf("tally of all = %+v", all)
	}
	if z := r.Tally(ModeOn, KindZoneSpread); z.Placed != 2 || z.Moved != 1 || z.NotBound != 1 {
		t.Errorf("tally of zone-spread = %+v", z)
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 scenarios, 1 runs, 4 pending pods over all runs", "mode on (nominations and reservations)", "zone-spread",
		"1 (50.0%)", "s [on] not-bound c [zone-spread]: planned n2, bound nowhere (0/3 nodes)",
		"s [on] pessimistic d [gang]: planned nowhere (GangIncomplete), bound n2", "s [on] note: launch of planned node n3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
