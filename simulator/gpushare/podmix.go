package gpushare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultMixCoveragePct is the share of pods the FGD paper's typical-pod list covers
// (podPopularityThreshold: 95 in its experiment scripts).
const DefaultMixCoveragePct = 95

// PodShape is the part of a pod that fragmentation looks at. Memory is not part of it, as in
// the FGD paper, whose fragmentation measure counts CPU and GPU only.
type PodShape struct {
	// CPUMilli is the CPU request in milli-cores.
	CPUMilli int64
	// NumGPUs and GPUMilli are as in Request; both are 0 for a CPU-only pod.
	NumGPUs  int
	GPUMilli int64
	// GPUModels is the allowed models joined by "|"; empty means any.
	GPUModels string
}

// ShapeOf returns the shape of a request. A CPU-only pod keeps no GPU models.
func ShapeOf(r Request) PodShape {
	s := PodShape{CPUMilli: r.CPUMilli, NumGPUs: r.NumGPUs, GPUMilli: r.GPUMilli}
	if r.NumGPUs > 0 {
		s.GPUModels = strings.Join(r.GPUModels, "|")
	}
	return s
}

// MixEntry is one typical pod shape and its probability in the mix.
type MixEntry struct {
	Shape  PodShape
	Weight float64
}

// PodMix is the "typical pods" distribution of the FGD paper: the pod shapes expected to arrive
// with their probabilities. Fragmentation is measured against it.
type PodMix struct {
	entries []mixEntry
}

type mixEntry struct {
	MixEntry
	models []string
}

// NewPodMix builds the paper's typical-pod list (GetTypicalPods with isInvolvedCpuPods=true,
// gpuResWeight=0, podIncreaseStep=1): count pods per shape, sort by count (descending; equal
// counts by shape, larger CPU then GPU share, GPU count and models first), keep the most common
// shapes until they cover coveragePct percent of the pods, and renormalise their weights to sum
// to 1. coveragePct of 100 keeps every shape.
func NewPodMix(pods []Request, coveragePct float64) (PodMix, error) {
	if len(pods) == 0 {
		return PodMix{}, errors.New("pod mix: no pods")
	}
	if coveragePct <= 0 || coveragePct > 100 {
		return PodMix{}, fmt.Errorf("pod mix: coverage %.2f%% must be in (0, 100]", coveragePct)
	}
	counts := map[PodShape]float64{}
	for _, p := range pods {
		counts[ShapeOf(p)]++
	}
	list := make([]MixEntry, 0, len(counts))
	for s, c := range counts {
		list = append(list, MixEntry{Shape: s, Weight: c})
	}
	slices.SortFunc(list, func(a, b MixEntry) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return compareShapes(b.Shape, a.Shape)
	})
	total := float64(len(pods))
	expected := coveragePct * total / 100
	kept, cum := 0, 0.0
	for cum < expected && kept < len(list) {
		cum += list[kept].Weight
		kept++
	}
	list = list[:kept]
	for i := range list {
		list[i].Weight = list[i].Weight / total / (cum / total)
	}
	return NewPodMixFromWeights(list)
}

// compareShapes orders shapes as the paper's PodResource.Less: CPU, GPU share, GPU count, models.
func compareShapes(a, b PodShape) int {
	return cmp.Or(cmp.Compare(a.CPUMilli, b.CPUMilli), cmp.Compare(a.GPUMilli, b.GPUMilli),
		cmp.Compare(a.NumGPUs, b.NumGPUs), cmp.Compare(a.GPUModels, b.GPUModels))
}

// NewPodMixFromWeights builds a mix from explicit shapes and probabilities, for callers that know
// their pending-pod distribution. Weights must be non-negative and sum to 1 (±0.001).
func NewPodMixFromWeights(entries []MixEntry) (PodMix, error) {
	var sum float64
	m := PodMix{entries: make([]mixEntry, 0, len(entries))}
	for i, e := range entries {
		if e.Weight < 0 || math.IsNaN(e.Weight) {
			return PodMix{}, fmt.Errorf("pod mix entry %d: weight %v must not be negative", i, e.Weight)
		}
		sum += e.Weight
		m.entries = append(m.entries, mixEntry{MixEntry: e, models: ParseGPUModels(e.Shape.GPUModels)})
	}
	if len(entries) == 0 || math.Abs(sum-1) > 1e-3 {
		return PodMix{}, fmt.Errorf("pod mix: weights sum to %.4f, want 1", sum)
	}
	return m, nil
}

// Entries returns a copy of the mix, most likely shape first.
func (m PodMix) Entries() []MixEntry {
	out := make([]MixEntry, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.MixEntry
	}
	return out
}

// Len is the number of shapes in the mix.
func (m PodMix) Len() int { return len(m.entries) }
