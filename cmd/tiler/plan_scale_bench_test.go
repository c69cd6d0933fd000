package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/internal/benchmeasure"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkPlanAtScale is `tiler plan` on issue 19's ten-times cluster (simtest.TenTimesCluster:
// 5,000 running nodes with GPU ones, 10,000 bound and 20,000 pending pods of mixed shapes), read
// from the file `kubectl get nodes,pods -A -o yaml` (or -o json) would print: one v1 List. It
// times the whole command — decoding, policy, plan, JSON output — and reports seconds per plan
// and the peak of the heap's live objects during one command (peak_heap_MB, sampled every
// millisecond, the input file's bytes not included) and the CPU seconds per plan (cpu_s/plan: user
// and system time of the process, which the machine's other load does not inflate). Targets: ≤ 8 s and ≤ 450 MB.
//
//	go test ./cmd/tiler/ -run '^$' -bench BenchmarkPlanAtScale -benchtime 1x -count 5
func BenchmarkPlanAtScale(b *testing.B) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	snap := simtest.TenTimesCluster(cat, 1, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(simtest.LargeFleetPolicy), 0o644); err != nil {
		b.Fatal(err)
	}
	items := make([]any, 0, len(snap.Nodes)+len(snap.Pods))
	for _, n := range snap.Nodes {
		n = n.DeepCopy()
		n.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
		items = append(items, n)
	}
	for _, p := range snap.Pods {
		p = p.DeepCopy()
		p.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
		items = append(items, p)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	for _, format := range []string{"yaml", "json"} {
		b.Run(format, func(b *testing.B) {
			file := filepath.Join(dir, "snapshot."+format)
			writeList(b, file, format, list)
			o := planOptions{file: file, catalog: "aws-us-east-1", policy: policyFile, output: "json", seed: "bench"}
			var err error
			peakHeap := benchmeasure.PeakHeap(func() { err = runPlan(io.Discard, o) })
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				if err := runPlan(io.Discard, o); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu_s/plan")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
			b.ReportMetric(float64(peakHeap)/1e6, "peak_heap_MB")
		})
	}
}

func writeList(b *testing.B, file, format string, list map[string]any) {
	var data []byte
	var err error
	if format == "yaml" {
		data, err = yaml.Marshal(list)
	} else {
		data, err = json.MarshalIndent(list, "", "    ")
	}
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := w.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's user and system CPU time so far: on a shared machine the seconds a
// plan costs, whatever the wall clock says.
func cpuTime(b *testing.B) time.Duration {
	t, err := benchmeasure.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return t
}
