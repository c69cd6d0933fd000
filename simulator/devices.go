package simulator

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// GPU labels the NVIDIA GPU feature discovery and MIG manager put on nodes.
const ()

// deviceVariant is one way a node's GPUs can be exposed: the extended resources the device plugin
// advertises and the configuration that produces them.
type deviceVariant struct {
	resources corev1.ResourceList
	labels    map[string]string
	gpu       api.GPUConfig
}

var (
	migOnce  sync.Once
	migTable *mig.Table
	migErr   error
)

func loadMIG() (*mig.Table, error) {
	migOnce.Do(func() { migTable, migErr = mig.Load() })
	return migTable, migErr
}

// deviceVariants lists the GPU configurations a node of the type may be bought with in the pool:
// whole GPUs, from the device plugin or (for pending pods' ResourceClaims, or as the pool's
// gpu.driver says) the DRA driver alone; no device-plugin resource under dynamic-mig or
// consumable memory (the DRA driver alone publishes the GPUs, see dra.go); K replicas per GPU
// under time-slicing or MPS; or, under MIG, a layout per GPU — the layout that best covers the
// pending MIG demand and each homogeneous layout of a demanded profile, so that packing can
// choose among them like among instance types.
func (s *state) deviceVariants(pl *poolInfo, it *catalog.InstanceType) ([]deviceVariant, error) {
	if it.GPU.Count == 0 {
		return []deviceVariant{{}}, nil
	}
	g := pl.GPU
	consumable := g != nil && g.ConsumableMemory
	if g == nil || g.Sharing == "" || g.Sharing == api.Exclusive {
		if consumable {
			// Shared GPU memory is a DRA feature: the DRA driver publishes the GPUs and the device
			// plugin does not run, or each GPU would be handed out twice (plain nvidia.com/gpu
			// requests are served by DRA when a DeviceClass names that extended resource).
			return []deviceVariant{{gpu: api.GPUConfig{Sharing: api.Exclusive, ConsumableMemory: true}}}, nil
		}
		// One of the device plugin and the DRA driver hands out a node's GPUs, never both (each
		// would give every GPU away). Unless the pool pins one, a node runs the device plugin;
		// when pending pods have ResourceClaims, the DRA driver alone is a variant too, chosen
		// like a type — the only one when no pending pod asks for nvidia.com/gpu (the two take
		// pods without GPUs alike).
		plugin := deviceVariant{resources: corev1.ResourceList{api.ResourceGPU: qty(it.GPU.Count)},
			gpu: api.GPUConfig{Sharing: sharingOr(g, api.Exclusive)}}
		driver := deviceVariant{gpu: api.GPUConfig{Sharing: api.Exclusive, DRA: true}}
		switch {
		case g != nil && g.Driver == policy.DriverDRA:
			return []deviceVariant{driver}, nil
		case g != nil && g.Driver == policy.DriverDevicePlugin, !s.claimPods:
			return []deviceVariant{plugin}, nil
		case !s.plainGPUPods:
			return []deviceVariant{driver}, nil
		}
		return []deviceVariant{plugin, driver}, nil
	}
	switch g.Sharing {
	case api.DynamicMIG:
		// Only the DRA driver advertises the GPUs (as MIG partitions and, on Hopper and newer,
		// whole GPUs); the device plugin does not run, so nvidia.com/gpu is not allocatable.
		return []deviceVariant{{gpu: api.GPUConfig{Sharing: api.DynamicMIG, ConsumableMemory: consumable}}}, nil
	case api.TimeSlicing, api.MPS:
		k := g.Replicas
		if k == 0 {
			k = policy.DefaultReplicas
		}
		name := api.ResourceGPU
		if g.RenameShared {
			name = api.ResourceGPUShared
		}
		return []deviceVariant{{resources: corev1.ResourceList{name: qty(it.GPU.Count * k)},
			labels: map[string]string{api.LabelGPUReplicas: strconv.Itoa(k), api.LabelSharingStrategy: string(g.Sharing)},
			gpu:    api.GPUConfig{Sharing: g.Sharing, Replicas: k, RenameShared: g.RenameShared}}}, nil
	}
	return s.migVariants(pl, it)
}

func sharingOr(g *policy.GPUPolicy, d api.Sharing) api.Sharing {
	if g != nil && g.Sharing != "" {
		return g.Sharing
	}
	return d
}

func qty(n int) resource.Quantity { return *resource.NewQuantity(int64(n), resource.DecimalSI) }

