package simulator_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestChargeback: each node's price goes to the namespaces of its pods by the node's scarcest
// resource — GPUs on GPU nodes (whole, time-sliced replicas, MIG slices by compute slices),
// the larger of CPU and memory on CPU nodes —, the rest to the pool's idle line, and the lines
// add up to the fleet's price to the cent.
func TestChargeback(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	price := func(typ api.InstanceTypeName, ct api.CapacityType) float64 {
		p, ok := cat.Price(api.Offering{InstanceType: typ, Zone: "us-east-1a", CapacityType: ct})
		if !ok {
			t.Fatalf("no price for %s %s", typ, ct)
		}
		return p
	}
	cpuNode := simtest.ManagedNode(cat, "cpu-1", "general", "m7i.2xlarge", "us-east-1a", api.OnDemand, dOld)
	whole := simtest.ManagedNode(cat, "g6-1", "gpu", "g6.12xlarge", "us-east-1a", api.Spot, dOld) // 4 L4
	sliced := simtest.ManagedNode(cat, "g6-2", "shared", "g6.xlarge", "us-east-1a", api.OnDemand, dOld)
	sliced.Labels[api.LabelGPUReplicas] = "4"
	sliced.Status.Allocatable[api.ResourceGPU] = *resource.NewQuantity(4, resource.DecimalSI)
	mig := simtest.ManagedNode(cat, "p4d-1", "mig", "p4d.24xlarge", "us-east-1a", api.OnDemand, dOld) // 8 A100
	delete(mig.Status.Allocatable, api.ResourceGPU)
	mig.Status.Allocatable["nvidia.com/mig-1g.5gb"] = *resource.NewQuantity(56, resource.DecimalSI)
	unknown := simtest.Node("other-1", "no-such-type", "us-east-1a", simtest.Resources("cpu", "4", "memory", "8Gi"))

	cpuAlloc := float64(cpuNode.Status.Allocatable.Cpu().MilliValue())
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode, whole, sliced, mig, unknown}, Pods: []*corev1.Pod{
		simtest.Pod("web-1").Namespace("web").CPU("2").Mem("1Gi").On("cpu-1").Obj(),
		simtest.Pod("batch-1").Namespace("batch").CPU("1").Mem("1Gi").On("cpu-1").Obj(),
		simtest.Pod("llm-1").Namespace("llm").CPU("4").Mem("8Gi").GPU(2).On("g6-1").Obj(),
		simtest.Pod("logs-1").Namespace("web").CPU("1").On("g6-1").Obj(), // CPU only on a GPU node: pays nothing there
		simtest.Pod("embed-1").Namespace("llm").CPU("1").GPU(1).On("g6-2").Obj(),
		simtest.Pod("notebook-1").Namespace("research").Req("nvidia.com/mig-1g.5gb", "3").On("p4d-1").Obj(),
		simtest.Pod("other-1").Namespace("web").CPU("1").On("other-1").Obj(),
	}}
	r, err := simulator.Chargeback(snap, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	pCPU, pWhole, pSliced, pMIG := price("m7i.2xlarge", api.OnDemand), price("g6.12xlarge", api.Spot), price("g6.xlarge", api.OnDemand), price("p4d.24xlarge", api.OnDemand)
	want := map[string]float64{
		"web/general/on-demand":    pCPU * 2000 / cpuAlloc,
		"batch/general/on-demand":  pCPU * 1000 / cpuAlloc,
		"(idle)/general/on-demand": pCPU * (1 - 3000/cpuAlloc),
		"llm/gpu/spot":             pWhole * 2 / 4,
		"(idle)/gpu/spot":          pWhole * 2 / 4,
		"llm/shared/on-demand":     pSliced / 4,
		"(idle)/shared/on-demand":  pSliced * 3 / 4,
		"research/mig/on-demand":   pMIG * 3.0 / 7 / 8,
		"(idle)/mig/on-demand":     pMIG * (1 - 3.0/7/8),
	}
	got := map[string]float64{}
	sum := 0.0
	for _, l := range r.Lines {
		ns := l.Namespace
		if l.Idle {
			ns = api.IdleNamespace
		}
		got[ns+"/"+l.Pool+"/"+string(l.CapacityType)] = l.CostPerHour
		sum += l.CostPerHour
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-9 {
			t.Errorf("%s: $%.6f/h, want $%.6f/h", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("lines %v, want the keys of %v", got, want)
	}
	fleet := pCPU + pWhole + pSliced + pMIG
	if math.Round(sum*100) != math.Round(fleet*100) || math.Abs(r.CostPerHour-fleet) > 1e-9 || r.Nodes != 4 {
		t.Errorf("lines add up to $%.4f/h, report says $%.4f/h over %d nodes; the fleet costs $%.4f/h over 4", sum, r.CostPerHour, r.Nodes, fleet)
	}
	if len(r.Unpriced) != 1 || r.Unpriced[0] != "other-1" {
		t.Errorf("unpriced %v, want [other-1]", r.Unpriced)
	}
	var csvOut, table bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || len(rows) != len(r.Lines)+1 || rows[0][0] != "namespace" {
		t.Errorf("CSV: %d rows (%v), want a header and %d lines", len(rows), err, len(r.Lines))
	}
	if err := r.WriteTable(&table); err != nil || !strings.Contains(table.String(), "(idle)") || !strings.Contains(table.String(), "research") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
}

// TestChargebackOvercommitted: pods requesting more than a node has share its whole price and
// leave no idle line.
func TestChargebackOvercommitted(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	n := simtest.ManagedNode(cat, "cpu-1", "general", "m7i.large", "us-east-1a", api.OnDemand, dOld)
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{n}, Pods: []*corev1.Pod{
		simtest.Pod("a").Namespace("a").CPU("2").On("cpu-1").Obj(),
		simtest.Pod("b").Namespace("b").CPU("2").On("cpu-1").Obj(),
	}}
	r, err := simulator.Chargeback(snap, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.IdlePerHour != 0 || len(r.Lines) != 2 || math.Abs(r.Lines[0].CostPerHour-r.CostPerHour/2) > 1e-9 {
		t.Errorf("overcommitted node: %+v", r)
	}
	if _, err := simulator.Chargeback(nil, cat, nil); err == nil {
		t.Error("a report without a snapshot")
	}
}

// TestChargebackTeams: with a policy that has teams, each namespace line carries its team (by
// name or by the Namespace's labels), the team totals sum their lines, namespaces in no team are
// under "", and teams plus idle add up to the fleet.
func TestChargebackTeams(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cpuNode := simtest.ManagedNode(cat, "cpu-1", "general", "m7i.2xlarge", "us-east-1a", api.OnDemand, dOld)
	gpuNode := simtest.ManagedNode(cat, "g6-1", "gpu", "g6.12xlarge", "us-east-1a", api.Spot, dOld)
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{cpuNode, gpuNode},
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "research", Labels: map[string]string{"tiler.dev/team": "science"}}}},
		Pods: []*corev1.Pod{
			simtest.Pod("web-1").Namespace("web").CPU("2").On("cpu-1").Obj(),
			simtest.Pod("batch-1").Namespace("batch").CPU("1").On("cpu-1").Obj(),
			simtest.Pod("llm-1").Namespace("llm").CPU("1").GPU(1).On("g6-1").Obj(),
			simtest.Pod("nb-1").Namespace("research").CPU("1").GPU(2).On("g6-1").Obj(),
		}}
	pol := policy.Default()
	pol.Teams = []policy.Team{
		{Name: "serving", Namespaces: []string{"web", "llm"}},
		{Name: "science", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tiler.dev/team": "science"}}},
	}
	r, err := simulator.Chargeback(snap, cat, pol)
	if err != nil {
		t.Fatal(err)
	}
	wantTeam := map[string]string{"web": "serving", "llm": "serving", "research": "science", "batch": ""}
	sums := map[string]float64{}
	idle := 0.0
	for _, l := range r.Lines {
		if l.Idle {
			idle += l.CostPerHour
			continue
		}
		if l.Team != wantTeam[l.Namespace] {
			t.Errorf("namespace %s: team %q, want %q", l.Namespace, l.Team, wantTeam[l.Namespace])
		}
		sums[l.Team] += l.CostPerHour
	}
	if len(r.Teams) != 3 || r.Teams[0].Team != "science" || r.Teams[1].Team != "serving" || r.Teams[2].Team != "" {
		t.Fatalf("teams %+v, want science, serving, then no team", r.Teams)
	}
	total := idle
	for _, tc := range r.Teams {
		if math.Abs(tc.CostPerHour-sums[tc.Team]) > 1e-9 {
			t.Errorf("team %q: $%.6f/h, its lines $%.6f/h", tc.Team, tc.CostPerHour, sums[tc.Team])
		}
		total += tc.CostPerHour
	}
	if math.Round(total*100) != math.Round(r.CostPerHour*100) {
		t.Errorf("teams and idle add up to $%.4f/h, the fleet is $%.4f/h", total, r.CostPerHour)
	}
	var csvOut, table bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || rows[0][1] != "team" || len(rows) != len(r.Lines)+1 {
		t.Errorf("CSV %v (%v), want a team column", rows, err)
	}
	if err := r.WriteTable(&table); err != nil || !strings.Contains(table.String(), "TEAM") || !strings.Contains(table.String(), "serving") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
	// Without a policy the report has no teams and the CSV keeps its columns.
	if r, _ := simulator.Chargeback(snap, cat, nil); r.Teams != nil || r.Lines[0].Team != "" {
		t.Errorf("no policy: teams %+v", r.Teams)
	}
	// A namespace two teams claim is an error.
	pol.Teams[0].Namespaces = append(pol.Teams[0].Namespaces, "research")
	if _, err := simulator.Chargeback(snap, cat, pol); err == nil || !strings.Contains(err.Error(), `namespace "research" belongs to several teams`) {
		t.Errorf("namespace in two teams: %v", err)
	}
}
