package aws

import (
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tiler-dev/tiler/api/catalog"
)

// Accelerator kinds recorded in TypeInfo.Accelerator.
const (
	// AcceleratorNeuron is an AWS Trainium or Inferentia device (aws.amazon.com/neuron).
	AcceleratorNeuron = "neuron"
	// AcceleratorGPU is a GPU that is not NVIDIA's (e.g. AMD Radeon Pro V520 on g4ad).
	AcceleratorGPU = "gpu"
)

// Accelerator describes accelerators the simulator cannot hand out as nvidia.com/gpu.
type Accelerator struct {
	Kind         string
	Manufacturer string
	// Name is EC2's device name, e.g. "Trainium", "Inferentia2", "Radeon Pro V520".
	Name  string
	Count int
	// CoresPerDevice is the NeuronCore count of one Neuron device; 0 for GPUs.
	CoresPerDevice int
	// MemoryMiB is the memory of one device.
	MemoryMiB int64
}

// a100LargeMiB separates the 80 GB A100 (p4de, 81920 MiB) from the 40 GB one (p4d, 40960 MiB);
// EC2 calls both "A100".
const a100LargeMiB = 65536

// GPUModelName maps EC2's NVIDIA GPU name and per-GPU memory to the catalog's model name:
// A100 becomes A100-40GB or A100-80GB by memory; other names (A10G, L4, L40S, T4, H100, H200,
// V100) are already the catalog's, and unknown ones keep EC2's name with spaces as dashes.
func GPUModelName(ec2Name string, memoryMiB int64) string {
	if ec2Name == "A100" {
		if memoryMiB >= a100LargeMiB {
			return "A100-80GB"
		}
		return "A100-40GB"
	}
	return strings.ReplaceAll(ec2Name, " ", "-")
}

// accelerators converts EC2's gpuInfo and neuronInfo. NVIDIA GPUs go into the catalog GPU with
// their count. A fractional GPU (g6f, gr6f: EC2 reports count 0 and a partition size) keeps its
// model and partition memory with count 0, because the simulator can only hand out whole
// nvidia.com/gpu devices. Neuron devices and non-NVIDIA GPUs are recorded in the Accelerator and
// appear in the catalog GPU as model "neuron-<name>" or "<manufacturer>-<name>" with count 0:
// visible in `tiler catalog`, never counted as NVIDIA GPUs (the simulator only reads Model when
// Count is positive).
func accelerators(gi *ec2types.GpuInfo, ni *ec2types.NeuronInfo) (catalog.GPU, float64, *Accelerator) {
	if ni != nil && len(ni.NeuronDevices) > 0 {
		return neuron(ni.NeuronDevices[0])
	}
	if gi == nil || len(gi.Gpus) == 0 {
		return catalog.GPU{}, 0, nil
	}
	d := gi.Gpus[0] // every EC2 type has one kind of GPU
	name, maker := awssdk.ToString(d.Name), awssdk.ToString(d.Manufacturer)
	mem := int64(0)
	if d.MemoryInfo != nil {
		mem = int64(awssdk.ToInt32(d.MemoryInfo.SizeInMiB))
	}
	count := int(awssdk.ToInt32(d.Count))
	if !strings.EqualFold(maker, "NVIDIA") {
		model := strings.ToLower(strings.ReplaceAll(maker+"-"+name, " ", "-"))
		return catalog.GPU{Model: model, MemoryMiB: mem}, 0,
			&Accelerator{Kind: AcceleratorGPU, Manufacturer: maker, Name: name, Count: count, MemoryMiB: mem}
	}
	// The model's facts (catalog.GPUFacts) with EC2's count and memory, which describe this type.
	gpu, _ := catalog.GPUFacts(GPUModelName(name, mem))
	gpu.Count, gpu.MemoryMiB = count, mem
	partition := 0.0
	if count == 0 {
		partition = awssdk.ToFloat64(d.GpuPartitionSize)
	}
	return gpu, partition, nil
}

func neuron(d ec2types.NeuronDeviceInfo) (catalog.GPU, float64, *Accelerator) {
	name := awssdk.ToString(d.Name)
	acc := &Accelerator{Kind: AcceleratorNeuron, Manufacturer: "AWS", Name: name, Count: int(awssdk.ToInt32(d.Count))}
	if d.CoreInfo != nil {
		acc.CoresPerDevice = int(awssdk.ToInt32(d.CoreInfo.Count))
	}
	if d.MemoryInfo != nil {
		acc.MemoryMiB = int64(awssdk.ToInt32(d.MemoryInfo.SizeInMiB))
	}
	model := "neuron-" + strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	return catalog.GPU{Model: model, MemoryMiB: acc.MemoryMiB}, 0, acc
}
