package simulator

import "github.com/tiler-dev/tiler/api"

// mixKeeps judges an action against its pool's purchasing mix (mix.go): an action that lowers
// the pool's on-demand nodes (removing on-demand nodes, replacing them by spot) below what the
// mix needs for the pool's size after it is refused. The removed nodes are already out of the
// state and the replacement in it.
func (p *pass) mixKeeps(nodes []*nodeFacts, repl *simNode) *api.KeptNode {
	pol := nodes[0].pol
	if pol == nil || pol.Mix == nil {
		return nil
	}
	total, od := 0, 0
	for _, n := range p.d.s.nodes {
		if n.removed || n.existing && n.labels[api.LabelPool] != pol.Name || !n.existing && (n.pool == nil || n.pool.Name != pol.Name || n.chosen == nil) {
			continue
		}
		total++
		if nodeCapacityType(n) != api.Spot {
			od++
		}
	}
	before := od
	for _, f := range nodes {
		if f.offering.CapacityType != api.Spot {
			before++
		}
	}
	if repl != nil && repl.chosen.ct != api.Spot {
		before--
	}
	if need := pol.Mix.OnDemandNeeded(total); od < need && od < before {
		return kept(api.KeepPurchasingMix, "pool %s would keep %d on-demand nodes of %d, its mix (onDemandBase %d, spotAbove %d%%) needs %d",
			pol.Name, od, total, pol.Mix.OnDemandBase, pol.Mix.SpotAbovePercent(), need)
	}
	return nil
}
