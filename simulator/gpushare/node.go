package gpushare

import (
	"errors"
	"fmt"
	"math/bits"
)

// MaxGPUsPerNode bounds the GPUs of one node so that a NodeState is a fixed-size value that can
// be copied (forked) without allocating. Sixteen covers every GPU server sold today.
const MaxGPUsPerNode = 16

// GPUSet is a set of GPU indexes on one node: bit i stands for GPU i.
type GPUSet uint32

// Has reports whether GPU i is in the set.
func (s GPUSet) Has(i int) bool { return i >= 0 && i < 32 && s&(1<<uint(i)) != 0 }

// With returns the set with GPU i added.
func (s GPUSet) With(i int) GPUSet { return s | 1<<uint(i) }

// Len is the number of GPUs in the set.
func (s GPUSet) Len() int { return bits.OnesCount32(uint32(s)) }

// Indices lists the GPU indexes in increasing order. It allocates; the packing loop uses Has.
func (s GPUSet) Indices() []int {
	out := make([]int, 0, s.Len())
	for i := 0; i < 32; i++ {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// NodeState is the free capacity of one node. It is a plain value: copy it to try a placement
// and throw the copy away to revert.
type NodeState struct {
	// Name identifies the node in results; scorers ignore it.
	Name string
	// Model is the GPU model of every GPU on the node; empty for a node without GPUs.
	Model string
	// CPUMilliCapacity and CPUMilliFree are the allocatable and unrequested CPU in milli-cores.
	CPUMilliCapacity, CPUMilliFree int64
	// MemoryMiBCapacity and MemoryMiBFree are the allocatable and unrequested memory in MiB.
	MemoryMiBCapacity, MemoryMiBFree int64
	// NumGPUs is the number of GPUs; only GPUMilliFree[:NumGPUs] is meaningful.
	NumGPUs int
	// GPUMilliFree is the free share of each GPU in milli-GPU (0..MilliPerGPU).
	GPUMilliFree [MaxGPUsPerNode]int64
}

// NewNodeState returns an empty node: all CPU, memory and GPUs free.
func NewNodeState(name, model string, cpuMilli, memoryMiB int64, numGPUs int) (NodeState, error) {
	switch {
	case cpuMilli < 0:
		return NodeState{}, errors.New("cpu_milli must not be negative")
	case memoryMiB < 0:
		return NodeState{}, errors.New("memory_mib must not be negative")
	case numGPUs < 0 || numGPUs > MaxGPUsPerNode:
		return NodeState{}, fmt.Errorf("gpu count %d must be in 0..%d", numGPUs, MaxGPUsPerNode)
	case numGPUs > 0 && model == "":
		return NodeState{}, fmt.Errorf("a node with %d GPUs needs a GPU model", numGPUs)
	}
	n := NodeState{
		Name: name, Model: model,
		CPUMilliCapacity: cpuMilli, CPUMilliFree: cpuMilli,
		MemoryMiBCapacity: memoryMiB, MemoryMiBFree: memoryMiB,
		NumGPUs: numGPUs,
	}
	for i := 0; i < numGPUs; i++ {
		n.GPUMilliFree[i] = MilliPerGPU
	}
	return n, nil
}

// GPUMilliCapacity is NumGPUs × MilliPerGPU.
func (n *NodeState) GPUMilliCapacity() int64 { return int64(n.NumGPUs) * MilliPerGPU }

// GPUMilliFreeTotal is the free GPU share summed over the node's GPUs.
func (n *NodeState) GPUMilliFreeTotal() int64 {
	var t int64
	for i := 0; i < n.NumGPUs; i++ {
		t += n.GPUMilliFree[i]
	}
	return t
}

// FullyFreeGPUs counts the GPUs nobody uses.
func (n *NodeState) FullyFreeGPUs() int {
	c := 0
	for i := 0; i < n.NumGPUs; i++ {
		if n.GPUMilliFree[i] == MilliPerGPU {
			c++
		}
	}
	return c
}

// Fits reports whether the pod can be placed on the node at all: CPU, memory, GPU model and GPU
// capacity (one GPU with GPUMilli free for a fractional pod, NumGPUs fully free GPUs otherwise).
func (n *NodeState) Fits(pod Request) bool {
	if pod.CPUMilli > n.CPUMilliFree || pod.MemoryMiB > n.MemoryMiBFree {
		return false
	}
	if pod.NumGPUs == 0 {
		return true
	}
	if n.NumGPUs == 0 || !pod.AcceptsModel(n.Model) {
		return false
	}
	if pod.Shares() {
		for i := 0; i < n.NumGPUs; i++ {
			if n.GPUMilliFree[i] >= pod.GPUMilli {
				return true
			}
		}
		return false
	}
	return n.FullyFreeGPUs() >= pod.NumGPUs
}

// Assign takes the pod's CPU, memory and GPU share from the node, the share from each GPU in
// gpus. It fails, leaving the node unchanged, when the resources are not there or gpus does not
// hold exactly NumGPUs GPUs of the node.
func (n *NodeState) Assign(pod Request, gpus GPUSet) error {
	if err := n.checkAssign(pod, gpus); err != nil {
		return fmt.Errorf("assigning %s to node %q: %w", pod, n.Name, err)
	}
	n.CPUMilliFree -= pod.CPUMilli
	n.MemoryMiBFree -= pod.MemoryMiB
	for i := 0; i < n.NumGPUs; i++ {
		if gpus.Has(i) {
			n.GPUMilliFree[i] -= pod.GPUMilli
		}
	}
	return nil
}

func (n *NodeState) checkAssign(pod Request, gpus GPUSet) error {
	if pod.CPUMilli > n.CPUMilliFree {
		return fmt.Errorf("cpu: %dm requested, %dm free", pod.CPUMilli, n.CPUMilliFree)
	}
	if pod.MemoryMiB > n.MemoryMiBFree {
		return fmt.Errorf("memory: %dMiB requested, %dMiB free", pod.MemoryMiB, n.MemoryMiBFree)
	}
	if gpus.Len() != pod.NumGPUs || gpus>>uint(n.NumGPUs) != 0 {
		return fmt.Errorf("gpu set %v does not name %d of the node's %d GPUs", gpus.Indices(), pod.NumGPUs, n.NumGPUs)
	}
	if pod.NumGPUs > 0 && !pod.AcceptsModel(n.Model) {
		return fmt.Errorf("gpu model %q not allowed", n.Model)
	}
	for i := 0; i < n.NumGPUs; i++ {
		if gpus.Has(i) && n.GPUMilliFree[i] < pod.GPUMilli {
			return fmt.Errorf("gpu %d: %dm requested, %dm free", i, pod.GPUMilli, n.GPUMilliFree[i])
		}
	}
	return nil
}

// Release gives back what Assign took, so that a tried placement can be reverted in place.
func (n *NodeState) Release(pod Request, gpus GPUSet) error {
	if gpus.Len() != pod.NumGPUs || gpus>>uint(n.NumGPUs) != 0 {
		return fmt.Errorf("releasing %s from node %q: gpu set %v does not match", pod, n.Name, gpus.Indices())
	}
	for i := 0; i < n.NumGPUs; i++ {
		if gpus.Has(i) && n.GPUMilliFree[i]+pod.GPUMilli > MilliPerGPU {
			return fmt.Errorf("releasing %s from node %q: gpu %d would exceed %d milli", pod, n.Name, i, MilliPerGPU)
		}
	}
	n.CPUMilliFree += pod.CPUMilli
	n.MemoryMiBFree += pod.MemoryMiB
	for i := 0; i < n.NumGPUs; i++ {
		if gpus.Has(i) {
			n.GPUMilliFree[i] += pod.GPUMilli
		}
	}
	return nil
}

// firstFullGPUs picks the lowest-indexed count fully free GPUs, as the paper's
// AllocateExclusiveGpuId does; ok is false when there are fewer.
func (n *NodeState) firstFullGPUs(count int) (set GPUSet, ok bool) {
	for i := 0; i < n.NumGPUs && count > 0; i++ {
		if n.GPUMilliFree[i] == MilliPerGPU {
			set = set.With(i)
			count--
		}
	}
	return set, count == 0
}

// tightestGPU picks the GPU with the least free share that still holds milli, the lowest index
// on ties (the paper's "best" GPU selection); ok is false when no GPU holds it.
func (n *NodeState) tightestGPU(milli int64) (idx int, ok bool) {
	idx = -1
	for i := 0; i < n.NumGPUs; i++ {
		if f := n.GPUMilliFree[i]; f >= milli && (idx < 0 || f < n.GPUMilliFree[idx]) {
			idx = i
		}
	}
	return idx, idx >= 0
}
