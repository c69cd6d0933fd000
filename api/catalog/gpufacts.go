package catalog

// gpuFacts are the facts of the catalog's GPU models: what the NVIDIA driver and GPU feature
// discovery report (product name; architecture and compute capability as NVIDIA publishes them)
// and the memory of one GPU as testdata/catalog/gpu-catalog.csv lists it. The catalog generator
// and the AWS and GCP catalog discovery all read them here, so a model is described once.
var gpuFacts = map[string]GPU{
	"A100-40GB": {MemoryMiB: 40960, Product: "NVIDIA A100-SXM4-40GB", Architecture: "Ampere", CUDAComputeCapability: "8.0"},
	"A100-80GB": {MemoryMiB: 81920, Product: "NVIDIA A100-SXM4-80GB", Architecture: "Ampere", CUDAComputeCapability: "8.0"},
	"A10G":      {MemoryMiB: 24576, Product: "NVIDIA A10G", Architecture: "Ampere", CUDAComputeCapability: "8.6"},
	"L4":        {MemoryMiB: 24576, Product: "NVIDIA L4", Architecture: "Ada Lovelace", CUDAComputeCapability: "8.9"},
	"L40S":      {MemoryMiB: 49152, Product: "NVIDIA L40S", Architecture: "Ada Lovelace", CUDAComputeCapability: "8.9"},
	"T4":        {MemoryMiB: 16384, Product: "Tesla T4", Architecture: "Turing", CUDAComputeCapability: "7.5"},
	"V100":      {MemoryMiB: 16384, Product: "Tesla V100-SXM2-16GB", Architecture: "Volta", CUDAComputeCapability: "7.0"},
	// EC2 calls the p5 GPU "H100"; GCE's A3 High is H100-80GB and A3 Mega, the same GPU with more
	// network bandwidth, H100-80GB-Mega so that pools can choose it.
	"H100":           {MemoryMiB: 81920, Product: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
	"H100-80GB":      {MemoryMiB: 81920, Product: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
	"H100-80GB-Mega": {MemoryMiB: 81920, Product: "NVIDIA H100 80GB HBM3", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
	"H200":           {MemoryMiB: 144384, Product: "NVIDIA H200", Architecture: "Hopper", CUDAComputeCapability: "9.0"},
}

// GPUFacts returns the catalog GPU of one GPU of model (a catalog model name such as "A100-40GB",
// "L4" or "H100"): Model, MemoryMiB, Product, Architecture and CUDAComputeCapability, with Count
// zero. It reports false for a model it does not know; the GPU then has only Model set.
func GPUFacts(model string) (GPU, bool) {
	g, ok := gpuFacts[model]
	g.Model = model
	return g, ok
}
