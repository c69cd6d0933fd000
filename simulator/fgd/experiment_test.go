package fgd

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

const traceDir = "../../testdata/alibaba-gpu-v2023"

// loadWorkload reads the paper's GPU cluster and one of its pod lists from testdata.
func loadWorkload(tb testing.TB, name string) Workload {
	tb.Helper()
	nf, err := os.Open(filepath.Join(traceDir, "openb_node_list_gpu_node.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer nf.Close()
	nodes, err := ParseNodes(nf)
	if err != nil {
		tb.Fatal(err)
	}
	pf, err := os.Open(filepath.Join(traceDir, name+".csv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer pf.Close()
	pods, err := ParsePods(pf)
	if err != nil {
		tb.Fatal(err)
	}
	return Workload{Name: name, Nodes: nodes, Pods: pods}
}

func loadPublished(tb testing.TB) []Published {
	tb.Helper()
	f, err := os.Open(filepath.Join(traceDir, "fgd-expected-results", "summary_by_workload_policy.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rows, err := ParsePublished(f)
	if err != nil {
		tb.Fatal(err)
	}
	return rows
}

// testSeeds is the paper's 42..51, or two seeds under -short.
func testSeeds() []int64 {
	if testing.Short() {
		return SeedRange(42, 43)
	}
	return SeedRange(42, 51)
}

func sweep(t *testing.T, w Workload, p Policy) Summary {
	t.Helper()
	cfg := DefaultConfig(p)
	cfg.Seeds = testSeeds()
	s, err := Sweep(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func alloc(t *testing.T, s Summary, pct int) float64 {
	t.Helper()
	p, ok := s.At(pct)
	if !ok {
		t.Fatalf("%s/%s: no point at %d%%", s.Workload, s.Policy, pct)
	}
	return p.Alloc.Mean
}

// reproduces checks that a policy lands within tol points of the paper at 100 and 130 % arrived.
func reproduces(t *testing.T, s Summary, pub Published, tol float64) {
	t.Helper()
	for _, c := range []struct {
		pct  int
		want float64
	}{{100, pub.AllocAt100}, {130, pub.AllocAt130}} {
		if got := alloc(t, s, c.pct); math.Abs(got-c.want) > tol {
			t.Errorf("%s %s at %d%% arrived: %.2f %%, published %.2f %% (±%.1f)", s.Workload, s.Policy, c.pct, got, c.want, tol)
		}
	}
}

// TestDefaultTraceReproducesPaper runs BestFit, FGD and TilerPack on the default trace: the
// baselines must reproduce the published numbers within ±0.5 points (92.86/93.08 and 95.23/95.39
// at 100/130 % arrived), TilerPack must beat FGD's published 95.39 % (see checkTilerPack).
func TestDefaultTraceReproducesPaper(t *testing.T) {
	w := loadWorkload(t, "openb_pod_list_default")
	rows := loadPublished(t)
	results := map[Policy]Summary{}
	for _, p := range Policies {
		results[p] = sweep(t, w, p)
		if pub, ok := FindPublished(rows, w.Name, p); ok {
			reproduces(t, results[p], pub, 0.5)
		}
	}
	checkTilerPack(t, results[PolicyTiler], rows)
}

// checkTilerPack asserts that TilerPack beats FGD's published allocation at 130 % arrived on the
// summary's workload: over the paper's ten seeds by more than the published FGD standard
// deviation over seeds (TilerPack leads by 0.5 to 1.6 points; the largest published std is 0.26). Under -short the sweep has two seeds, whose mean wanders by about 0.1 point from
// the ten-seed mean, so there the margin is dropped and the mean only has to reach FGD's
// published mean. On the default trace that is 95.39 %.
func checkTilerPack(t *testing.T, s Summary, rows []Published) {
	t.Helper()
	pub, ok := FindPublished(rows, s.Workload, PolicyFGD)
	if !ok {
		t.Fatalf("no published FGD row for %s", s.Workload)
	}
	want := pub.AllocAt130 + pub.Std130
	if testing.Short() {
		want = pub.AllocAt130
	}
	if got := alloc(t, s, 130); got <= want {
		t.Errorf("%s: TilerPack %.2f %% at 130 %% arrived, want above %.2f %% (FGD published %.2f ± %.2f)",
			s.Workload, got, want, pub.AllocAt130, pub.Std130)
	}
}

// TestAllWorkloads repeats the comparison on every pod list of the published results. It takes
// minutes on two cores and is skipped under -short.
func TestAllWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("full sweep over nine pod lists")
	}
	rows := loadPublished(t)
	seen := map[string]bool{"openb_pod_list_default": true}
	for _, r := range rows {
		if seen[r.Workload] {
			continue
		}
		seen[r.Workload] = true
		t.Run(r.Workload, func(t *testing.T) {
			w := loadWorkload(t, r.Workload)
			for _, p := range Policies {
				s := sweep(t, w, p)
				if pub, ok := FindPublished(rows, w.Name, p); ok {
					reproduces(t, s, pub, 0.5)
				} else {
					checkTilerPack(t, s, rows)
				}
				t.Logf("%s: 90/100/130 %% arrived: %.2f / %.2f / %.2f", p, alloc(t, s, 90), alloc(t, s, 100), alloc(t, s, 130))
			}
		})
	}
}

// TestRunIsDeterministic checks that a seed fully determines a run, and that seeds differ.
func TestRunIsDeterministic(t *testing.T) {
	w := loadWorkload(t, "openb_pod_list_gpushare100")
	cfg := DefaultConfig(PolicyFGD)
	a, err := Run(w, cfg, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(w, cfg, 42)
	c, _ := Run(w, cfg, 43)
	if fmt.Sprint(a.Events) != fmt.Sprint(b.Events) {
		t.Error("two runs with seed 42 differ")
	}
	if fmt.Sprint(a.Events) == fmt.Sprint(c.Events) {
		t.Error("seeds 42 and 43 give the same run")
	}
	last := a.Events[len(a.Events)-1]
	// 130 % of 6,212,000 milli-GPU is the top-up target; the last pod keeps the total at or below it.
	if float64(last.ArrivedGPUMilli) > 1.3*6212000 || float64(last.ArrivedGPUMilli) < 1.29*6212000 {
		t.Errorf("arrived %d milli-GPU, want just under 130 %% of 6212000", last.ArrivedGPUMilli)
	}
}

// BenchmarkFGD times one seed's run of each policy on the default trace and reports the
// allocation at 130 % arrived.
func BenchmarkFGD(b *testing.B) {
	w := loadWorkload(b, "openb_pod_list_default")
	for _, p := range Policies {
		b.Run(string(p), func(b *testing.B) {
			cfg := DefaultConfig(p)
			r, err := Run(w, cfg, 42)
			if err != nil {
				b.Fatal(err)
			}
			pt, ok := r.At(130)
			if !ok {
				b.Fatal("no point at 130 % arrived")
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Run(w, cfg, 42); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(pt.AllocPct, "alloc130_%")
			b.ReportMetric(float64(r.Pods), "pods/run")
		})
	}
}
