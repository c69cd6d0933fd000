package simulator_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// exactOptimum is an exact solver for small CPU/memory-only instances: it enumerates every
// partition of the pods into nodes (restricted growth strings) and prices each block at the
// cheapest offering whose allocatable holds it.
func exactOptimum(cpu, mem []int64, cat *catalog.Catalog, families ...string) float64 {
	shapes := catalogShapes(cat, 1, families...)
	blockPrice := func(c, m, n int64) float64 {
		best := math.Inf(1)
		for _, s := range shapes {
			if s.cpu >= c && s.mem >= m && s.pods >= n && s.price < best {
				best = s.price
			}
		}
		return best
	}
	return minOverPartitions(len(cpu), func(block []int) float64 {
		var c, m int64
		for _, p := range block {
			c += cpu[p]
			m += mem[p]
		}
		return blockPrice(c, m, int64(len(block)))
	})
}

// nodeShape is what a brute-force optimum needs of an instance type: its allocatable CPU
// (millicores), memory (bytes) and pods, its GPU units and its cheapest available price.
type nodeShape struct {
	cpu, mem, pods int64
	gpu            int
	price          float64
}

// catalogShapes returns the node shapes of the catalog's types of the given families, counting
// replicas GPU units per GPU.
func catalogShapes(cat *catalog.Catalog, replicas int, families ...string) []nodeShape {
	var shapes []nodeShape
	for i := range cat.Types {
		it := &cat.Types[i]
		if !slices.Contains(families, strings.SplitN(string(it.Name), ".", 2)[0]) {
			continue
		}
		c, m, p := catalog.Allocatable(cat.Provider, it)
		best := math.Inf(1)
		for _, o := range it.Offerings {
			if !o.Unavailable {
				best = math.Min(best, o.PricePerHour)
			}
		}
		shapes = append(shapes, nodeShape{c, m, int64(p), it.GPU.Count * replicas, best})
	}
	return shapes
}

// minOverPartitions is the least total cost of a partition of items 0..n-1 into blocks (nodes),
// each block costing cost(block) (+Inf when no node holds it): every set partition is tried,
// those already above the best found cut short. Exponential: for the brute-force optima of small
// instances.
func minOverPartitions(n int, cost func(block []int) float64) float64 {
	assign := make([]int, n)
	best := math.Inf(1)
	var rec func(i, blocks int)
	rec = func(i, blocks int) {
		if i == n {
			bs := make([][]int, blocks)
			for p, b := range assign {
				bs[b] = append(bs[b], p)
			}
			total := 0.0
			for _, b := range bs {
				if total += cost(b); total >= best {
					return
				}
			}
			best = total
			return
		}
		for b := 0; b <= blocks; b++ {
			assign[i] = b
			if b == blocks {
				rec(i+1, blocks+1)
			} else {
				rec(i+1, blocks)
			}
		}
	}
	rec(0, 0)
	return best
}

// TestNearExactOptimum compares plans of small unconstrained snapshots with the exact optimum of
// an independent brute-force solver.
func TestNearExactOptimum(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{{
		Name: "general", InstanceFamilies: []string{"m7i", "c7i", "r7i"},
		Requirements: []corev1.NodeSelectorRequirement{{Key: api.LabelGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}}}}}
	r := rand.New(rand.NewPCG(7, 7))
	var sumGap, worst float64
	cases := 40
	for c := 0; c < cases; c++ {
		n := 3 + r.IntN(8) // 3–10 pods: up to 9 the simulator searches exactly too, 10 is heuristic only
		snap := &snapshot.Snapshot{}
		cpu, mem := make([]int64, n), make([]int64, n)
		for i := 0; i < n; i++ {
			cpu[i] = int64(250 * (1 + r.IntN(16)))
			mem[i] = int64(512*(1+r.IntN(32))) << 20
			snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprintf("p%d", i)).
				CPU(fmt.Sprintf("%dm", cpu[i])).Mem(fmt.Sprintf("%d", mem[i])).Obj())
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("case %d: unschedulable %+v", c, plan.Unschedulable)
		}
		opt := exactOptimum(cpu, mem, cat, "m7i", "c7i", "r7i")
		if plan.CostPerHour < opt-1e-6 {
			t.Fatalf("case %d: plan $%.4f below the exact optimum $%.4f: the solver or the checker is wrong", c, plan.CostPerHour, opt)
		}
		if plan.LowerBoundPerHour > opt+1e-6 {
			t.Fatalf("case %d: lower bound $%.4f above the exact optimum $%.4f", c, plan.LowerBoundPerHour, opt)
		}
		gap := plan.CostPerHour/opt - 1
		sumGap += gap
		worst = math.Max(worst, gap)
	}
	t.Logf("mean gap to the exact optimum %.2f%%, worst %.2f%% over %d cases", 100*sumGap/float64(cases), 100*worst, cases)
	if sumGap/float64(cases) > 0.02 || worst > 0.10 {
		t.Errorf("mean gap %.2f%% (want ≤ 2%%), worst %.2f%% (want ≤ 10%%)", 100*sumGap/float64(cases), 100*worst)
	}
}