// migVariants builds the MIG variants of a GPU type (none when the GPU model has no MIG).
func (s *state) migVariants(pl *poolInfo, it *catalog.InstanceType) ([]deviceVariant, error) {
	tab, err := loadMIG()
	if err != nil {
		return nil, fmt.Errorf("loading the MIG profile table: %w", err)
	}
	m, ok := tab.Model(it.GPU.Model)
	if !ok {
		return nil, nil
	}
	var allowed []mig.Layout
	for i, spec := range pl.GPU.MIGLayouts {
		ls, err := mig.ParseLayoutSpec(m, spec)
		if err != nil {
			return nil, fmt.Errorf("policy: pools[%d] (%s): gpu.migLayouts[%d]: %w", pl.index, pl.Name, i, err)
		}
		allowed = append(allowed, ls...)
	}
	demand := s.migDemand(m)
	plans := [][]mig.Layout{}
	// A node of one variant carries the same per-GPU layouts as every other node of it, so
	// demand larger than a node also gets the plan of what the node before leaves over: the
	// packer can then open a node of the first layouts and one of the remainder's (each GPU
	// its own layout) instead of more nodes of the first. The chain stops when everything is
	// covered, nothing more fits, or after maxMIGRemainderPlans nodes.
	for rest, k := demand, 0; len(rest) > 0 && k < maxMIGRemainderPlans; k++ {
		perGPU, left := m.Plan(rest, it.GPU.Count, allowed)
		plans = append(plans, perGPU)
		if demandTotal(left) >= demandTotal(rest) {
			break
		}
		rest = left
	}
	for _, p := range sortedProfiles(demand) {
		perGPU, _ := m.Plan(map[mig.MIGProfile]int{p: 7 * it.GPU.Count}, it.GPU.Count, allowed)
		plans = append(plans, perGPU)
	}
	if len(plans) == 0 {
		perGPU, _ := m.Plan(nil, it.GPU.Count, allowed)
		plans = append(plans, perGPU)
	}
	var out []deviceVariant
	seen := map[string]bool{}
	for _, perGPU := range plans {
		v := migVariant(m, perGPU, pl.GPU.MIGStrategy)
		key := fmt.Sprint(v.gpu.MIGLayout)
		if v.resources == nil || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, v)
	}
	return out, nil
}

// maxMIGRemainderPlans caps the chain of remainder plans in migVariants: each is one more
// variant for the packer to try on every node it opens, and past a few nodes the remainder
// of a large demand is mostly like the nodes before it.
const maxMIGRemainderPlans = 4

// demandTotal is the number of MIG instances a demand asks for.
func demandTotal(d map[mig.MIGProfile]int) int {
	n := 0
	for _, c := range d {
		n += c
	}
	return n
}

// migDemand sums the pending pods' nvidia.com/mig-<profile> requests that the model offers.
func (s *state) migDemand(m *mig.GPUModel) map[mig.MIGProfile]int {
	d := map[mig.MIGProfile]int{}
	for name, i := range s.dims.index {
		p, ok := mig.ParseResourceName(string(name))
		if !ok {
			continue
		}
		if _, ok := m.Profile(p); !ok {
			continue
		}
		for _, pi := range s.pending {
			d[p] += int(pi.req[i])
		}
		if d[p] == 0 {
			delete(d, p)
		}
	}
	return d
}

func sortedProfiles(d map[mig.MIGProfile]int) []mig.MIGProfile {
	out := make([]mig.MIGProfile, 0, len(d))
	for p := range d {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// migVariant turns per-GPU layouts into advertised resources: mixed strategy advertises
// nvidia.com/mig-<profile>; single strategy (only when every slice has one profile) advertises
// nvidia.com/gpu per slice.
func migVariant(m *mig.GPUModel, perGPU []mig.Layout, strategy string) deviceVariant {
	if strategy == "" {
		strategy = "mixed"
	}
	counts := map[mig.MIGProfile]int{}
	var layout [][]string
	for _, l := range perGPU {
		var ps []string
		for _, p := range l.Profiles {
			counts[p]++
			ps = append(ps, string(p))
		}
		layout = append(layout, ps)
	}
	res := corev1.ResourceList{}
	if strategy == "single" {
		if len(counts) != 1 {
			return deviceVariant{}
		}
		for _, n := range counts {
			res[api.ResourceGPU] = qty(n)
		}
	} else {
		for p, n := range counts {
			res[corev1.ResourceName(mig.ResourceName(p))] = qty(n)
		}
	}
	// The name says the layout (mig.ConfigName), so that a node's label tells a later decision
	// how its GPUs are partitioned (relayout.go).
	config := m.ConfigName(perGPU)
	gp := api.GPUConfig{Sharing: api.MIG, MIGStrategy: strategy, MIGLayout: layout, MIGConfig: config}
	perGPUProfiles := make([][]mig.MIGProfile, len(perGPU))
	for i, l := range perGPU {
		perGPUProfiles[i] = l.Profiles
	}
	gp.MigPartedConfig = mig.MigPartedConfig(config, perGPUProfiles)
	return deviceVariant{resources: res, gpu: gp,
		labels: map[string]string{api.LabelMIGConfig: config, api.LabelMIGStrategy: strategy}}
}
