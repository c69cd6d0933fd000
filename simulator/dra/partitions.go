package dra

import (
	"fmt"
	"strings"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// Dynamic MIG: what the driver publishes with its DynamicMIG feature gate (KEP-4815 partitionable
// devices), following testdata/dra/resourceslice-dynamic-mig-a100-40gb.constructed.yaml:
//   - one CounterSet per GPU, "gpu-<i>-counter-set", with one counter per capacity dimension and
//     one "memory-slice-<s>" counter (value 1) per memory slot;
//   - one device per (profile, placement), "gpu-<i>-mig-<profile without dots>-<id>-<start>",
//     consuming its capacities and the memory slots [start, start+size) from that set;
//   - on Ampere the full GPU is not published (MIG mode cannot change without a GPU reset); on
//     Hopper and newer the full GPU is published too and consumes every counter.

// engines are the per-profile engine and SM counts the driver publishes as capacities. The
// profile table has none of them; engineTables holds the only model family with sourced values.
type engines struct {
	copyEngines, decoders, encoders, jpegEngines, ofaEngines, multiprocessors int64
}

// shape identifies a profile independent of its memory size: compute slices, memory slots and
// whether it carries the media extensions.
type shape struct {
	compute, slots int
	media          bool
}

// ga100Engines are the A100 (GA100) values of the constructed A100-40GB example, which takes
// them from the NVIDIA MIG User Guide and NVIDIA/go-nvml's a100 mock: 14 SMs per compute slice;
// the media engines (one JPEG, one OFA) only in +me and the full 7g instance. A100-80GB is the
// same chip with the same profile shapes.
var ga100Engines = map[shape]engines{
	{1, 1, false}: {copyEngines: 1, multiprocessors: 14},
	{1, 1, true}:  {copyEngines: 1, decoders: 1, jpegEngines: 1, ofaEngines: 1, multiprocessors: 14},
	{1, 2, false}: {copyEngines: 1, decoders: 1, multiprocessors: 14},
	{2, 2, false}: {copyEngines: 2, decoders: 1, multiprocessors: 28},
	{3, 4, false}: {copyEngines: 3, decoders: 2, multiprocessors: 42},
	{4, 4, false}: {copyEngines: 4, decoders: 2, multiprocessors: 56},
	{7, 8, false}: {copyEngines: 7, decoders: 5, jpegEngines: 1, ofaEngines: 1, multiprocessors: 98},
}

// engineTable returns the engine counts for the model's profiles, or nil when none are sourced.
// Without them the devices carry only memory, and +me profiles are left out: nothing else
// would limit them to the one per GPU that the hardware allows.
func engineTable(m *migGPU) map[shape]engines {
	if m.architecture == "Ampere" && m.totalComputeSlices == 7 && m.totalMemorySlots == 8 {
		return ga100Engines
	}
	return nil
}

// profileIDs are nvidia-smi's GPU-instance profile IDs (nvidia-smi mig -lgip), which the driver
// puts in device names. They depend on the profile shape and the GPU's slot count; the values are
// those mig-profiles.yaml confirms for A100, H100, H200 and A30 (partitions_test.go checks every
// ID the table lists). Models whose IDs the table does not confirm (GH200-144GB, B200) get the
// ID of the same shape on H100.
var profileIDs = map[int]map[shape]int{
	8: {{1, 1, false}: 19, {1, 1, true}: 20, {1, 2, false}: 15, {2, 2, false}: 14,
		{3, 4, false}: 9, {4, 4, false}: 5, {7, 8, false}: 0},
	4: {{1, 1, false}: 14, {1, 1, true}: 21, {2, 2, false}: 5, {2, 2, true}: 6, {4, 4, false}: 0},
}

func (p *migPartition) shape() shape {
	return shape{compute: p.computeSlices, slots: p.memorySlots, media: p.media}
}

// partitionDeviceName is the driver's ToCanonicalName: "gpu-0-mig-1g5gb-19-0",
// "gpu-0-mig-1g5gb-me-20-0". An unknown profile ID is written "na".
func partitionDeviceName(gpu int, m *migGPU, p *migPartition, start int) string {
	profile := strings.ReplaceAll(strings.ReplaceAll(p.name, ".", ""), "+", "-")
	id := "na"
	if v, ok := profileIDs[m.totalMemorySlots][p.shape()]; ok {
		id = fmt.Sprint(v)
	}
	return fmt.Sprintf("gpu-%d-mig-%s-%s-%d", gpu, profile, id, start)
}

// counterSetName is the driver's name of GPU i's counter set.
func counterSetName(gpu int) string { return fmt.Sprintf("gpu-%d-counter-set", gpu) }

// memorySliceCounter is the counter of one memory slot.
func memorySliceCounter(slot int) string { return fmt.Sprintf("memory-slice-%d", slot) }

// partitionCapacity is what one instance of p offers: its memory and, where sourced, its engines.
func partitionCapacity(p *migPartition, eng map[shape]engines) map[resourcev1.QualifiedName]resourcev1.DeviceCapacity {
	out := map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
		capacityMemory: {Value: mebibytes(p.memoryMiB)},
	}
	if eng == nil {
		return out
	}
	e := eng[p.shape()]
	for name, v := range map[resourcev1.QualifiedName]int64{
		"copyEngines": e.copyEngines, "decoders": e.decoders, "encoders": e.encoders,
		"jpegEngines": e.jpegEngines, "ofaEngines": e.ofaEngines, "multiprocessors": e.multiprocessors,
	} {
		out[name] = resourcev1.DeviceCapacity{Value: *resource.NewQuantity(v, resource.DecimalSI)}
	}
	return out
}

