package gcp

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/gcpapi"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/pricing"
	pricinggcp "github.com/tiler-dev/tiler/pricing/gcp"
)

// Shapes are the instance types offered in the configured zones, without prices: the result of
// machineTypes.list and acceleratorTypes.list in every zone.
type Shapes struct {
	region string
	zones  []string
	source string
	types  map[api.InstanceTypeName]*shape
}

type shape struct {
	typ     catalog.InstanceType
	machine pricinggcp.Machine
	zones   []string
}

// ListShapes lists the machine and accelerator types of every configured zone (following
// nextPageToken) and returns the instance types Tiler can use there:
//   - machine types of cfg.MachineFamilies (all if empty) that are not shared-core or deprecated;
//   - with their built-in GPUs (A2, A3, G2 list them in accelerators), if the accelerator is known;
//   - for each predefined N1 shape and each attachable accelerator of the zone (T4, V100), one
//     "n1-…+Nx<accelerator>" type with attachCount GPUs.
func ListShapes(ctx context.Context, cfg Config, opts ...option.ClientOption) (*Shapes, error) {
	if err := cfg.validateAPI(); err != nil {
		return nil, err
	}
	c, err := newClients(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer c.close()
	s := &Shapes{region: cfg.Region, zones: slices.Sorted(slices.Values(cfg.Zones)), types: map[api.InstanceTypeName]*shape{},
		source: fmt.Sprintf("gce machineTypes.list and acceleratorTypes.list, project %s", cfg.Project)}
	for _, zone := range s.zones {
		if err := s.addZone(ctx, c, cfg, zone); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Shapes) addZone(ctx context.Context, c *clients, cfg Config, zone string) error {
	accs, err := listAcceleratorTypes(ctx, c, cfg, zone)
	if err != nil {
		return err
	}
	it := c.machineTypes.List(ctx, &computepb.ListMachineTypesRequest{Project: cfg.Project, Zone: zone, MaxResults: proto.Uint32(500)}, cfg.Retry.CallOption())
	mts, err := gcpapi.Collect(ctx, it.Next)
	if err != nil {
		return fmt.Errorf("gcp: listing machine types of %s: %w", zone, err)
	}
	for _, mt := range mts {
		if !usable(mt, cfg.MachineFamilies) {
			continue
		}
		if err := s.addMachineType(mt, zone, accs); err != nil {
			return err
		}
	}
	return nil
}

func listAcceleratorTypes(ctx context.Context, c *clients, cfg Config, zone string) ([]*computepb.AcceleratorType, error) {
	it := c.acceleratorTypes.List(ctx, &computepb.ListAcceleratorTypesRequest{Project: cfg.Project, Zone: zone}, cfg.Retry.CallOption())
	out, err := gcpapi.Collect(ctx, it.Next)
	if err != nil {
		return nil, fmt.Errorf("gcp: listing accelerator types of %s: %w", zone, err)
	}
	return out, nil
}

func usable(mt *computepb.MachineType, families []string) bool {
	if mt.GetIsSharedCpu() || mt.GetDeprecated().GetState() != "" && mt.GetDeprecated().GetState() != "ACTIVE" {
		return false
	}
	return len(families) == 0 || slices.Contains(families, pricinggcp.Family(mt.GetName()))
}

// addMachineType adds the machine type, and its N1 GPU attachments, as offered in zone. A machine
// type without a name, vCPUs or memory is a malformed payload and an error naming it.
func (s *Shapes) addMachineType(mt *computepb.MachineType, zone string, accs []*computepb.AcceleratorType) error {
	if mt.GetName() == "" || mt.GetGuestCpus() <= 0 || mt.GetMemoryMb() <= 0 {
		return fmt.Errorf("gcp: machine type %q in %s: name, guestCpus and memoryMb must be set", mt.GetName(), zone)
	}
	acc, count := builtInAccelerator(mt)
	// The catalog's bounds, checked here so that the error names the payload's field rather than
	// fail the whole catalog's validation later.
	switch {
	case mt.GetGuestCpus() > catalog.MaxVCPU:
		return fmt.Errorf("gcp: machine type %q in %s: guestCpus %d exceeds %d", mt.GetName(), zone, mt.GetGuestCpus(), catalog.MaxVCPU)
	case int64(mt.GetMemoryMb()) > catalog.MaxMemoryMiB:
		return fmt.Errorf("gcp: machine type %q in %s: memoryMb %d exceeds %d", mt.GetName(), zone, mt.GetMemoryMb(), int64(catalog.MaxMemoryMiB))
	case count < 0 || count > catalog.MaxGPUs:
		return fmt.Errorf("gcp: machine type %q in %s: accelerators[].guestAcceleratorCount sum to %d, not in 0..%d", mt.GetName(), zone, count, catalog.MaxGPUs)
	}
	if count == 0 || knownGPU(acc) {
		s.add(mt, zone, acc, count, api.InstanceTypeName(mt.GetName()))
	}
	if !attachesGPUs(mt.GetName()) {
		return nil
	}
	for _, at := range accs {
		if attachable[at.GetName()] && knownGPU(at.GetName()) {
			n := attachCount(int(mt.GetGuestCpus()), int(at.GetMaximumCardsPerInstance()))
			s.add(mt, zone, at.GetName(), n, pricinggcp.TypeName(mt.GetName(), at.GetName(), n))
		}
	}
	return nil
}

func builtInAccelerator(mt *computepb.MachineType) (string, int) {
	var acc string
	var count int64 // int32 counts: their sum overflows an int32 (and a 32-bit int)
	for _, a := range mt.GetAccelerators() {
		acc = a.GetGuestAcceleratorType()
		count += int64(a.GetGuestAcceleratorCount())
	}
	return acc, int(max(min(count, catalog.MaxGPUs+1), -1))
}

func knownGPU(acc string) bool { _, ok := gpuFor(acc, 0); return ok }

// add records that the type name, machine type mt with count GPUs of type acc (built in or
// attached), is offered in zone. A listing that names a type twice in a zone (a page repeated
// while the list changed) records the zone once: twice would repeat the offering and fail the
// whole catalog.
func (s *Shapes) add(mt *computepb.MachineType, zone, acc string, count int, name api.InstanceTypeName) {
	if sh, ok := s.types[name]; ok {
		if !slices.Contains(sh.zones, zone) {
			sh.zones = append(sh.zones, zone)
		}
		return
	}
	t := catalog.InstanceType{
		Name: name, VCPU: int(mt.GetGuestCpus()), MemoryMiB: int64(mt.GetMemoryMb()), Arch: "amd64",
		MaxPods: catalog.DefaultMaxPods,
	}
	if count > 0 {
		t.GPU, _ = gpuFor(acc, count)
	}
	s.types[name] = &shape{typ: t, zones: []string{zone}, machine: pricinggcp.Machine{
		Name: name, Family: pricinggcp.Family(mt.GetName()), VCPU: t.VCPU, MemoryMiB: t.MemoryMiB,
		Accelerator: acc, AcceleratorCount: count,
	}}
}

// Machines returns the shapes to price, sorted by name.
func (s *Shapes) Machines() []pricinggcp.Machine {
	var out []pricinggcp.Machine
	for _, sh := range s.types {
		out = append(out, sh.machine)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Catalog returns the catalog of the shapes with the given prices: an offering for every zone
// where the type is offered and every capacity type that has a usable price there. Types left
// without offerings are dropped: what cannot be priced cannot be planned.
func (s *Shapes) Catalog(name string, prices []pricing.Price) (*catalog.Catalog, error) {
	byKey := map[api.Offering]float64{}
	for _, p := range prices {
		if p.PricePerHour > 0 {
			byKey[p.Offering] = p.PricePerHour
		}
	}
	cat := &catalog.Catalog{Name: name, Provider: "gcp", Region: s.region, Zones: s.zones, Source: s.source}
	for _, sh := range s.types {
		t := sh.typ
		for _, zone := range sh.zones {
			for _, ct := range []api.CapacityType{api.OnDemand, api.Spot} {
				if price, ok := byKey[api.Offering{InstanceType: t.Name, Zone: zone, CapacityType: ct}]; ok {
					t.Offerings = append(t.Offerings, catalog.ZonePrice{Zone: zone, CapacityType: ct, PricePerHour: price})
				}
			}
		}
		if len(t.Offerings) > 0 {
			cat.Types = append(cat.Types, t)
		}
	}
	cat.Sort()
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("gcp: building catalog: %w", err)
	}
	return cat, nil
}

// NewCatalogFromAPI lists the shapes of the configured zones, prices them from the Cloud Billing
// catalog and returns the catalog "gcp-<region>". opts go to both the Compute Engine and the
// Cloud Billing clients. To use other prices (the embedded catalog's, a Refresher's), call
// ListShapes and Shapes.Catalog instead.
func NewCatalogFromAPI(ctx context.Context, cfg Config, opts ...option.ClientOption) (*catalog.Catalog, error) {
	shapes, err := ListShapes(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	src, err := pricinggcp.NewSource(ctx, cfg.pricingConfig(), shapes.Machines(), opts...)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	prices, err := src.Prices(ctx)
	if err != nil {
		return nil, err
	}
	return shapes.Catalog("gcp-"+cfg.Region, prices)
}
