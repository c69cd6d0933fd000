package simulator

import (
	"fmt"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/simulator/mig"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// addInFlightNodes adds nodes that are being launched as if they existed with their full
// allocatable, so a pod that will fit there is not bought for again. A launch whose Node has
// registered but not yet published its devices is passed both as the Node (in the snapshot) and
// here; the in-flight entry wins for that name.
func (s *state) addInFlightNodes() {
	for _, f := range s.in.Options.InFlight {
		it, ok := s.cat.Type(f.InstanceType)
		if !ok {
			s.warnings = append(s.warnings, fmt.Sprintf("in-flight node %s: instance type %s is not in catalog %s; ignored", f.Name, f.InstanceType, s.cat.Name))
			continue
		}
		pl := s.poolNamed(f.Pool)
		if pl == nil {
			pl = &poolInfo{Pool: &policy.Pool{Name: f.Pool}, index: -1}
		}
		variants, err := s.deviceVariants(pl, it)
		if err != nil || len(variants) == 0 {
			variants = []deviceVariant{{}}
		}
		v := variants[0]
		if f.GPU != nil {
			v = s.variantFor(pl, it, *f.GPU, variants)
		}
		off := s.newOffering(pl, it, catalog.ZonePrice{Zone: f.Zone, CapacityType: f.CapacityType, PricePerHour: f.PricePerHour}, v)
		off.alloc = s.dims.grow(s.dims.fromList(off.capacity, false))
		labels := map[string]string{LabelHostname: f.Name}
		for k, v := range off.labels {
			labels[k] = v
		}
		if f.CapacityReservation != "" {
			labels[api.LabelCapacityReservation] = f.CapacityReservation
		}
		node := off.node.DeepCopy()
		node.Name, node.Labels = f.Name, labels
		sn := &simNode{name: f.Name, existing: true, inFlight: true, labels: labels, taints: off.taints, node: node,
			alloc: off.alloc, used: make(vec, len(s.dims.names))}
		if s.dra != nil && !s.dra.nodesWithSlices[f.Name] {
			// The driver has not published yet: plan with the slices it will publish.
			g := v.gpu
			if f.GPU != nil {
				g = *f.GPU
			}
			mode, consumable, publishes := dra.PublishMode(g)
			sn.slices = s.dra.slicesFor(f.Name, s.classOf(it, publishes, mode, consumable, off.alloc))
			sn.recorded = recordedDevices(f.Claims)
		}
		if prev := s.nodeIndex(f.Name); prev >= 0 {
			// The Node registered already: keep the pods bound there, take the planned allocatable.
			sn.used = s.nodes[prev].used
			sn.idx = prev
			s.nodes[prev] = sn
			continue
		}
		if pl.index >= 0 {
			pl.nodes++
			pl.vcpu += it.VCPU
			pl.gpus += it.GPU.Count
			pl.price += f.PricePerHour
		}
		s.budget += f.PricePerHour
		sn.idx = len(s.nodes)
		s.nodes = append(s.nodes, sn)
	}
}

// nodeIndex returns the index in s.nodes of the node named name, or -1. Node names are unique.
// s.nodes grows, shrinks and has entries replaced in many places, so the name index (a map, where
// a scan of 20,000 nodes per bound pod took most of a large cluster's batch) is a cache: a hit is
// checked against s.nodes, and a miss is settled by a scan whose find is remembered.
func (s *state) nodeIndex(name string) int {
	if s.nodeIdx == nil {
		s.nodeIdx = make(map[string]int, len(s.nodes))
		for i, n := range s.nodes {
			if _, dup := s.nodeIdx[n.name]; !dup {
				s.nodeIdx[n.name] = i
			}
		}
	}
	if i, ok := s.nodeIdx[name]; ok && i < len(s.nodes) && s.nodes[i].name == name {
		return i
	}
	for i, n := range s.nodes {
		if n.name == name {
			s.nodeIdx[name] = i
			return i
		}
	}
	return -1
}

// variantFor returns the device variant an in-flight node was bought with: the one whose MIG
// layout, replicas and GPU publisher match, else one rebuilt from the recorded plan.
func (s *state) variantFor(pl *poolInfo, it *catalog.InstanceType, g api.GPUConfig, variants []deviceVariant) deviceVariant {
	for _, v := range variants {
		if fmt.Sprint(v.gpu.MIGLayout) == fmt.Sprint(g.MIGLayout) && v.gpu.Replicas == g.Replicas &&
			v.gpu.DRAPublishes() == g.DRAPublishes() {
			return v
		}
	}
	if g.Sharing == "" || g.Sharing == api.Exclusive {
		// Whole GPUs from the publisher the launch chose, which the variants lack when no pending
		// pod has claims now or the pool's settings changed since.
		if g.DRAPublishes() {
			return deviceVariant{gpu: g}
		}
		return deviceVariant{resources: corev1.ResourceList{api.ResourceGPU: qty(it.GPU.Count)}, gpu: g}
	}
	if len(g.MIGLayout) > 0 {
		if tab, err := loadMIG(); err == nil {
			if m, ok := tab.Model(it.GPU.Model); ok {
				var perGPU []mig.Layout
				for _, ps := range g.MIGLayout {
					var profiles []mig.MIGProfile
					for _, p := range ps {
						profiles = append(profiles, mig.MIGProfile(p))
					}
					if l, err := m.Valid(profiles); err == nil {
						perGPU = append(perGPU, l)
					}
				}
				if len(perGPU) == len(g.MIGLayout) {
					return migVariant(m, perGPU, g.MIGStrategy)
				}
			}
		}
	}
	return variants[0]
}

// recordedDevices indexes a plan's claim allocations on a node by claim key: the names of the
// devices of the node's own slices each claim got. A claim that got a device of another pool
// (cluster-wide slices) is left out: it is fitted again as any other.
func recordedDevices(claims []api.ClaimAllocation) map[string][]string {
	out := map[string][]string{}
next:
	for _, c := range claims {
		var names []string
		for _, d := range c.Devices {
			// "gpu-0-mig-1g5gb-19-0 (gpu/h100) [memory=10Gi]": the name comes first, prefixed
			// with its pool when that is not the node's.
			name, _, _ := strings.Cut(d, " ")
			if name == "" || strings.Contains(name, "/") {
				continue next
			}
			names = append(names, name)
		}
		out[c.Claim] = names
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
