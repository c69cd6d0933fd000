package fgd

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

var tuneWorkloads = []string{"default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare40", "gpushare60", "gpushare80", "gpushare100"}

// TestTune: TILER_TUNE=policy[,policy] TILER_WL=default,... runs seeds 42..51 in parallel.
func TestTune(t *testing.T) {
	pols := os.Getenv("TILER_TUNE")
	if pols == "" {
		t.Skip()
	}
	wls := tuneWorkloads
	if s := os.Getenv("TILER_WL"); s != "" {
		wls = strings.Split(s, ",")
	}
	rows := loadPublished(t)
	type job struct {
		w    Workload
		p    Policy
		seed int64
		res  *RunResult
	}
	var jobs []*job
	works := map[string]Workload{}
	for _, wl := range wls {
		works[wl] = loadWorkload(t, "openb_pod_list_"+wl)
		for _, p := range strings.Split(pols, ",") {
			for s := int64(42); s <= 51; s++ {
				jobs = append(jobs, &job{w: works[wl], p: Policy(p), seed: s})
			}
		}
	}
	ch := make(chan *job)
	var wg sync.WaitGroup
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				r, err := Run(j.w, DefaultConfig(j.p), j.seed)
				if err != nil {
					panic(err)
				}
				j.res = &r
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	var sumd float64
	minD := 100.0
	out := ""
	for _, wl := range wls {
		for _, p := range strings.Split(pols, ",") {
			var runs []RunResult
			for _, j := range jobs {
				if j.w.Name == "openb_pod_list_"+wl && string(j.p) == p {
					runs = append(runs, *j.res)
				}
			}
			s, err := Summarize(wl, Policy(p), runs, []int{100, 130})
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := FindPublished(rows, "openb_pod_list_"+wl, PolicyFGD)
			a100, _ := s.At(100)
			a130, _ := s.At(130)
			d := a130.Alloc.Mean - pub.AllocAt130
			if p == "tiler" {
				sumd += d
				minD = min(minD, d)
			}
			var per []string
			for _, r := range runs {
				pt, _ := r.At(130)
				per = append(per, fmt.Sprintf("%.2f", pt.AllocPct))
			}
			out += fmt.Sprintf("%-12s %-7s 100: %.2f±%.2f (pub %.2f)  130: %.2f±%.2f (pub %.2f) d=%+.2f  [%s]\n", wl, p,
				a100.Alloc.Mean, a100.Alloc.Std, pub.AllocAt100, a130.Alloc.Mean, a130.Alloc.Std, pub.AllocAt130, d, strings.Join(per, " "))
		}
	}
	out += fmt.Sprintf("tiler: sum d=%+.2f min d=%+.2f\n", sumd, minD)
	fmt.Print(out)
}

