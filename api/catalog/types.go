package catalog

import (
	"fmt"
	"sort"

	"github.com/tiler-dev/tiler/api"
)

// GPU describes the accelerators of an instance type. Count is zero for a type without GPUs.
type GPU struct {
	// Model is the catalog's short model name, e.g. "A100-40GB", "L4", "H100".
	Model string `json:"model"`
	// Count is the number of physical GPUs on the node.
	Count int `json:"count"`
	// MemoryMiB is the memory of one GPU.
	MemoryMiB int64 `json:"memoryMiB"`
	// Product is the product name the NVIDIA driver reports (nvidia.com/gpu.product, with spaces
	// replaced by dashes in the label form).
	Product string `json:"product,omitempty"`
	// Architecture is the NVIDIA architecture family, e.g. "Ampere", "Hopper".
	Architecture string `json:"architecture,omitempty"`
	// CUDAComputeCapability is e.g. "8.0".
	CUDAComputeCapability string `json:"cudaComputeCapability,omitempty"`
}

// ZonePrice is what an instance type costs in a zone at a capacity type: one of its offerings
// as the catalog lists it under the type.
type ZonePrice struct {
	Zone         string           `json:"zone"`
	CapacityType api.CapacityType `json:"capacityType"`
	PricePerHour float64          `json:"pricePerHour"`
	// Unavailable marks an offering that is unavailable for now (the cloud had no capacity or an
	// account limit stopped it; see cloudprovider.UnavailableOfferings); the simulation skips it.
	Unavailable bool `json:"unavailable,omitempty"`
}

// InstanceType is a machine shape with its offerings.
type InstanceType struct {
	Name      api.InstanceTypeName `json:"name"`
	VCPU      int                  `json:"vcpu"`
	MemoryMiB int64                `json:"memoryMiB"`
	Arch      string               `json:"arch"`
	GPU       GPU                  `json:"gpu"`
	// MaxPods is the kubelet's pod limit for the type (see Overhead).
	MaxPods int `json:"maxPods"`
	// Offerings are the type's prices per zone and capacity type.
	Offerings []ZonePrice `json:"offerings"`
}

// Catalog is the set of instance types of one cloud region.
type Catalog struct {
	// Name identifies the catalog, e.g. "aws-us-east-1".
	Name string `json:"name"`
	// Provider is "aws", "gcp" or "sim"; it selects the overhead formula.
	Provider string   `json:"provider"`
	Region   string   `json:"region"`
	Zones    []string `json:"zones"`
	// Source says where the data comes from (provenance of prices).
	Source string         `json:"source,omitempty"`
	Types  []InstanceType `json:"types"`
}

// Type returns the instance type with the given name.
func (c *Catalog) Type(name api.InstanceTypeName) (*InstanceType, bool) {
	for i := range c.Types {
		if c.Types[i].Name == name {
			return &c.Types[i], true
		}
	}
	return nil, false
}

// Price returns what the offering costs, and false when the catalog does not list it. It is the
// one price look-up of an offering.
func (c *Catalog) Price(o api.Offering) (float64, bool) {
	t, ok := c.Type(o.InstanceType)
	if !ok {
		return 0, false
	}
	for _, p := range t.Offerings {
		if p.Zone == o.Zone && p.CapacityType == o.CapacityType {
			return p.PricePerHour, true
		}
	}
	return 0, false
}

// Bounds of an instance type, far beyond any machine sold, so that the simulator's sums stay
// within int64 (milli-CPU and bytes; the snapshot's quantities are bounded alike) and prices stay
// finite: a type of 2^62 vCPU would overflow to a negative capacity.
const (
	// MaxVCPU bounds InstanceType.VCPU.
	MaxVCPU = 1 << 16
	// MaxMemoryMiB bounds InstanceType.MemoryMiB and GPU.MemoryMiB: 64 TiB.
	MaxMemoryMiB = 64 << 20
	// MaxGPUs bounds GPU.Count.
	MaxGPUs = 64
	// MaxPods bounds InstanceType.MaxPods.
	MaxPods = 1 << 16
	// MaxPricePerHour bounds an offering's price, in $/h.
	MaxPricePerHour = 1e6
)

