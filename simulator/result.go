package simulator

import (
	"math"
	"sort"

	"github.com/tiler-dev/tiler/api"
)

// addMinNodes buys the cheapest offering of every pool that has fewer nodes than its minNodes.
func (s *state) addMinNodes() {
	for _, pl := range s.pools {
		for pl.nodes < pl.MinNodes && len(pl.offs) > 0 {
			o := cheapest(pl.offs)
			n := &simNode{name: s.newName(pl), pool: pl, cands: []*offering{o}, used: make(vec, len(s.dims.names)), labels: map[string]string{}}
			n.idx = len(s.nodes)
			s.nodes = append(s.nodes, n)
			pl.nodes++
			s.setChosen(n, o)
		}
	}
}

// buildPlan turns the final state into a sorted api.Plan value.
func (s *state) buildPlan() *api.Plan {
	p := &api.Plan{NewNodes: []api.NewNode{}, ExistingNodes: []api.ExistingNode{}, Unschedulable: []api.UnschedulablePod{}}
	for _, n := range s.nodes {
		switch {
		case n.existing && len(n.pods) > 0 && !n.inFlight || n.inFlight && len(n.pods) > 0:
			en := api.ExistingNode{Name: n.name, Pods: podKeys(n.pods)}
			if n.dra != nil && len(n.dra.commits) > 0 {
				en.Claims = claimAllocations(n.name, n.dra.commits)
			}
			p.ExistingNodes = append(p.ExistingNodes, en)
		case !n.existing && !n.removed:
			if w := s.claimsCheck(n); w != "" {
				s.warnings = append(s.warnings, w)
			}
			nn := s.newNode(n)
			p.NewNodes = append(p.NewNodes, nn)
			p.CostPerHour += nn.PricePerHour
		}
	}
	for _, r := range s.reasons {
		p.Unschedulable = append(p.Unschedulable, r)
	}
	sort.Slice(p.NewNodes, func(i, j int) bool { return p.NewNodes[i].Name < p.NewNodes[j].Name })
	sort.Slice(p.ExistingNodes, func(i, j int) bool { return p.ExistingNodes[i].Name < p.ExistingNodes[j].Name })
	sort.Slice(p.Unschedulable, func(i, j int) bool { return p.Unschedulable[i].Pod < p.Unschedulable[j].Pod })
	p.CostPerHour = round6(p.CostPerHour)
	lb := math.Max(s.lowerBound(), s.minNodesBound())
	if math.IsNaN(lb) || math.IsInf(lb, 0) {
		lb = 0 // JSON cannot carry it; 0 reads as "no bound" (WriteTable: gap n/a)
	}
	p.LowerBoundPerHour = round6(math.Min(lb, p.CostPerHour))
	p.Relayouts = s.relayoutPlans()
	p.Warnings = s.warnings
	return p
}

func (s *state) newNode(n *simNode) api.NewNode {
	o := n.chosen
	labels := map[string]string{LabelHostname: n.name}
	for k, v := range o.labels {
		labels[k] = v
	}
	nn := api.NewNode{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: o.it.Name, Zone: o.zone, CapacityType: o.ct}, PricePerHour: o.price},
		Name:           n.name,
		Pool:           n.pool.Name,
		Pods:           podKeys(n.pods),
		Labels:         labels,
		Taints:         o.taints,
		Allocatable:    o.capacity.DeepCopy(),
	}
	nn.CapacityReservation = o.reservationID()
	if len(n.pods) == 0 {
		nn.Reason = "pool minNodes"
	}
	if g := o.it.GPU; g.Count > 0 {
		nn.GPUs = &api.GPUInfo{Model: g.Model, Count: g.Count, MemoryMiB: g.MemoryMiB, Product: g.Product}
		gp := o.gpu
		nn.GPU = &gp
		nn.MIGLayout = gp.MIGLayout
	}
	if n.dra != nil && len(n.dra.commits) > 0 {
		nn.Claims = claimAllocations(n.name, n.dra.commits)
	}
	nn.Fallbacks = s.fallbacks(n)
	return nn
}

func podKeys(pods []*podInfo) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.key
	}
	sort.Strings(out)
	return out
}

// round6 rounds a price to micro-dollars so that float noise never changes rendered output.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
