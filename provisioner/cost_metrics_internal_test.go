package provisioner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// CostSeries reads the tiler_cost_dollars_per_hour series of the registry summed by their labels
// "team/pool/capacity_type/idle" (exported for the e2e tests of package provisioner_test).
func CostSeries(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	return costSeriesBy(t, reg, "team", "pool", "capacity_type", "idle")
}

// costSeriesBy reads the tiler_cost_dollars_per_hour series summed by the labels, joined by "/".
func costSeriesBy(t *testing.T, reg prometheus.Gatherer, labels ...string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "tiler_cost_dollars_per_hour" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			key := make([]string, len(labels))
			for i, name := range labels {
				key[i] = l[name]
			}
			out[strings.Join(key, "/")] += m.GetGauge().GetValue()
		}
	}
	return out
}

// TestCostMetrics: after a batch, the chargeback gauges name each team (a team selected by its
// Namespace's labels, which come from the State), the namespaces in none and the idle part of each
// pool, and add up to the price of the priced nodes — summed here from the catalog — to the cent.
// When a node goes, the series of its pool go with it.
func TestCostMetrics(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	cpuNode := simtest.ManagedNode(cat, "cpu-1", "general", "m7i.2xlarge", "us-east-1a", api.OnDemand, old)
	gpuNode := simtest.ManagedNode(cat, "g6-1", "gpu", "g6.12xlarge", "us-east-1a", api.Spot, old) // 4 L4
	unknown := simtest.Node("other-1", "no-such-type", "us-east-1a", simtest.Resources("cpu", "4", "memory", "8Gi"))
	pol := policy.Default()
	pol.Teams = []policy.Team{
		{Name: "serving", Namespaces: []string{"web", "llm"}},
		{Name: "science", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tiler.dev/team": "science"}}},
	}
	s := State{Now: now, Catalog: cat, Policy: pol,
		Nodes:      []*corev1.Node{cpuNode, gpuNode, unknown},
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "research", Labels: map[string]string{"tiler.dev/team": "science"}}}},
		Pods: []*corev1.Pod{
			simtest.Pod("web-1").Namespace("web").CPU("2").On("cpu-1").Obj(),
			simtest.Pod("batch-1").Namespace("batch").CPU("1").On("cpu-1").Obj(),
			simtest.Pod("llm-1").Namespace("llm").CPU("1").GPU(1).On("g6-1").Obj(),
			simtest.Pod("nb-1").Namespace("research").CPU("1").GPU(2).On("g6-1").Obj(),
			simtest.Pod("other-1").Namespace("web").CPU("1").On("other-1").Obj(),
		}}
	price := func(n *corev1.Node) float64 {
		p, ok := cat.Price(api.Offering{InstanceType: api.InstanceTypeName(n.Labels[corev1.LabelInstanceTypeStable]),
			Zone: n.Labels[corev1.LabelTopologyZone], CapacityType: api.CapacityType(n.Labels[api.LabelCapacityType])})
		if !ok {
			t.Fatalf("node %s: no catalog price", n.Name)
		}
		return p
	}
	cfg := DecideConfig{Config: DefaultConfig()}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	d := Decide(s, cfg, NewMemory())
	if d.ChargebackErr != nil {
		t.Fatal(d.ChargebackErr)
	}
	m.setCost(d.Chargeback)
	got := CostSeries(t, reg)
	fleet := price(cpuNode) + price(gpuNode)
	sum := 0.0
	for _, v := range got {
		sum += v
	}
	if math.Round(sum*100) != math.Round(fleet*100) {
		t.Errorf("the cost series add up to $%.4f/h, the fleet is $%.4f/h: %v", sum, fleet, got)
	}
	// g6.12xlarge: 4 GPUs, serving takes 1, science 2, one is idle.
	g := price(gpuNode)
	for k, want := range map[string]float64{"serving/gpu/spot/false": g / 4, "science/gpu/spot/false": g / 2, "/gpu/spot/true": g / 4} {
		if math.Abs(got[k]-want) > 1e-9 {
			t.Errorf("%s: $%.6f/h, want $%.6f/h (series %v)", k, got[k], want, got)
		}
	}
	for _, k := range []string{"serving/general/on-demand/false", api.NoTeam + "/general/on-demand/false", "/general/on-demand/true"} {
		if got[k] <= 0 {
			t.Errorf("no series %s: %v", k, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d series, want 6: %v", len(got), got)
	}
	// By namespace: each namespace's share, the idle lines with none.
	byNS := costSeriesBy(t, reg, "namespace", "team", "idle")
	for k, want := range map[string]float64{"llm/serving/false": g / 4, "research/science/false": g / 2} {
		if math.Abs(byNS[k]-want) > 1e-9 {
			t.Errorf("%s: $%.6f/h, want $%.6f/h (series %v)", k, byNS[k], want, byNS)
		}
	}
	for _, k := range []string{"web/serving/false", "batch/" + api.NoTeam + "/false", "//true"} {
		if byNS[k] <= 0 {
			t.Errorf("no series %s: %v", k, byNS)
		}
	}

	// The GPU node and its pods are gone: so are the gpu pool's series.
	s.Nodes, s.Pods = []*corev1.Node{cpuNode, unknown}, s.Pods[:2]
	d = Decide(s, cfg, NewMemory())
	m.setCost(d.Chargeback)
	got = CostSeries(t, reg)
	sum = 0
	for k, v := range got {
		sum += v
		if k == "serving/gpu/spot/false" || k == "science/gpu/spot/false" || k == "/gpu/spot/true" {
			t.Errorf("series %s outlived its node", k)
		}
	}
	if math.Round(sum*100) != math.Round(price(cpuNode)*100) || len(got) != 3 {
		t.Errorf("after the GPU node went: %v, sum $%.4f/h, want 3 series adding up to $%.4f/h", got, sum, price(cpuNode))
	}
}
