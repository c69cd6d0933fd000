package simulator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
)

// Well-known labels put on planned nodes.
const (
	LabelInstanceType = corev1.LabelInstanceTypeStable
	LabelZone         = corev1.LabelTopologyZone
	LabelRegion       = corev1.LabelTopologyRegion
	LabelArch         = corev1.LabelArchStable
	LabelOS           = corev1.LabelOSStable
	LabelHostname     = corev1.LabelHostname
)

// poolInfo is a policy pool resolved against the catalog.
type poolInfo struct {
	*policy.Pool
	index int
	offs  []*offering
	// managed counts the existing nodes of the pool, for limits.
	nodes, vcpu, gpus int
	price             float64
	// before is nodes before anything was placed: the existing and in-flight nodes that count
	// towards minNodes in every plan (minNodesBound).
	before int
}

// offering is one (pool, instance type, zone, capacity type) the simulation may buy.
type offering struct {
	idx    int
	pool   *poolInfo
	it     *catalog.InstanceType
	zone   string
	ct     api.CapacityType
	price  float64
	labels map[string]string
	taints []corev1.Taint
	// node is a Node with the offering's labels and taints, for the affinity and taint helpers.
	node *corev1.Node
	// alloc is the allocatable of a fresh node minus its DaemonSet pods.
	alloc vec
	// capacity is the fresh node's allocatable before DaemonSets, as the Node will report it.
	capacity corev1.ResourceList
	// gpu is how the node's GPUs are configured (sharing, MIG layout).
	gpu api.GPUConfig
	// draClass is the offering's DRA class (dra.go), when the simulation uses DRA.
	draClass int
	// dsPorts are the host ports the DaemonSet pods of a node of the offering bind.
	dsPorts portSet
	// res is the reservation the offering buys into (mix.go), nil for open capacity.
	res *reservation
}

// family returns the family part of an instance type name: "m7i" of "m7i.large", "a2" of
// "a2-highgpu-1g", "n1" of "n1-standard-8+1xnvidia-tesla-t4".
func family(name api.InstanceTypeName) string {
	s := string(name)
	if i := strings.IndexAny(s, ".-"); i > 0 {
		return s[:i]
	}
	return s
}

// offeringLabels returns the labels a node of the offering carries (hostname excluded): those of
// its type, zone and capacity type (typeLabels), the pool's name and the pool's labels.
func offeringLabels(cat *catalog.Catalog, pl *poolInfo, it *catalog.InstanceType, zone string, ct api.CapacityType) map[string]string {
	l := typeLabels(cat, it, zone, ct)
	l[api.LabelPool] = pl.Name
	for k, v := range pl.Labels {
		l[k] = v
	}
	return l
}

// OfferingLabels returns the labels a planned node has for being bought as the instance type in
// the zone at the capacity type, whatever its pool: zone, region, architecture, OS, capacity
// type, the instance-type labels (InstanceTypeLabels), family, CPU, memory and the GPU labels.
// It returns false when the catalog has no such type. With WithOfferingLabels, a launcher
// relabels a node that the cloud launched as a fallback offering.
func OfferingLabels(cat *catalog.Catalog, name api.InstanceTypeName, zone string, ct api.CapacityType) (map[string]string, bool) {
	it, ok := cat.Type(name)
	if !ok {
		return nil, false
	}
	return typeLabels(cat, it, zone, ct), true
}

