package gpushare

import (
	"math"
	"testing"
)

// mixOf builds a mix from explicit weights or fails the test.
func mixOf(t testing.TB, entries ...MixEntry) PodMix {
	t.Helper()
	m, err := NewPodMixFromWeights(entries)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func shape(cpu int64, n int, milli int64) PodShape {
	return PodShape{CPUMilli: cpu, NumGPUs: n, GPUMilli: milli}
}

func TestBestFitScore(t *testing.T) {
	cases := []struct {
		name      string
		node      NodeState
		pod       Request
		wantScore float64
		wantGPUs  []int
	}{
		// leftover = 0.5·(64000−4000)/128000 + 0.5·(1500−500)/8000 = 0.234375 + 0.0625
		// score = trunc(100·(1−0.296875)) = trunc(70.3125) = 70; tightest GPU holding 500 is GPU 1.
		{"share", nodeWith("T4", 64000, 8192, 1000, 500), share(4000, 500), 70, []int{1}},
		// leftover = 0.5·0/128000 + 0.5·(2000−2000)/8000 = 0 → score 100; lowest free GPUs 0, 2.
		{"exact fit", nodeWith("G2", 4000, 8192, 1000, 0, 1000), whole(4000, 2), 100, []int{0, 2}},
		// leftover = 0.5·(96000−12500)/128000 + 0.5·8000/8000 = 0.826171875 → trunc(17.38) = 17.
		{"cpu-only", nodeWith("G2", 96000, 8192, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000), Request{CPUMilli: 12500}, 17, []int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			score, gpus, ok := NewBestFit().Score(&tc.node, tc.pod)
			if !ok || score != tc.wantScore || !sameInts(gpus.Indices(), tc.wantGPUs) {
				t.Errorf("Score = %v, %v, %v; want %v, %v, true", score, gpus.Indices(), ok, tc.wantScore, tc.wantGPUs)
			}
		})
	}
}

func TestFragmentation(t *testing.T) {
	// Three typical pods: a 400m share pod needing 4 cores (p=0.5), a whole GPU with 8 cores
	// (p=0.25), a CPU-only pod (p=0.25).
	mix := mixOf(t,
		MixEntry{shape(4000, 1, 400), 0.5},
		MixEntry{shape(8000, 1, 1000), 0.25},
		MixEntry{shape(2000, 0, 0), 0.25},
	)
	cases := []struct {
		name string
		node NodeState
		want float64
	}{
		// share pod fits (GPU 0), GPU 1 (300 < 400) is its fragment: 0.5·300;
		// whole GPU does not fit (no GPU at 1000): 0.25·(700+300) lacks GPU;
		// CPU-only pod: idle GPU is useless to it: 0.25·1000.  150 + 250 + 250 = 650.
		{"partial GPUs", nodeWith("T4", 10000, 8192, 700, 300), 650},
		// share and whole fit, no GPU below 400: 0; CPU-only: 0.25·2000 = 500.
		{"empty node", nodeWith("T4", 10000, 8192, 1000, 1000), 500},
		// CPU 3000 < 4000 and < 8000: both GPU pods lack CPU: (0.5+0.25)·2000; CPU-only fits: 0.25·2000.
		{"cpu exhausted", nodeWith("T4", 3000, 8192, 1000, 1000), 2000},
		{"no idle GPU", nodeWith("T4", 10000, 8192, 0, 0), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mix.Fragmentation(&tc.node); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Fragmentation = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFGDScore(t *testing.T) {
	mix := mixOf(t, MixEntry{shape(1000, 1, 500), 0.5}, MixEntry{shape(1000, 1, 1000), 0.5})
	// GPU 0 has 500 free, GPU 1 is empty. Before: the whole-GPU pod sees 500 as fragment: 0.5·500 = 250.
	// 500m pod on GPU 0: after, 0 free there, nothing fragmented: Δ = 250 → trunc(100·σ(0.25)) = 56.
	// On GPU 1: after, 500+500 free, the whole pod lacks GPU: 0.5·1000 = 500, Δ = −250 → 43.
	node := nodeWith("T4", 8000, 8192, 500, 1000)
	score, gpus, ok := NewFGD(mix).Score(&node, share(1000, 500))
	if !ok || score != 56 || !sameInts(gpus.Indices(), []int{0}) {
		t.Errorf("FGD Score = %v, %v, %v; want 56, [0], true", score, gpus.Indices(), ok)
	}
	if _, _, ok := NewFGD(mix).Score(&node, whole(1000, 2)); ok {
		t.Error("FGD scored a pod that does not fit")
	}
}

// TestFGDGPUChoiceMatchesNaive checks the skip of GPUs with equal free share against scoring
// every GPU, as the paper does.
func TestFGDGPUChoiceMatchesNaive(t *testing.T) {
	mix := mixOf(t, MixEntry{shape(1000, 1, 300), 0.4}, MixEntry{shape(2000, 1, 700), 0.3}, MixEntry{shape(500, 0, 0), 0.3})
	frees := []int64{0, 100, 300, 400, 700, 1000}
	f := NewFGD(mix)
	for a := range frees {
		for b := range frees {
			for c := range frees {
				node := nodeWith("G2", 8000, 8192, frees[a], frees[b], frees[c], frees[b])
				for _, milli := range []int64{100, 300, 700} {
					pod := share(1000, milli)
					got, gotGPUs, ok := f.Score(&node, pod)
					want, wantIdx, wantOK := naiveFGD(&mix, &node, pod)
					if ok != wantOK || ok && (got != want || !gotGPUs.Has(wantIdx)) {
						t.Fatalf("node %v pod %dm: got %v %v %v, naive %v %v %v", node.GPUMilliFree[:4], milli, got, gotGPUs.Indices(), ok, want, wantIdx, wantOK)
					}
				}
			}
		}
	}
}

func naiveFGD(m *PodMix, node *NodeState, pod Request) (float64, int, bool) {
	if !node.Fits(pod) {
		return 0, -1, false
	}
	before := m.Fragmentation(node)
	best, idx := int64(0), -1
	for i := 0; i < node.NumGPUs; i++ {
		if node.GPUMilliFree[i] >= pod.GPUMilli {
			after := *node
			after.CPUMilliFree -= pod.CPUMilli
			after.GPUMilliFree[i] -= pod.GPUMilli
			if s := int64(100 / (1 + math.Exp(-(before-m.Fragmentation(&after))/1000))); idx < 0 || s > best {
				best, idx = s, i
			}
		}
	}
	return float64(best), idx, true
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
