package fgd

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// cutColumns keeps only the named columns of a CSV, in that order.
func cutColumns(t testing.TB, in []byte, keep ...string) []byte {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(in)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, h := range rows[0] {
		idx[h] = i
	}
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	for _, r := range rows {
		var rec []string
		for _, k := range keep {
			rec = append(rec, r[idx[k]])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return out.Bytes()
}

// TestParsePodsOptionalColumns: published variants of the trace lack gpu_spec and the times
// (name,cpu_milli,memory_mib,num_gpu,gpu_milli) or memory_mib; they read as the full file does,
// with the upstream converter's defaults.
func TestParsePodsOptionalColumns(t *testing.T) {
	full, err := os.ReadFile("../../testdata/alibaba-gpu-v2023/openb_pod_list_gpushare40.csv")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParsePods(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	five, err := ParsePods(bytes.NewReader(cutColumns(t, full, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")))
	if err != nil {
		t.Fatalf("five-column variant: %v", err)
	}
	if len(five) != len(want) {
		t.Fatalf("five-column variant: %d pods, want %d", len(five), len(want))
	}
	for i := range want {
		w := want[i]
		w.GPUModels = nil // no gpu_spec column: any model
		if fmt.Sprint(five[i]) != fmt.Sprint(w) {
			t.Fatalf("pod %d: %v, want %v", i, five[i], w)
		}
	}
	got, err := ParsePods(strings.NewReader("name,cpu_milli,num_gpu\np0,1000,2\np1,500,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].GPUMilli != gpushare.MilliPerGPU || got[0].MemoryMiB != 0 || got[1].GPUMilli != 0 {
		t.Errorf("defaults: %+v", got)
	}
}

func TestParseNodesOptionalModel(t *testing.T) {
	if _, err := ParseNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu\nn0,1000,1024,0\n")); err != nil {
		t.Errorf("CPU nodes without a model column: %v", err)
	}
	_, err := ParseNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu\nn0,1000,1024,2\n"))
	if err == nil || !strings.Contains(err.Error(), "(model): node with 2 GPUs has no GPU model") {
		t.Errorf("GPU node without a model column: %v", err)
	}
}

func TestParseBadInput(t *testing.T) {
	cases := []struct {
		name  string
		nodes bool
		in    string
		want  string
	}{
		{"node twice", true, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,0,\nn0,2,2,0,\n", `line 3, column 1 (sn): node "n0" is listed twice (also on line 2)`},
		{"column twice", false, "name,cpu_milli,num_gpu,num_gpu\np0,1,0,1\n", `header names column "num_gpu" twice`},
		{"cell too large", false, "name,cpu_milli,num_gpu\np0,9223372036854775807,0\n", "(cpu_milli): 9223372036854775807 is too large: at most 1099511627776"},
		{"stray quote", false, "name,cpu_milli,num_gpu\n\"p0,1,0\np1,1,0\n", "reading pod list: record on line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.nodes {
				_, err = ParseNodes(strings.NewReader(c.in))
			} else {
				_, err = ParsePods(strings.NewReader(c.in))
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParsePublishedRejectsNaN(t *testing.T) {
	in := "workload,sc_policy,alloc_pct_at_arrived_090,alloc_pct_at_arrived_100,alloc_pct_at_arrived_100_std,alloc_pct_at_arrived_130,alloc_pct_at_arrived_130_std,frag_pct_at_arrived_100,frag_pct_at_arrived_130\n" +
		"w,06-FGD,NaN,1,1,1,1,1,1\n"
	_, err := ParsePublished(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), `(alloc_pct_at_arrived_090): "NaN" is not a finite number`) {
		t.Errorf("error %v", err)
	}
}

// TestRunWithoutGPUDemandEnds: topping arrivals up to 130 % of GPU capacity drew CPU-only pods
// forever (and grew to gigabytes); a pod list without GPU demand is now an error at once.
func TestRunWithoutGPUDemandEnds(t *testing.T) {
	nodes := []Node{{Name: "n0", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 8, Model: "G2"}}
	pods := []Pod{{Name: "p0", Request: gpushare.Request{CPUMilli: 1000, MemoryMiB: 1024}}}
	_, err := Run(Workload{Name: "cpu-only", Nodes: nodes, Pods: pods}, DefaultConfig(PolicyFGD), 42)
	if err == nil || !strings.Contains(err.Error(), "no pod asks for a GPU") {
		t.Errorf("error %v", err)
	}
	if a := ArrivalOrder(pods, nodes, 8000, 1.3, 42); len(a.Pods) != 1 {
		t.Errorf("ArrivalOrder topped up %d arrivals without GPU demand", len(a.Pods))
	}
	_, err = Run(Workload{Name: "no-gpus", Nodes: []Node{{Name: "n0", CPUMilli: 1, MemoryMiB: 1}}, Pods: pods}, DefaultConfig(PolicyFGD), 42)
	if err == nil || !strings.Contains(err.Error(), "no node has a GPU") {
		t.Errorf("error %v", err)
	}
}

// TestArrivalsBounded: a sliver of GPU demand against a large cluster needs millions of draws;
// the run stops at MaxArrivals with an error.
func TestArrivalsBounded(t *testing.T) {
	nodes := []Node{{Name: "n0", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 16, Model: "G2"}}
	var pods []Pod
	for i := range 50 {
		pods = append(pods, Pod{Name: fmt.Sprintf("cpu-%d", i), Request: gpushare.Request{CPUMilli: 1000}})
	}
	pods = append(pods, Pod{Name: "gpu", Request: gpushare.Request{CPUMilli: 1000, NumGPUs: 1, GPUMilli: 1}})
	nodes = append(nodes, nodes[0], nodes[0], nodes[0])
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("n%d", i)
	}
	_, err := Run(Workload{Name: "sliver", Nodes: nodes, Pods: pods}, DefaultConfig(PolicyBestFit), 42)
	if err == nil || !strings.Contains(err.Error(), "more than 1048576 arrivals") {
		t.Errorf("error %v", err)
	}
}
