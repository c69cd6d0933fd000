package fgd

import (
	"math/rand"
	"slices"
	"strings"
)

// The paper's simulator draws every random number of a run from Go's global math/rand source
// after rand.Seed(seed). Arrivals replays that stream with an explicit source of the same
// generator: math/rand (v1) on purpose, because math/rand/v2 has no generator whose stream
// matches it. The source is seeded from the run's seed (data), never from the clock.

// Arrivals is the seed-dependent part of one run.
type Arrivals struct {
	// Pods are indexes into the pod list in arrival order; an index may repeat, since the top-up
	// samples with replacement.
	Pods []int
	// NodeRank[i] is node i's position in the scheduler's node order: the paper renames node i
	// (in name order) to "%04d-<name>" with a rand.Perm prefix, so its nodes sort in a random
	// order that differs per seed.
	NodeRank []int
	// Rand is the source positioned after the draws above, for random tie-breaking.
	Rand *rand.Rand
}

// ArrivalOrder replays, for one seed, the draws of the paper's pkg/simulator (core.go Simulate,
// simulator.go SortClusterPods, TunePodsByNodeTotalResource, tuneUpPods, tuneDownPods,
// syncClusterResourceList):
//
//  1. rand.Seed(seed), then one rand.Int() consumed by a debug log line;
//  2. pods sorted by name, then rand.Shuffle (Fisher–Yates, Go's math/rand);
//  3. if the total GPU request (Σ num_gpu × gpu_milli) is below tuneRatio × capacity, append
//     pods drawn with rand.Intn from the name-sorted list until the next draw's gpu_milli would
//     exceed the target (the paper compares gpu_milli, not num_gpu × gpu_milli, in that test; the
//     quirk is kept so that the same pods arrive); if it is above, remove pods at rand.Intn
//     positions until it is not;
//  4. rand.Perm(len(nodes)) to rename the nodes (see Arrivals.NodeRank).
func ArrivalOrder(pods []Pod, nodes []Node, capacityMilli int64, tuneRatio float64, seed int64) Arrivals {
	rng := rand.New(rand.NewSource(seed))
	_ = rng.Int()
	byName := sortedByName(len(pods), func(i int) string { return pods[i].Name })
	order := slices.Clone(byName)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if len(byName) > 0 {
		order = tune(pods, byName, order, tuneRatio*float64(capacityMilli), tuneRatio > 0, rng)
	}
	perm := rng.Perm(len(nodes))
	rank := make([]int, len(nodes))
	for pos, i := range sortedByName(len(nodes), func(i int) string { return nodes[i].Name }) {
		rank[i] = perm[pos]
	}
	return Arrivals{Pods: order, NodeRank: rank, Rand: rng}
}

// MaxArrivals bounds the arrivals of one run. Topping up draws pods until their GPU request
// reaches the target: a pod list without GPU demand never gets there (the loop appended CPU pods
// until memory ran out), and one with very little would take millions of draws. The paper's
// runs have about 10,000 arrivals.
const MaxArrivals = 1 << 20

// tune tops order up (or cuts it down) to the target GPU request, step 3 of ArrivalOrder. It
// stops at MaxArrivals, and does not top up a pod list that asks for no GPU at all.
func tune(pods []Pod, byName, order []int, target float64, enabled bool, rng *rand.Rand) []int {
	var total int64
	for _, i := range order {
		total += pods[i].TotalGPUMilli()
	}
	switch {
	case !enabled || float64(total) == target:
	case float64(total) < target:
		if !slices.ContainsFunc(pods, func(p Pod) bool { return p.TotalGPUMilli() > 0 }) {
			break // no draw can add GPU demand (checked before drawing, so the paper's stream is kept)
		}
		for len(order) < MaxArrivals {
			k := byName[rng.Intn(len(byName))]
			if float64(total+pods[k].GPUMilli) > target {
				break
			}
			total += pods[k].TotalGPUMilli()
			order = append(order, k)
		}
	default:
		for float64(total) > target && len(order) > 0 {
			k := rng.Intn(len(order))
			total -= pods[order[k]].TotalGPUMilli()
			order = slices.Delete(order, k, k+1)
		}
	}
	return order
}

// sortedByName returns 0..n-1 ordered by name (stable).
func sortedByName(n int, name func(int) string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	return idx
}
