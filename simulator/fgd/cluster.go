package fgd

import (
	"fmt"
	"math/rand"
	"slices"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// cluster is the fixed set of nodes of one run with the caches that make placing a pod cost
// about one table lookup per node: scorers are pure functions of (node, pod), so a score stays
// valid until the node changes, and pods come in a few hundred distinct shapes.
type cluster struct {
	nodes   []gpushare.NodeState
	version []uint32  // bumped on every change of nodes[i]; 0 never matches a cache entry
	frag    []float64 // fragmentation of nodes[i] against the run's mix (for the report)
	// fragTotal is Σ frag, kept up to date incrementally.
	fragTotal float64
	mix       *gpushare.PodMix
	// shapes[k] are the candidate nodes (GPU model allowed) and score cache of shape k.
	shapes []shapeCache
	// rank is each node's position in the scheduler's node order (Arrivals.NodeRank).
	rank     []int
	tieBreak TieBreak
}

type shapeCache struct {
	candidates []int32
	entries    []cacheEntry // per node index
}

type cacheEntry struct {
	version uint32
	ok      bool
	gpus    gpushare.GPUSet
	score   float64
}

func newCluster(nodes []Node, mix *gpushare.PodMix, numShapes int, rank []int, tb TieBreak) (*cluster, error) {
	c := &cluster{
		rank:     rank,
		tieBreak: tb,
		nodes:    make([]gpushare.NodeState, len(nodes)),
		version:  make([]uint32, len(nodes)),
		frag:     make([]float64, len(nodes)),
		mix:      mix,
		shapes:   make([]shapeCache, numShapes),
	}
	for i, n := range nodes {
		st, err := gpushare.NewNodeState(n.Name, n.Model, n.CPUMilli, n.MemoryMiB, n.GPUs)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", n.Name, err)
		}
		c.nodes[i], c.version[i] = st, 1
		c.frag[i] = mix.Fragmentation(&c.nodes[i])
		c.fragTotal += c.frag[i]
	}
	return c, nil
}

// candidates lists, once per shape, the nodes whose GPU model the pod accepts: the index by GPU
// model that keeps gpu_spec pods from scanning the whole cluster.
func (c *cluster) candidates(shape int, pod gpushare.Request) []int32 {
	sc := &c.shapes[shape]
	if sc.entries == nil {
		sc.entries = make([]cacheEntry, len(c.nodes))
		for i := range c.nodes {
			if pod.NumGPUs == 0 || (c.nodes[i].NumGPUs > 0 && pod.AcceptsModel(c.nodes[i].Model)) {
				sc.candidates = append(sc.candidates, int32(i))
			}
		}
		slices.SortFunc(sc.candidates, func(a, b int32) int { return c.rank[a] - c.rank[b] })
	}
	return sc.candidates
}

// place scores every candidate node in the scheduler's node order, picks the best and assigns
// the pod; it returns false when no node fits. Ties go to the first node in that order
// (TieByNodeOrder) or to one drawn uniformly from rng (TieRandom: reservoir sampling, as stock
// kube-scheduler's selectHost).
func (c *cluster) place(shape int, pod gpushare.Request, scorer gpushare.Scorer, rng *rand.Rand) (bool, error) {
	cands := c.candidates(shape, pod)
	entries := c.shapes[shape].entries
	best, ties := -1, 0
	var bestScore float64
	for _, ni := range cands {
		n := int(ni)
		e := &entries[n]
		if e.version != c.version[n] {
			s, g, ok := scorer.Score(&c.nodes[n], pod)
			*e = cacheEntry{version: c.version[n], ok: ok, gpus: g, score: s}
		}
		switch {
		case !e.ok:
		case best < 0 || e.score > bestScore:
			best, bestScore, ties = n, e.score, 1
		case e.score == bestScore && c.tieBreak == TieByNodeOrder:
		case e.score == bestScore:
			ties++
			if rng.Intn(ties) == 0 {
				best = n
			}
		}
	}
	if best < 0 {
		return false, nil
	}
	if err := c.nodes[best].Assign(pod, entries[best].gpus); err != nil {
		return false, fmt.Errorf("scorer %s: %w", scorer.Name(), err)
	}
	c.version[best]++
	f := c.mix.Fragmentation(&c.nodes[best])
	c.fragTotal += f - c.frag[best]
	c.frag[best] = f
	return true, nil
}
