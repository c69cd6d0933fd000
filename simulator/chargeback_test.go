package simulator_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
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
	r, err := simulator.Chargeback(snap, cat)
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
	r, err := simulator.Chargeback(snap, cat)
	if err != nil {
		t.Fatal(err)
	}
	if r.IdlePerHour != 0 || len(r.Lines) != 2 || math.Abs(r.Lines[0].CostPerHour-r.CostPerHour/2) > 1e-9 {
		t.Errorf("overcommitted node: %+v", r)
	}
	if _, err := simulator.Chargeback(nil, cat); err == nil {
		t.Error("a report without a snapshot")
	}
}
