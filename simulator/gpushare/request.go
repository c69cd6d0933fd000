package gpushare

import (
	"errors"
	"fmt"
	"strings"
)

// MilliPerGPU is the share of one whole GPU: fractional requests ask for 1..999 of it.
const MilliPerGPU = 1000

// Request is what one pending pod asks of a node.
type Request struct {
	// CPUMilli is the CPU request in milli-cores.
	CPUMilli int64
	// MemoryMiB is the memory request in MiB.
	MemoryMiB int64
	// NumGPUs is the number of GPUs: 0 for a CPU-only pod, 1 for a fractional or one whole GPU,
	// more for a multi-GPU pod (whole GPUs only).
	NumGPUs int
	// GPUMilli is the share of each GPU in milli-GPU: below MilliPerGPU only when NumGPUs is 1.
	GPUMilli int64
	// GPUModels lists the GPU models the pod may run on; empty means any model.
	GPUModels []string
}

// Shares reports whether the pod asks for a fraction of one GPU.
func (r Request) Shares() bool { return r.NumGPUs == 1 && r.GPUMilli < MilliPerGPU }

// CPUOnly reports whether the pod asks for no GPU.
func (r Request) CPUOnly() bool { return r.NumGPUs == 0 }

// TotalGPUMilli is the GPU the pod takes from the cluster: NumGPUs × GPUMilli.
func (r Request) TotalGPUMilli() int64 { return int64(r.NumGPUs) * r.GPUMilli }

// AcceptsModel reports whether the pod may run on GPUs of the given model. A pod that lists no
// model accepts any; a pod that lists some never runs on a node without GPUs (empty model).
func (r Request) AcceptsModel(model string) bool {
	if len(r.GPUModels) == 0 {
		return true
	}
	for _, m := range r.GPUModels {
		if m == model {
			return model != ""
		}
	}
	return false
}

// Validate reports the first field that makes the request impossible to place by any policy.
func (r Request) Validate() error {
	switch {
	case r.CPUMilli < 0:
		return errors.New("cpu_milli must not be negative")
	case r.MemoryMiB < 0:
		return errors.New("memory_mib must not be negative")
	case r.NumGPUs < 0:
		return errors.New("num_gpu must not be negative")
	case r.NumGPUs > MaxGPUsPerNode:
		return fmt.Errorf("num_gpu %d exceeds %d GPUs per node", r.NumGPUs, MaxGPUsPerNode)
	case r.NumGPUs == 0 && r.GPUMilli != 0:
		return fmt.Errorf("gpu_milli %d needs num_gpu of at least 1", r.GPUMilli)
	case r.NumGPUs > 0 && (r.GPUMilli <= 0 || r.GPUMilli > MilliPerGPU):
		return fmt.Errorf("gpu_milli %d must be in 1..%d", r.GPUMilli, MilliPerGPU)
	case r.NumGPUs > 1 && r.GPUMilli != MilliPerGPU:
		return fmt.Errorf("a %d-GPU request must ask for whole GPUs (gpu_milli %d, want %d)",
			r.NumGPUs, r.GPUMilli, MilliPerGPU)
	}
	return nil
}

// ParseGPUModels splits a gpu_spec such as "V100M16|V100M32" into model names; empty parts are
// dropped, so "" and "|" mean any model.
func ParseGPUModels(spec string) []string {
	var out []string
	for _, m := range strings.Split(spec, "|") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// String renders the request compactly for errors and test failures.
func (r Request) String() string {
	s := fmt.Sprintf("cpu=%dm mem=%dMiB", r.CPUMilli, r.MemoryMiB)
	if r.NumGPUs > 0 {
		s += fmt.Sprintf(" gpu=%dx%dm", r.NumGPUs, r.GPUMilli)
	}
	if len(r.GPUModels) > 0 {
		s += " models=" + strings.Join(r.GPUModels, "|")
	}
	return s
}
