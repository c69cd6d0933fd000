package catalog

// DefaultMaxPods is the kubelet's default pod limit, which Karpenter also uses when ENI-limited
// pod density is off. The source data has no ENI limits, so every type gets it.
const DefaultMaxPods = 110

// evictionHardMemoryMiB is the kubelet's default hard eviction threshold (memory.available<100Mi).
const evictionHardMemoryMiB = 100

// Overhead is what the kubelet, the system and eviction thresholds keep from a node's capacity.
type Overhead struct {
	CPUMilli  int64
	MemoryMiB int64
}

// OverheadFor returns the reserved resources of an instance type under the provider's documented
// formula.
//
// CPU (EKS AMI bootstrap, Karpenter and GKE agree): 6% of the first core, 1% of the second,
// 0.5% of the third and fourth, 0.25% of every core above four.
//
// Memory on AWS (EKS AMI, Karpenter): 11 MiB per pod of max pods + 255 MiB, plus the 100 MiB hard
// eviction threshold. Memory on GCP (GKE): 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of
// the next 8 GiB, 6% of the next 112 GiB, 2% above 128 GiB (255 MiB below 1 GiB), plus 100 MiB
// eviction.
func OverheadFor(provider string, t *InstanceType) Overhead {
	var mem int64
	switch provider {
	case "gcp":
		mem = gkeMemoryReservedMiB(t.MemoryMiB)
	default:
		mem = 11*int64(t.maxPods()) + 255
	}
	return Overhead{CPUMilli: cpuReservedMilli(t.VCPU), MemoryMiB: mem + evictionHardMemoryMiB}
}

// cpuReservedMilli implements the tiered CPU reservation: 60m + 10m + 2×5m + 2.5m per core above 4.
func cpuReservedMilli(vcpu int) int64 {
	tiers := []struct {
		cores    int
		permille int64 // tenths of a percent, in milli-CPU per core: 6% = 60m
	}{{1, 60}, {1, 10}, {2, 5}}
	var reserved int64
	left := vcpu
	for _, t := range tiers {
		n := min(left, t.cores)
		reserved += int64(n) * t.permille
		left -= n
	}
	// 0.25% per core above four is 2.5m: work in tenths of milli-CPU to keep it exact, round up.
	reserved += (int64(left)*25 + 9) / 10
	return reserved
}

// gkeMemoryReservedMiB implements GKE's tiered memory reservation.
func gkeMemoryReservedMiB(memMiB int64) int64 {
	if memMiB < 1024 {
		return 255
	}
	tiers := []struct {
		sizeMiB int64
		percent int64
	}{{4 * 1024, 25}, {4 * 1024, 20}, {8 * 1024, 10}, {112 * 1024, 6}, {1 << 40, 2}}
	var reserved int64
	left := memMiB
	for _, t := range tiers {
		n := min(left, t.sizeMiB)
		reserved += n * t.percent / 100
		left -= n
	}
	return reserved
}

func (t *InstanceType) maxPods() int {
	if t.MaxPods > 0 {
		return t.MaxPods
	}
	return DefaultMaxPods
}

// Allocatable returns what the scheduler can place on a fresh node of the type: capacity minus
// the provider's overhead. GPUs are not reduced.
func Allocatable(provider string, t *InstanceType) (cpuMilli, memoryBytes int64, pods int) {
	o := OverheadFor(provider, t)
	cpuMilli = int64(t.VCPU)*1000 - o.CPUMilli
	memoryBytes = (t.MemoryMiB - o.MemoryMiB) * 1024 * 1024
	return cpuMilli, memoryBytes, t.maxPods()
}