// counterName turns a camelCase capacity name into the DNS-label counter name the driver uses
// (capacitiesToCounters): "copyEngines" → "copy-engines".
func counterName(capacity resourcev1.QualifiedName) string {
	var b strings.Builder
	for _, r := range string(capacity) {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// counterSet is GPU i's shared counters: the per-dimension maximum over the published profiles
// (the driver's rule) plus one counter per memory slot.
//
// The memory counter is raised where needed to the memory the densest profile would need on
// every slot (max over profiles of ⌈memory·slots_total/slots⌉). With NVML's numbers that equals
// the largest profile (A100: 40192Mi), as in the driver; with the nominal sizes the table holds
// for some models (H200: 2 × 3g.71gb = 142 GiB > 7g.141gb) the driver's rule would reject
// layouts the memory slots allow. The slots still encode which instances may coexist.
func counterSet(gpu int, m *migGPU, parts []migPartition, eng map[shape]engines) resourcev1.CounterSet {
	counters := map[string]resourcev1.Counter{}
	for i := range parts {
		for name, c := range partitionCapacity(&parts[i], eng) {
			key := counterName(name)
			if old, ok := counters[key]; !ok || c.Value.Cmp(old.Value) > 0 {
				counters[key] = resourcev1.Counter{Value: c.Value}
			}
		}
	}
	var dense int64
	for _, p := range parts {
		dense = max(dense, (p.memoryMiB*int64(m.totalMemorySlots)+int64(p.memorySlots)-1)/int64(p.memorySlots))
	}
	if need := mebibytes(dense); need.Cmp(counters["memory"].Value) > 0 {
		counters["memory"] = resourcev1.Counter{Value: need}
	}
	for s := range m.totalMemorySlots {
		counters[memorySliceCounter(s)] = resourcev1.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return resourcev1.CounterSet{Name: counterSetName(gpu), Counters: counters}
}

// partitionDevices lists GPU i's MIG devices, one per profile and allowed start slot, in the
// table's profile order and by start slot.
func partitionDevices(gpu int, attrs gpuAttributes, m *migGPU, parts []migPartition, eng map[shape]engines) []resourcev1.Device {
	var out []resourcev1.Device
	for i := range parts {
		p := &parts[i]
		capacity := partitionCapacity(p, eng)
		for _, start := range p.starts {
			consumes := map[string]resourcev1.Counter{}
			for name, c := range capacity {
				consumes[counterName(name)] = resourcev1.Counter{Value: c.Value}
			}
			for s := start; s < start+p.memorySlots; s++ {
				consumes[memorySliceCounter(s)] = resourcev1.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
			}
			out = append(out, resourcev1.Device{
				Name:       partitionDeviceName(gpu, m, p, start),
				Attributes: attrs.mig(p.name),
				Capacity:   copyCapacity(capacity),
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{{
					CounterSet: counterSetName(gpu), Counters: consumes,
				}},
			})
		}
	}
	return out
}

// publishedPartitions drops the +me profiles when the model has no engine counts (see
// engineTable).
func publishedPartitions(m *migGPU, eng map[shape]engines) []migPartition {
	var out []migPartition
	for _, p := range m.partitions {
		if p.media && eng == nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// consumeAll makes a full-GPU device consume every counter of its GPU's set, so that it excludes
// and is excluded by any partition (the driver's PartConsumesCounters).
func consumeAll(set resourcev1.CounterSet) []resourcev1.DeviceCounterConsumption {
	counters := make(map[string]resourcev1.Counter, len(set.Counters))
	for k, v := range set.Counters {
		counters[k] = v
	}
	return []resourcev1.DeviceCounterConsumption{{CounterSet: set.Name, Counters: counters}}
}

func copyCapacity(in map[resourcev1.QualifiedName]resourcev1.DeviceCapacity) map[resourcev1.QualifiedName]resourcev1.DeviceCapacity {
	out := make(map[resourcev1.QualifiedName]resourcev1.DeviceCapacity, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// The MIG facts (profiles, memory slots, placements, memory sizes) come from simulator/mig's
// table of testdata/catalog/mig-profiles.yaml; the code below is the only place that reads it.
// What the driver publishes and the table does not hold — the nvidia-smi GPU-instance profile
// ID used in device names and the engine counts of each profile — is above.

// migTable loads the MIG profile table once; it is read-only afterwards. Loading derives every
// model's layouts (about 0.1 s), which is why it is not repeated per Slices call.
var migTable = sync.OnceValues(mig.Load)

// migPartition is one MIG profile of a GPU model as the driver publishes it.
type migPartition struct {
	// name is the profile name, e.g. "1g.5gb" or "1g.5gb+me".
	name string
	// computeSlices is the "Ng" prefix; memorySlots the number of memory slots it occupies.
	computeSlices, memorySlots int
	// memoryMiB is the memory the driver reports for an instance of the profile.
	memoryMiB int64
	// starts are the memory slots an instance may start at.
	starts []int
	// media marks a +me profile (media extensions).
	media bool
}

// migGPU is the MIG description of one GPU model.
type migGPU struct {
	model              string
	architecture       string
	totalComputeSlices int
	totalMemorySlots   int
	partitions         []migPartition
}

// migModelFor returns the MIG description of the instance type's GPU, or false when the GPU has
// no MIG (L4, T4, ...). It looks the catalog model up first ("A100-40GB"), then the product name
// the driver reports ("NVIDIA A100-SXM4-40GB").
func migModelFor(gpu *catalog.GPU) (*migGPU, bool, error) {
	table, err := migTable()
	if err != nil {
		return nil, false, fmt.Errorf("loading the MIG profile table: %w", err)
	}
	m, ok := table.Model(gpu.Model)
	if !ok && gpu.Product != "" {
		m, ok = table.Model(gpu.Product)
	}
	if !ok {
		return nil, false, nil
	}
	out := &migGPU{model: m.Model, architecture: m.Architecture,
		totalComputeSlices: m.TotalComputeSlices, totalMemorySlots: m.TotalMemorySlots}
	for i := range m.Profiles {
		p := &m.Profiles[i]
		out.partitions = append(out.partitions, migPartition{
			name:          string(p.Name),
			computeSlices: p.ComputeSlices,
			memorySlots:   p.Size,
			memoryMiB:     profileMemoryMiB(p),
			starts:        p.Starts,
			media:         p.MediaExtensions,
		})
	}
	return out, true, nil
}

// profileMemoryMiB is the memory NVML reports for an instance: the captured nvidia-smi value
// where the table has one (it is NVML's number), else the table's MemoryMiB (NVML's
// MemorySizeMB where sourced, else the nominal size from the name, which overstates usable
// memory slightly).
func profileMemoryMiB(p *mig.Profile) int64 {
	if p.ObservedMemoryMiB > 0 {
		return p.ObservedMemoryMiB
	}
	return p.MemoryMiB
}