// Validate checks the catalog's invariants; errors name the type and field.
func (c *Catalog) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("catalog: name is empty")
	}
	zones := map[string]bool{}
	for _, z := range c.Zones {
		zones[z] = true
	}
	seen := map[api.InstanceTypeName]bool{}
	for i, t := range c.Types {
		switch {
		case t.Name == "":
			return fmt.Errorf("catalog %s: types[%d].name is empty", c.Name, i)
		case seen[t.Name]:
			return fmt.Errorf("catalog %s: type %s is listed twice", c.Name, t.Name)
		case t.VCPU <= 0 || t.VCPU > MaxVCPU:
			return fmt.Errorf("catalog %s: type %s: vcpu %d must be in 1..%d", c.Name, t.Name, t.VCPU, MaxVCPU)
		case t.MemoryMiB <= 0 || t.MemoryMiB > MaxMemoryMiB:
			return fmt.Errorf("catalog %s: type %s: memoryMiB %d must be in 1..%d (64 TiB)", c.Name, t.Name, t.MemoryMiB, int64(MaxMemoryMiB))
		case t.GPU.Count < 0 || t.GPU.Count > MaxGPUs:
			return fmt.Errorf("catalog %s: type %s: gpu.count %d must be in 0..%d", c.Name, t.Name, t.GPU.Count, MaxGPUs)
		case t.GPU.MemoryMiB < 0 || t.GPU.MemoryMiB > MaxMemoryMiB:
			return fmt.Errorf("catalog %s: type %s: gpu.memoryMiB %d must be in 0..%d", c.Name, t.Name, t.GPU.MemoryMiB, int64(MaxMemoryMiB))
		case t.GPU.Count > 0 && t.GPU.Model == "":
			return fmt.Errorf("catalog %s: type %s: gpu.model is empty for %d GPUs", c.Name, t.Name, t.GPU.Count)
		case t.MaxPods < 0 || t.MaxPods > MaxPods:
			return fmt.Errorf("catalog %s: type %s: maxPods %d must be in 0..%d (0: %d)", c.Name, t.Name, t.MaxPods, MaxPods, DefaultMaxPods)
		}
		seen[t.Name] = true
		offered := map[[2]string]int{}
		for j, o := range t.Offerings {
			k := [2]string{o.Zone, string(o.CapacityType)}
			if first, dup := offered[k]; dup {
				return fmt.Errorf("catalog %s: type %s: offerings[%d] repeats offerings[%d] (%s %s)", c.Name, t.Name, j, first, o.Zone, o.CapacityType)
			}
			offered[k] = j
			if !o.CapacityType.Valid() {
				return fmt.Errorf("catalog %s: type %s: offerings[%d].capacityType %q is not spot or on-demand", c.Name, t.Name, j, o.CapacityType)
			}
			if !zones[o.Zone] {
				return fmt.Errorf("catalog %s: type %s: offerings[%d].zone %q is not one of the catalog's zones", c.Name, t.Name, j, o.Zone)
			}
			if !(o.PricePerHour > 0 && o.PricePerHour <= MaxPricePerHour) {
				return fmt.Errorf("catalog %s: type %s: offerings[%d].pricePerHour %g must be positive and at most %g", c.Name, t.Name, j, o.PricePerHour, float64(MaxPricePerHour))
			}
		}
	}
	return nil
}

// Sort orders types by name and offerings by zone then capacity type, so that every consumer sees
// one deterministic order.
func (c *Catalog) Sort() {
	sort.Slice(c.Types, func(i, j int) bool { return c.Types[i].Name < c.Types[j].Name })
	for i := range c.Types {
		o := c.Types[i].Offerings
		sort.Slice(o, func(a, b int) bool {
			if o[a].Zone != o[b].Zone {
				return o[a].Zone < o[b].Zone
			}
			return o[a].CapacityType < o[b].CapacityType
		})
	}
}

// Clone returns a deep copy, so that price updates never alias a shared catalog.
func (c *Catalog) Clone() *Catalog {
	out := *c
	out.Zones = append([]string(nil), c.Zones...)
	out.Types = make([]InstanceType, len(c.Types))
	for i, t := range c.Types {
		t.Offerings = append([]ZonePrice(nil), t.Offerings...)
		out.Types[i] = t
	}
	return &out
}
