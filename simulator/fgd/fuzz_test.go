package fgd

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// FuzzParsePods checks that ParsePods never panics, that every pod it accepts is a valid request
// within MaxCell, that writing the pods back with every column reads the same pods, and that the
// arrival order of a small accepted list ends within MaxArrivals.
func FuzzParsePods(f *testing.F) {
	f.Add([]byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,12000,16384,1,460,V100M16|V100M32\np1,88000,32768,0,0,\n"))
	f.Add([]byte("name,cpu_milli,num_gpu\np0,1000,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		pods, err := ParsePods(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write([]string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"})
		for _, p := range pods {
			if err := p.Validate(); err != nil || p.CPUMilli > MaxCell || p.MemoryMiB > MaxCell {
				t.Fatalf("pod %q accepted: %v (%v)", p.Name, p.Request, err)
			}
			_ = w.Write([]string{p.Name, strconv.FormatInt(p.CPUMilli, 10), strconv.FormatInt(p.MemoryMiB, 10),
				strconv.Itoa(p.NumGPUs), strconv.FormatInt(p.GPUMilli, 10), strings.Join(p.GPUModels, "|")})
		}
		w.Flush()
		again, err := ParsePods(&buf)
		if err != nil {
			t.Fatalf("accepted pods do not parse again: %v\n%s", err, buf.String())
		}
		if fmt.Sprint(again) != fmt.Sprint(pods) {
			t.Fatalf("round trip changed the pods:\n%v\n%v", pods, again)
		}
		if len(pods) > 0 && len(pods) <= 64 {
			nodes := []Node{{Name: "n0", CPUMilli: 64000, MemoryMiB: 1 << 18, GPUs: 8, Model: "G2"}}
			if a := ArrivalOrder(pods, nodes, 8000, 1.3, 42); len(a.Pods) > MaxArrivals {
				t.Fatalf("%d arrivals", len(a.Pods))
			}
		}
	})
}

// FuzzParseNodes checks that ParseNodes never panics and that every node it accepts can be a
// node state of the experiment (names unique, sizes within MaxCell, a model for GPUs).
func FuzzParseNodes(f *testing.F) {
	f.Add([]byte("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,0,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		nodes, err := ParseNodes(bytes.NewReader(data))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range nodes {
			if seen[n.Name] || n.CPUMilli > MaxCell || n.MemoryMiB > MaxCell {
				t.Fatalf("node %+v accepted", n)
			}
			seen[n.Name] = true
		}
		mix, err := gpushareMix()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newCluster(nodes, &mix, 1, make([]int, len(nodes)), TieByNodeOrder); err != nil {
			t.Fatalf("accepted nodes make no cluster: %v", err)
		}
	})
}

// FuzzParsePublished checks that the published results never carry NaN or infinity into the
// bench's JSON.
func FuzzParsePublished(f *testing.F) {
	f.Add([]byte("workload,sc_policy,alloc_pct_at_arrived_090,alloc_pct_at_arrived_100,alloc_pct_at_arrived_100_std,alloc_pct_at_arrived_130,alloc_pct_at_arrived_130_std,frag_pct_at_arrived_100,frag_pct_at_arrived_130\nw,06-FGD,1,2,3,4,5,6,7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		rows, err := ParsePublished(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range rows {
			for _, v := range []float64{r.AllocAt90, r.AllocAt100, r.AllocAt130, r.Std100, r.Std130, r.FragAt100, r.FragAt130} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("row %+v accepted", r)
				}
			}
		}
	})
}

// gpushareMix is a one-shape mix to build clusters with.
func gpushareMix() (gpushare.PodMix, error) {
	return gpushare.NewPodMix([]gpushare.Request{{CPUMilli: 1000, MemoryMiB: 1024, NumGPUs: 1, GPUMilli: 500}}, 100)
}
