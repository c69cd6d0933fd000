package simulator

import (
	"cmp"
	"slices"

	"github.com/tiler-dev/tiler/api"
)

// The fallback rule. When a new node's offering is unavailable (insufficient capacity, a quota),
// the launch tries the node's fallbacks in order (in one EC2 fleet request, or one GCE insert
// after another) before the controller has to re-plan, which costs a batch and keeps the
// unavailable offering out of plans for the unavailable TTL.
const (
	// MaxFallbacks caps the fallbacks of a new node. An EC2 fleet lists each as an override; eight
	// keep the request short and are plenty, since unavailability rarely spans more than a few
	// capacity pools at once and the next batch re-plans anyway.
	MaxFallbacks = 8
	// FallbackPriceTolerance bounds a fallback's price to this multiple of the node's own price: a
	// fallback may make this node up to 25 % dearer rather than wait for a re-plan, never more, so
	// a plan's cost stays a faithful estimate of what is bought.
	FallbackPriceTolerance = 1.25
)

// fallbacks lists the offerings new node n may be bought as instead of n.chosen, cheapest first
// (ties in offering order: pool weight, type name, zone, capacity type), at most MaxFallbacks.
// An offering qualifies when
//
//   - it is of n's pool and has n.chosen's GPU configuration (the device variant: sharing,
//     replicas, MIG layout), so the pods' device requests and the node's bootstrap stay valid;
//   - it holds every pod of n: their requests together fit its allocatable, and each pod's node
//     selector, required node affinity and tolerations accept it;
//   - it is in n's zone when that is pinned (by a zone-keyed constraint, or a gang sharing a
//     zone), and it has n.chosen's value of every other topology key the pods' constraints use;
//   - on a node holding DRA pods, it is of the DRA class their claims were allocated for;
//   - it costs at most FallbackPriceTolerance × n.chosen's price, and buying it instead of
//     n.chosen keeps the pool's limits and the budget;
//   - in another zone than n.chosen's, it opens no zone-spread domain that the hard zone spread
//     of a pod of the cluster cannot use (opensDomain): kube-scheduler would count the node as a
//     domain with none of those pods, which the plan kept out of.
//
// The offerings come from the pool, not from n.cands: packing narrows cands with price caps
// (split, the LP re-pack, the exact search) that say what the node should cost, not what it
// could be bought as.
func (s *state) fallbacks(n *simNode) []api.PricedOffering {
	c := n.chosen
	interchangeable := s.interchangeable(n)
	maxPrice := c.price*FallbackPriceTolerance + 1e-9
	var picked []*offering
	for _, o := range n.pool.offs {
		if o.res != nil || o.price > maxPrice || !interchangeable(o) || o.zone != c.zone && s.opensDomain(o, n) != nil {
			continue
		}
		if s.holdsAll(n, o) && s.withinLimits(n.pool, n, []*offering{o}) {
			picked = append(picked, o)
		}
	}
	slices.SortStableFunc(picked, func(a, b *offering) int { return cmp.Compare(a.price, b.price) })
	type key struct {
		it, zone, ct string
	}
	seen := map[key]bool{{string(c.it.Name), c.zone, string(c.ct)}: true}
	var out []api.PricedOffering
	for _, o := range picked {
		k := key{string(o.it.Name), o.zone, string(o.ct)}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, api.PricedOffering{Offering: api.Offering{InstanceType: o.it.Name, Zone: o.zone, CapacityType: o.ct}, PricePerHour: o.price})
		if len(out) == MaxFallbacks {
			break
		}
	}
	return out
}

// interchangeable returns the test another offering of n's pool passes to be bought instead of
// n's chosen one with nothing its pods were placed by changing: n's zone when it is pinned (or its
// gang shares one), its DRA class when it holds claims, its GPU configuration and its values of
// the topology keys its pods' constraints use. Whether the pods fit is left to holdsAll.
func (s *state) interchangeable(n *simNode) func(*offering) bool {
	c := n.chosen
	zone := n.zone
	if zone == "" && sharesGangZone(n) {
		zone = c.zone
	}
	keys := s.topologyKeys(n)
	draClass := -1
	if s.dra != nil && n.dra != nil && (len(n.dra.pods) > 0 || len(n.dra.commits) > 0) {
		draClass = c.draClass
	}
	return func(o *offering) bool {
		return o != c && (zone == "" || o.zone == zone) && (draClass < 0 || o.draClass == draClass) &&
			o.gpu.Equal(c.gpu) && sameValues(o.labels, c.labels, keys)
	}
}

// holdsAll reports whether a node bought as o could hold all of n's pods.
func (s *state) holdsAll(n *simNode, o *offering) bool {
	used := make(vec, len(s.dims.names))
	for _, pi := range n.pods {
		if !s.offeringCompatible(pi.sig, o) || !s.podFits(pi, used, o.alloc) {
			return false
		}
		used.add(pi.req)
	}
	return true
}

// sharesGangZone reports whether a pod of n belongs to a gang whose members share a zone.
func sharesGangZone(n *simNode) bool {
	for _, pi := range n.pods {
		if pi.gang != nil && pi.gang.topology == "zone" {
			return true
		}
	}
	return false
}

// topologyKeys returns the topology keys, other than hostname and zone, of the constraints that
// n's pods are subject to: their own spread and pod (anti-)affinity terms, and the trackers and
// anti-affinity terms of other pods that count them. A node's value of such a key decided where
// its pods could go, so a fallback must have the same one.
func (s *state) topologyKeys(n *simNode) []string {
	var keys []string
	add := func(k string) {
		if k != LabelHostname && k != LabelZone && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, pi := range n.pods {
		for _, c := range pi.spread {
			add(c.key)
		}
		for _, t := range pi.affinity {
			add(t.key)
		}
		for _, t := range pi.anti {
			add(t.key)
		}
		for _, t := range pi.matches {
			add(s.trackers.list[t].key)
		}
		for _, a := range pi.antiAgainst {
			add(s.trackers.list[s.antiTerms[a].tracker].key)
		}
	}
	return keys
}

// sameValues reports whether a and b agree on every key (both without it counts as agreeing).
func sameValues(a, b map[string]string, keys []string) bool {
	for _, k := range keys {
		x, okA := a[k]
		y, okB := b[k]
		if okA != okB || x != y {
			return false
		}
	}
	return true
}