// WithOfferingLabels returns a copy of the labels of a node planned as one offering, for the node
// bought as another; from and to are the OfferingLabels of the two. A label with from's value
// takes to's, or goes when to has none; a label of another value (a pool's own) stays.
func WithOfferingLabels(labels, from, to map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if fv, ok := from[k]; !ok || fv != v {
			out[k] = v
		}
	}
	for k, v := range to {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// typeLabels returns the labels that follow from the offering alone (see OfferingLabels).
func typeLabels(cat *catalog.Catalog, it *catalog.InstanceType, zone string, ct api.CapacityType) map[string]string {
	l := map[string]string{
		LabelZone:               zone,
		LabelRegion:             cat.Region,
		LabelArch:               it.Arch,
		LabelOS:                 "linux",
		api.LabelCapacityType:   string(ct),
		api.LabelInstanceFamily: family(it.Name),
		api.LabelInstanceCPU:    strconv.Itoa(it.VCPU),
		api.LabelInstanceMemory: strconv.FormatInt(it.MemoryMiB, 10),
	}
	for k, v := range InstanceTypeLabels(it.Name) {
		l[k] = v
	}
	if it.GPU.Count > 0 {
		l[api.LabelGPUModel] = it.GPU.Model
		l[api.LabelGPUCount] = strconv.Itoa(it.GPU.Count)
		l[api.LabelGPUCountNVIDIA] = strconv.Itoa(it.GPU.Count)
		l[api.LabelGPUMemory] = strconv.FormatInt(it.GPU.MemoryMiB, 10)
		if it.GPU.Product != "" {
			l[api.LabelGPUProduct] = strings.ReplaceAll(it.GPU.Product, " ", "-")
		}
		if it.GPU.Architecture != "" {
			l[api.LabelGPUFamily] = strings.ToLower(strings.ReplaceAll(it.GPU.Architecture, " ", "-"))
		}
	}
	return l
}

// InstanceTypeLabels returns the labels that name a node's instance type. A catalog name is
// node.kubernetes.io/instance-type itself, except GCP's attached-accelerator shapes such as
// "n1-standard-4+1xnvidia-tesla-t4", which are not label values ('+'). GKE labels such a node
// with the machine type, n1-standard-4, and the accelerator, cloud.google.com/gke-accelerator =
// nvidia-tesla-t4; tiler.dev/instance-type keeps the catalog name with '+' written '_',
// n1-standard-4_1xnvidia-tesla-t4, so that shapes of one machine type stay apart (CatalogTypeOf).
func InstanceTypeLabels(name api.InstanceTypeName) map[string]string {
	machine, attached, ok := strings.Cut(string(name), "+")
	if !ok {
		return map[string]string{LabelInstanceType: string(name)}
	}
	l := map[string]string{LabelInstanceType: machine, api.LabelCatalogInstanceType: catalogTypeLabel(name)}
	if _, accelerator, ok := strings.Cut(attached, "x"); ok && accelerator != "" {
		l[api.LabelGKEAccelerator] = accelerator
	}
	return l
}

// catalogTypeLabel is the label-safe form of a catalog name: '+' becomes '_', which no catalog
// name holds, so two names never share a form.
func catalogTypeLabel(name api.InstanceTypeName) string {
	return strings.ReplaceAll(string(name), "+", "_")
}

// poolAllows applies the pool's type, family, zone and capacity-type restrictions.
func poolAllows(pl *poolInfo, it *catalog.InstanceType, o catalog.ZonePrice) bool {
	if !pl.AllowsCapacityType(o.CapacityType) {
		return false
	}
	if len(pl.Zones) > 0 && !contains(pl.Zones, o.Zone) {
		return false
	}
	if len(pl.InstanceTypes) > 0 && !contains(pl.InstanceTypes, it.Name) {
		return false
	}
	if len(pl.InstanceFamilies) > 0 && !contains(pl.InstanceFamilies, family(it.Name)) {
		return false
	}
	if pl.Limits.MaxGPUs != nil && *pl.Limits.MaxGPUs < it.GPU.Count {
		return false
	}
	return true
}

func contains[T comparable](s []T, x T) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// CheckPolicy reports what in the policy the catalog cannot serve: a pool naming an instance
// type, family or zone the catalog does not have (Simulate reports the same; callers that know
// the policy's file name check first to name it).
func CheckPolicy(cat *catalog.Catalog, pol *policy.CostPolicy) error {
	var pools []*poolInfo
	for i := range pol.Pools {
		pools = append(pools, &poolInfo{Pool: &pol.Pools[i], index: i})
	}
	if err := checkPoolTypes(cat, pools); err != nil {
		return err
	}
	return checkReservations(cat, pools)
}

// checkPoolTypes reports pools that name instance types, families or zones the catalog does not
// have: such a pool would silently offer nothing (a typo in a family made every pod NeverFits).
func checkPoolTypes(cat *catalog.Catalog, pools []*poolInfo) error {
	families := map[string]bool{}
	for _, t := range cat.Types {
		families[family(t.Name)] = true
	}
	for _, pl := range pools {
		for i, name := range pl.InstanceTypes {
			if _, ok := cat.Type(name); !ok {
				return fmt.Errorf("policy: pools[%d] (%s): instanceTypes[%d]: unknown instance type %q in catalog %s", pl.index, pl.Name, i, name, cat.Name)
			}
		}
		for i, f := range pl.InstanceFamilies {
			if !families[f] {
				known := slices.Sorted(maps.Keys(families))
				return fmt.Errorf("policy: pools[%d] (%s): instanceFamilies[%d]: no type of family %q in catalog %s (families: %s)",
					pl.index, pl.Name, i, f, cat.Name, strings.Join(known, ", "))
			}
		}
		for i, z := range pl.Zones {
			if !contains(cat.Zones, z) {
				return fmt.Errorf("policy: pools[%d] (%s): zones[%d]: zone %q is not in catalog %s (%s)", pl.index, pl.Name, i, z, cat.Name, strings.Join(cat.Zones, ", "))
			}
		}
	}
	return nil
}

// buildOfferings flattens pools × types × offerings into the simulation's offering table.
func (s *state) buildOfferings() error {
	for _, pl := range s.pools {
		reqs, err := poolRequirements(pl)
		if err != nil {
			return err
		}
		for ti := range s.cat.Types {
			it := &s.cat.Types[ti]
			variants, err := s.deviceVariants(pl, it)
			if err != nil {
				return err
			}
			for _, o := range it.Offerings {
				if o.Unavailable || !poolAllows(pl, it, o) {
					continue
				}
				for _, v := range variants {
					off := s.newOffering(pl, it, o, v)
					if ok, _ := reqs.Match(off.node); !ok || s.closesDomain(off) {
						continue
					}
					off.idx = len(s.offerings)
					s.offerings = append(s.offerings, off)
					pl.offs = append(pl.offs, off)
				}
			}
		}
		if err := s.addReservedOfferings(pl, reqs); err != nil {
			return err
		}
	}
	return nil
}

func poolRequirements(pl *poolInfo) (nodeaffinity.RequiredNodeAffinity, error) {
	pod := &corev1.Pod{}
	if len(pl.Requirements) > 0 {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: pl.Requirements}}}}}
	}
	r := nodeaffinity.GetRequiredNodeAffinity(pod)
	if _, err := r.Match(&corev1.Node{}); err != nil {
		return r, fmt.Errorf("policy: pools[%d] (%s): requirements: %w", pl.index, pl.Name, err)
	}
	return r, nil
}

func (s *state) newOffering(pl *poolInfo, it *catalog.InstanceType, o catalog.ZonePrice, v deviceVariant) *offering {
	labels := offeringLabels(s.cat, pl, it, o.Zone, o.CapacityType)
	for k, val := range v.labels {
		labels[k] = val
	}
	taints := append([]corev1.Taint(nil), pl.Taints...)
	cpu, mem, pods := catalog.Allocatable(s.cat.Provider, it)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	for name, q := range v.resources {
		capacity[name] = q
	}
	node := &corev1.Node{}
	node.Labels = labels
	node.Spec.Taints = taints
	node.Status.Allocatable = capacity
	return &offering{pool: pl, it: it, zone: o.Zone, ct: o.CapacityType, price: o.PricePerHour,
		labels: labels, taints: taints, node: node, capacity: capacity, gpu: v.gpu}
}

func resourceOne() *resource.Quantity { return resource.NewQuantity(1, resource.DecimalSI) }
