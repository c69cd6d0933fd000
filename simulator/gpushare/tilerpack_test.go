package gpushare

import (
	"math"
	"testing"
)

func TestTilerPackWaste(t *testing.T) {
	// Single-GPU shapes of 500 and 1000 milli, equally likely. Below 500 nothing fits, so all is
	// waste; from 500 to 999 only the 500 fits and leaves f−500; 1000 is filled by either a 1000
	// or two 500s.
	tp := NewTilerPack(mixOf(t, MixEntry{shape(1000, 1, 500), 0.5}, MixEntry{shape(1000, 1, 1000), 0.5}))
	for _, c := range []struct{ free, want int64 }{{0, 0}, {300, 300}, {500, 0}, {700, 200}, {999, 499}, {1000, 0}, {-5, 0}} {
		if got := tp.Waste(c.free); math.Abs(got-float64(c.want)) > 1e-9 {
			t.Errorf("Waste(%d) = %v, want %d", c.free, got, c.want)
		}
	}
}

// TestTilerPackStarvedGPU checks the term FGD lacks: GPU left without the CPU to feed it.
func TestTilerPackStarvedGPU(t *testing.T) {
	// Two whole-GPU shapes, 2 and 18 cores, equally likely: κ = 10 cores per GPU (10 milli-CPU per
	// milli-GPU), κ/2 = 5 for CPU-only pods.
	mix := mixOf(t, MixEntry{shape(2000, 1, 1000), 0.5}, MixEntry{shape(18000, 1, 1000), 0.5})
	tp, fgd := NewTilerPack(mix), NewFGD(mix)
	cases := []struct {
		name          string
		node          NodeState
		pod           Request
		wantTiler     float64
		wantFGD       float64
		wantGPUsTiler []int
	}{
		// Two idle GPUs and 16 cores; a 12-core CPU-only pod leaves 4. F: the 2-core shape fits
		// before and after, the 18-core one lacks CPU before and after: ΔF = 0, FGD scores 50.
		// S = max(0, 2000 − 16000/5) = 0 before, max(0, 2000 − 4000/5) = 1200 after: ΔS = −1200.
		{"cpu-only on a node whose GPUs need the CPU", nodeWith("T4", 16000, 65536, 1000, 1000), Request{CPUMilli: 12000, MemoryMiB: 1024}, -1200, 50, []int{}},
		// The same pod on a node without idle GPU changes nothing: 0 (FGD 50).
		{"cpu-only on a node without idle GPU", nodeWith("T4", 16000, 65536, 0, 0), Request{CPUMilli: 12000, MemoryMiB: 1024}, 0, 50, []int{}},
		// An 18-core whole-GPU pod on 2 idle GPUs and 20 cores leaves 1 GPU and 2 cores. ΔF: the
		// 18-core shape now lacks CPU, 0.5·1000 = −500 (FGD: trunc(100·σ(−0.5)) = 37); S goes
		// from max(0, 2000 − 2000) = 0 to max(0, 1000 − 200) = 800: −500 − 800 = −1300.
		{"cpu-heavy GPU pod on a cpu-poor node", nodeWith("G2", 20000, 65536, 1000, 1000), whole(18000, 1), -1300, 37, []int{0}},
		// On a CPU-rich node neither term moves: 0 (FGD 50).
		{"cpu-heavy GPU pod on a cpu-rich node", nodeWith("T4", 100000, 65536, 1000, 1000), whole(18000, 1), 0, 50, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, gpus, ok := tp.Score(&tc.node, tc.pod)
			if !ok || got != tc.wantTiler || !sameInts(gpus.Indices(), tc.wantGPUsTiler) {
				t.Errorf("TilerPack Score = %v, %v, %v; want %v, %v, true", got, gpus.Indices(), ok, tc.wantTiler, tc.wantGPUsTiler)
			}
			if got, _, _ := fgd.Score(&tc.node, tc.pod); got != tc.wantFGD {
				t.Errorf("FGD Score = %v, want %v", got, tc.wantFGD)
			}
		})
	}
}

// TestTilerPackGPUChoice checks the lookahead where FGD sees no difference.
func TestTilerPackGPUChoice(t *testing.T) {
	// Shapes of 300 and 700 milli on one GPU, equally likely. A 200 pod on GPUs with 1000 and 900
	// free leaves [800 900] or [1000 700]: both shapes fit every GPU either way, so F stays 0 and
	// both choices score 50 with FGD, which keeps GPU 0. V(700) = ½V(400) + ½V(0) = 50,
	// V(1000) = ½V(700) + ½V(300) = 25, V(800) = ½V(500) + ½V(100) = 150, V(900) = ½V(600) +
	// ½V(200) = 100: GPU 0 gains ΔW = V(1000) − V(800) = −125, GPU 1 gains V(900) − V(700) = 50,
	// so TilerPack takes GPU 1 with score ½·50 = 25.
	mix := mixOf(t, MixEntry{shape(1000, 1, 300), 0.5}, MixEntry{shape(1000, 1, 700), 0.5})
	tp, fgd := NewTilerPack(mix), NewFGD(mix)
	node := nodeWith("G2", 8000, 65536, 1000, 900)
	if got, gpus, ok := tp.Score(&node, share(1000, 200)); !ok || got != 25 || !sameInts(gpus.Indices(), []int{1}) {
		t.Errorf("TilerPack Score = %v, %v, %v; want 25, [1], true", got, gpus.Indices(), ok)
	}
	if got, gpus, _ := fgd.Score(&node, share(1000, 200)); got != 50 || !sameInts(gpus.Indices(), []int{0}) {
		t.Errorf("FGD Score = %v, %v; want 50, [0]", got, gpus.Indices())
	}
}