// TestAnalyze: TILER_ANALYZE=policy TILER_WL=default: end-state breakdown for seed 42.
func TestAnalyze(t *testing.T) {
	pol := os.Getenv("TILER_ANALYZE")
	if pol == "" {
		t.Skip()
	}
	wl := "default"
	if s := os.Getenv("TILER_WL"); s != "" {
		wl = s
	}
	w := loadWorkload(t, "openb_pod_list_"+wl)
	cfg := DefaultConfig(Policy(pol))
	reqs := make([]gpushare.Request, len(w.Pods))
	for i, p := range w.Pods {
		reqs[i] = p.Request
	}
	mix, _ := gpushare.NewPodMix(reqs, cfg.MixCoveragePct)
	scorer, _ := NewScorer(cfg.Policy, mix)
	var capm int64
	for _, n := range w.Nodes {
		capm += int64(n.GPUs) * 1000
	}
	arr := ArrivalOrder(w.Pods, w.Nodes, capm, cfg.TuneRatio, 42)
	shapeOf, ns := internShapes(w.Pods)
	c, _ := newCluster(w.Nodes, &mix, ns, arr.NodeRank, cfg.TieBreak)
	failed := map[string]int{}
	var cpuOnlyCPU, gpuCPU, gpuG int64
	cpuOnlyN := 0
	firstFail := -1
	for k, pi := range arr.Pods {
		ok, _ := c.place(shapeOf[pi], w.Pods[pi].Request, scorer, arr.Rand)
		if ok {
			if w.Pods[pi].NumGPUs == 0 {
				cpuOnlyCPU += w.Pods[pi].CPUMilli
				cpuOnlyN++
			} else {
				gpuCPU += w.Pods[pi].CPUMilli
				gpuG += w.Pods[pi].TotalGPUMilli()
			}
		}
		if k%1000 == 0 || k == len(arr.Pods)-1 {
			fmt.Printf("  k=%5d cpu-only placed %4d (%6.0f cores); gpu pods %6.0f cores for %6.1f GPUs\n", k, cpuOnlyN, float64(cpuOnlyCPU)/1000, float64(gpuCPU)/1000, float64(gpuG)/1000)
		}
		if !ok {
			if firstFail < 0 {
				firstFail = k
			}
			p := w.Pods[pi]
			key := "cpu"
			if p.NumGPUs > 0 {
				key = fmt.Sprintf("%dx%d", p.NumGPUs, p.GPUMilli)
			}
			failed[key]++
		}
	}
	fmt.Printf("pods %d, first failure at %d\n", len(arr.Pods), firstFail)
	var keys []string
	for k := range failed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return failed[keys[i]] > failed[keys[j]] })
	for _, k := range keys {
		fmt.Printf("  failed %s: %d\n", k, failed[k])
	}
	// Breakdown of free GPU.
	var freeTot, deadCPU, deadMem, partial, whole int64
	byModel := map[string][2]int64{}
	hist := map[int64]int64{}
	for i := range c.nodes {
		n := &c.nodes[i]
		f := n.GPUMilliFreeTotal()
		freeTot += f
		switch {
		case f == 0:
		case n.CPUMilliFree < 1000:
			deadCPU += f
		case n.MemoryMiBFree < 1024:
			deadMem += f
		default:
			for g := 0; g < n.NumGPUs; g++ {
				if n.GPUMilliFree[g] == 1000 {
					whole += 1000
				} else {
					partial += n.GPUMilliFree[g]
					hist[n.GPUMilliFree[g]/50*50] += n.GPUMilliFree[g]
				}
			}
		}
		b := byModel[fmt.Sprintf("%s/%d", n.Model, n.NumGPUs)]
		b[0] += f
		b[1] += n.GPUMilliCapacity()
		byModel[fmt.Sprintf("%s/%d", n.Model, n.NumGPUs)] = b
	}
	// classify each GPU's free share
	var cls [4]int64
	names := []string{"gpu-frag", "cpu-dead", "mem-dead", "fillable"}
	for i := range c.nodes {
		n := &c.nodes[i]
		for g := 0; g < n.NumGPUs; g++ {
			f := n.GPUMilliFree[g]
			if f == 0 {
				continue
			}
			k := 0
			for _, p := range w.Pods {
				if p.NumGPUs != 1 || p.GPUMilli > f {
					continue
				}
				if k < 1 {
					k = 1
				}
				if p.CPUMilli > n.CPUMilliFree {
					continue
				}
				if k < 2 {
					k = 2
				}
				if p.MemoryMiB > n.MemoryMiBFree {
					continue
				}
				k = 3
				break
			}
			cls[k] += f
		}
	}
	var cpuStranded, cpuFreeTot, cpuOnGPUfree int64
	for i := range c.nodes {
		n := &c.nodes[i]
		cpuFreeTot += n.CPUMilliFree
		if n.GPUMilliFreeTotal() < 100 {
			cpuStranded += n.CPUMilliFree
		} else {
			cpuOnGPUfree += n.CPUMilliFree
		}
	}
	fmt.Printf("cpu free %.0f cores: on nodes with <0.1 GPU free %.0f, others %.0f\n", float64(cpuFreeTot)/1000, float64(cpuStranded)/1000, float64(cpuOnGPUfree)/1000)
	for k := range cls {
		fmt.Printf("  %s: %.1f GPUs\n", names[k], float64(cls[k])/1000)
	}
	fmt.Printf("free %.1f GPUs: cpu<1 core %.1f, mem<1GiB %.1f, whole free %.1f, partial %.1f\n", float64(freeTot)/1000, float64(deadCPU)/1000, float64(deadMem)/1000, float64(whole)/1000, float64(partial)/1000)
	for k, v := range byModel {
		fmt.Printf("  %-12s free %.1f of %.0f\n", k, float64(v[0])/1000, float64(v[1])/1000)
	}
	var hk []int64
	for k := range hist {
		hk = append(hk, k)
	}
	sort.Slice(hk, func(i, j int) bool { return hk[i] < hk[j] })
	for _, k := range hk {
		fmt.Printf("  partial free %d-%d: %.1f GPUs\n", k, k+49, float64(hist[k])/1000)
	}
	// nodes with free GPU: show cpu/mem free distribution
	type nf struct {
		cpu, mem, gpu int64
		g             string
	}
	var list []nf
	for i := range c.nodes {
		n := &c.nodes[i]
		if f := n.GPUMilliFreeTotal(); f > 0 {
			list = append(list, nf{n.CPUMilliFree, n.MemoryMiBFree, f, fmt.Sprint(n.Model, n.GPUMilliFree[:n.NumGPUs])})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].gpu > list[j].gpu })
	for i, x := range list {
		if i > 60 {
			break
		}
		fmt.Printf("   cpu %6d mem %7d gpu %5d %s\n", x.cpu, x.mem, x.gpu, x.g)
	}
}
