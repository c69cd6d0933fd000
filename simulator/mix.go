package simulator

import (
	"time"

	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// The purchasing mix: which capacity type, and which reservation, each new node is bought as.
//
// Packing decides nothing here. A reservation is an extra on-demand offering of its pool, priced
// at its effective price, so the cheapest-fit search uses it first; openNode stops offering it
// once as many nodes hold it as it has room for (reservationOpen). After packing, applyMix
// settles the rest on the finished plan, re-choosing the offering of new nodes among those that
// hold all their pods (alternative: the fallback rule without its price cap):
//
//  1. reservations: nodes beyond a reservation's count are bought as their next cheapest offering;
//  2. tiler.dev/max-spot-share: an owner with more spot replicas than its share moves the spot
//     nodes holding most of its replicas to on-demand;
//  3. mix.onDemandBase and mix.spotAbove: the pool's spot nodes with the smallest on-demand
//     premium move to on-demand until the pool has as many on-demand nodes as the mix needs;
//  4. mix.spotDiversity: a spot offering (type × zone) holding more than ceil(r/K) of an owner's
//     r replicas in the pool moves nodes to another spot offering with room for them, else to
//     on-demand.
//
// Each step only moves spot nodes to on-demand or spot nodes between spot offerings, so no step
// undoes an earlier one. A move that a pool limit or the budget forbids is left out with a
// warning. With no mix, no reservation and no annotated pod the plan is untouched.

// reservation is a policy reservation resolved against the catalog.
type reservation struct {
	*policy.Reservation
	pool *poolInfo
	// existing counts the snapshot's nodes (and in-flight nodes) that carry its label.
	existing int
}

// mixState is the simulation's purchasing-mix working set.
type mixState struct {
	reservations []*reservation
	// maxSpot is the parsed tiler.dev/max-spot-share of annotated pending pods, in percent.
	maxSpot map[*podInfo]int
}

// ParseMaxSpotShare reads a tiler.dev/max-spot-share value: an integer percentage 0–100 with an
// optional '%'.
func ParseMaxSpotShare(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), "%"))
	if err != nil || n < 0 || n > 100 {
		return 0, fmt.Errorf("annotation %s: %q must be a percentage 0..100, e.g. \"50%%\"", api.AnnotationMaxSpotShare, v)
	}
	return n, nil
}

// setupMix parses the pending pods' max-spot-share annotations (an invalid value makes the pod
// InvalidRequest) and counts the existing nodes of each reservation.
func (s *state) setupMix() {
	s.mix = &mixState{maxSpot: map[*podInfo]int{}}
	valid := s.pending[:0]
	for _, pi := range s.pending {
		if v, ok := pi.pod.Annotations[api.AnnotationMaxSpotShare]; ok {
			n, err := ParseMaxSpotShare(v)
			if err != nil {
				s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.InvalidRequest, Reason: err.Error()}
				continue
			}
			s.mix.maxSpot[pi] = n
		}
		valid = append(valid, pi)
	}
	s.pending = valid
	for _, pl := range s.pools {
		for _, o := range pl.offs {
			if o.res != nil && !slices.Contains(s.mix.reservations, o.res) {
				s.mix.reservations = append(s.mix.reservations, o.res)
			}
		}
	}
	for _, n := range s.nodes {
		if id := n.labels[api.LabelCapacityReservation]; id != "" {
			for _, r := range s.mix.reservations {
				if r.ID == id {
					r.existing++
				}
			}
		}
	}
}

// addReservedOfferings adds an offering per device variant for each of the pool's reservations
// that may be planned onto now (policy.Reservation.Plannable): on-demand, at the reservation's
// effective price, labelled with its ID.
func (s *state) addReservedOfferings(pl *poolInfo, reqs interface {
	Match(*corev1.Node) (bool, error)
}) error {
	for i := range pl.Reservations {
		r := &reservation{Reservation: &pl.Reservations[i], pool: pl}
		if !r.Plannable(s.now()) {
			continue
		}
		it, ok := s.cat.Type(r.InstanceType)
		if !ok {
			continue // checkReservations reported it
		}
		if !poolAllows(pl, it, catalog.ZonePrice{Zone: r.Zone, CapacityType: api.OnDemand}) {
			continue
		}
		variants, err := s.deviceVariants(pl, it)
		if err != nil {
			return err
		}
		for _, v := range variants {
			off := s.newOffering(pl, it, catalog.ZonePrice{Zone: r.Zone, CapacityType: api.OnDemand, PricePerHour: r.PricePerHour}, v)
			off.labels[api.LabelCapacityReservation] = r.ID
			off.res = r
			if ok, _ := reqs.Match(off.node); !ok {
				continue
			}
			off.idx = len(s.offerings)
			s.offerings = append(s.offerings, off)
			pl.offs = append(pl.offs, off)
		}
	}
	return nil
}

// now is the plan's time: Options.Now, else the snapshot's.
func (s *state) now() time.Time {
	if !s.in.Options.Now.IsZero() {
		return s.in.Options.Now
	}
	return s.in.Snapshot.Now
}

// checkReservations reports reservations naming an instance type or zone the catalog lacks.
func checkReservations(cat *catalog.Catalog, pools []*poolInfo) error {
	for _, pl := range pools {
		for i, r := range pl.Reservations {
			if _, ok := cat.Type(r.InstanceType); !ok {
				return fmt.Errorf("policy: pools[%d] (%s): reservations[%d].instanceType: unknown instance type %q in catalog %s", pl.index, pl.Name, i, r.InstanceType, cat.Name)
			}
			if !contains(cat.Zones, r.Zone) {
				return fmt.Errorf("policy: pools[%d] (%s): reservations[%d].zone: zone %q is not in catalog %s (%s)", pl.index, pl.Name, i, r.Zone, cat.Name, strings.Join(cat.Zones, ", "))
			}
		}
	}
	return nil
}

// reservationUsed counts the nodes on r: existing ones and new ones bought as one of its
// offerings.
func (s *state) reservationUsed(r *reservation) int {
	used := r.existing
	for _, n := range s.nodes {
		if !n.existing && !n.removed && n.chosen != nil && n.chosen.res == r {
			used++
		}
	}
	return used
}

// reservationOpen reports whether a new node may be bought as o: o is not a reservation, or its
// reservation has room.
func (s *state) reservationOpen(o *offering) bool {
	return o.res == nil || s.reservationUsed(o.res) < o.res.Count
}

// mixActive reports whether anything in the policy or the pods asks for a purchasing mix.
func (s *state) mixActive() bool {
	if s.mix == nil {
		return false
	}
	if len(s.mix.reservations) > 0 || len(s.mix.maxSpot) > 0 {
		return true
	}
	for _, pl := range s.pools {
		if pl.Mix != nil {
			return true
		}
	}
	return false
}

// applyMix settles reservations and the pools' capacity-type mix on the finished placement.
func (s *state) applyMix() {
	if !s.mixActive() {
		return
	}
	s.enforceReservations()
	s.enforceMaxSpotShare()
	s.enforceOnDemandShare()
	s.enforceSpotDiversity()
}

// newNodes returns the live new nodes, in creation order.
func (s *state) newNodes() []*simNode {
	var out []*simNode
	for _, n := range s.nodes {
		if !n.existing && !n.removed && n.chosen != nil {
			out = append(out, n)
		}
	}
	return out
}

// alternative returns the cheapest offering new node n may be bought as instead of n.chosen for
// which ok holds and that the pool's limits and the budget allow, or nil: the fallback rule
// (fallbacks.go) without its price cap — n's pool and GPU configuration, n's DRA class, n's
// pinned zone and topology-key values, and all of n's pods fit — and, for a reservation, only
// while it has room. Whether the pods fit is checked last, cheapest first.
func (s *state) alternative(n *simNode, ok func(*offering) bool) *offering {
	interchangeable := s.interchangeable(n)
	var cands []*offering
	for _, o := range n.pool.offs {
		if interchangeable(o) && ok(o) {
			cands = append(cands, o)
		}
	}
	slices.SortStableFunc(cands, func(a, b *offering) int { return cmp.Compare(a.price, b.price) })
	for _, o := range cands {
		if (o.res == nil || s.reservationOpen(o)) && s.withinLimits(n.pool, n, []*offering{o}) && s.holdsAll(n, o) {
			return o
		}
	}
	return nil
}

func onDemand(o *offering) bool { return o.ct == api.OnDemand }

// toOnDemand re-chooses spot node n as its cheapest on-demand alternative; it reports whether it
// did.
func (s *state) toOnDemand(n *simNode) bool {
	if o := s.alternative(n, onDemand); o != nil {
		s.setChosen(n, o)
		return true
	}
	return false
}

// onDemandPremium is what moving spot node n to its cheapest on-demand alternative costs, and
// false when it has none.
func (s *state) onDemandPremium(n *simNode) (float64, bool) {
	if o := s.alternative(n, onDemand); o != nil {
		return o.price - n.chosen.price, true
	}
	return 0, false
}

// enforceReservations moves new nodes beyond a reservation's count to their cheapest other
// offering (openNode keeps it from happening while packing; a later re-choice of the cheapest
// candidate or pool minNodes can still get there).
func (s *state) enforceReservations() {
	for _, r := range s.mix.reservations {
		room := r.Count - r.existing
		for _, n := range s.newNodes() {
			if n.chosen.res != r {
				continue
			}
			if room > 0 {
				room--
				continue
			}
			if o := s.alternative(n, func(o *offering) bool { return o.res != r }); o != nil {
				s.setChosen(n, o)
			} else {
				s.warnings = append(s.warnings, fmt.Sprintf("node %s: reservation %s is full and no other offering holds its pods", n.name, r.ID))
			}
		}
	}
}

// ownerKey names the owner a pod's replicas are counted under: its controller, or the pod itself.
func ownerKey(p *corev1.Pod) string {
	if ref := controllerOf(p); ref != nil {
		return p.Namespace + "/" + ref.Kind + "/" + ref.Name
	}
	return p.Namespace + "/Pod/" + p.Name
}

func controllerOf(p *corev1.Pod) *corev1.ObjectReference {
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return &corev1.ObjectReference{Kind: ref.Kind, Name: ref.Name}
		}
	}
	return nil
}

// replica is a pod of the plan (bound or placed) on a node.
type replica struct {
	owner string
	node  *simNode
}

// replicas lists the active bound pods on the snapshot's nodes and the pending pods the plan
// places, with their owners.
func (s *state) replicas() []replica {
	var out []replica
	for _, p := range s.in.Snapshot.Pods {
		if !snapshot.IsActive(p) {
			continue
		}
		if i := s.nodeIndex(p.Spec.NodeName); i >= 0 {
			out = append(out, replica{owner: ownerKey(p), node: s.nodes[i]})
		}
	}
	for _, n := range s.nodes {
		if n.removed {
			continue
		}
		for _, pi := range n.pods {
			out = append(out, replica{owner: ownerKey(pi.pod), node: n})
		}
	}
	return out
}

// nodeCapacityType is an existing node's capacity type label, or what a new node is bought as.
func nodeCapacityType(n *simNode) api.CapacityType {
	if n.existing {
		return api.CapacityType(n.labels[api.LabelCapacityType])
	}
	return n.chosen.ct
}

// spotOffering is the spot offering (instance type × zone) a node runs on, "" when it is not spot.
func spotOffering(n *simNode) string {
	if nodeCapacityType(n) != api.Spot {
		return ""
	}
	if n.existing {
		return CatalogTypeOf(n.labels) + "/" + n.labels[LabelZone]
	}
	return string(n.chosen.it.Name) + "/" + n.chosen.zone
}

// ownerPods counts n's pods of each owner (pending pods placed there; a new node has no others).
func ownerPods(n *simNode) map[string]int {
	m := map[string]int{}
	for _, pi := range n.pods {
		m[ownerKey(pi.pod)]++
	}
	return m
}

// enforceMaxSpotShare keeps each annotated owner's spot replicas within its share: floor(r × p%)
// of its r replicas, bound and planned. The spot nodes holding most of its planned replicas move
// to on-demand first.
func (s *state) enforceMaxSpotShare() {
	if len(s.mix.maxSpot) == 0 {
		return
	}
	share := map[string]int{}
	for pi, p := range s.mix.maxSpot {
		k := ownerKey(pi.pod)
		if v, ok := share[k]; !ok || p < v {
			share[k] = p
		}
	}
	total, spot := map[string]int{}, map[string]int{}
	for _, r := range s.replicas() {
		total[r.owner]++
		if nodeCapacityType(r.node) == api.Spot {
			spot[r.owner]++
		}
	}
	owners := make([]string, 0, len(share))
	for k := range share {
		owners = append(owners, k)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		allowed := total[owner] * share[owner] / 100
		if spot[owner] <= allowed {
			continue
		}
		var cands []*simNode
		for _, n := range s.newNodes() {
			if n.chosen.ct == api.Spot && ownerPods(n)[owner] > 0 {
				cands = append(cands, n)
			}
		}
		slices.SortStableFunc(cands, func(a, b *simNode) int { return ownerPods(b)[owner] - ownerPods(a)[owner] })
		for _, n := range cands {
			if spot[owner] <= allowed {
				break
			}
			if s.toOnDemand(n) {
				for o, c := range ownerPods(n) {
					spot[o] -= c
				}
			}
		}
		if spot[owner] > allowed {
			s.warnings = append(s.warnings, fmt.Sprintf("%s: %d of %d replicas stay on spot, over its %s of %d%%: no on-demand offering (within the limits) holds them",
				owner, spot[owner], total[owner], api.AnnotationMaxSpotShare, share[owner]))
		}
	}
}

// enforceOnDemandShare gives every pool with a mix as many on-demand nodes, existing and new, as
// its onDemandBase and spotAbove need, moving the spot nodes with the smallest premium.
func (s *state) enforceOnDemandShare() {
	for _, pl := range s.pools {
		if pl.Mix == nil {
			continue
		}
		total, od := 0, 0
		for _, n := range s.nodes {
			if n.removed || n.pool != pl && (!n.existing || n.labels[api.LabelPool] != pl.Name) || !n.existing && n.chosen == nil {
				continue
			}
			total++
			if nodeCapacityType(n) != api.Spot {
				od++ // on-demand, reserved, or an unlabelled node: not reclaimed
			}
		}
		need := pl.Mix.OnDemandNeeded(total)
		if od >= need {
			continue
		}
		type move struct {
			n       *simNode
			premium float64
		}
		var moves []move
		for _, n := range s.newNodes() {
			if n.pool == pl && n.chosen.ct == api.Spot {
				if p, ok := s.onDemandPremium(n); ok {
					moves = append(moves, move{n, p})
				}
			}
		}
		slices.SortStableFunc(moves, func(a, b move) int { return cmp.Compare(a.premium, b.premium) })
		for _, m := range moves {
			if od >= need {
				break
			}
			if s.toOnDemand(m.n) {
				od++
			}
		}
		if od < need {
			s.warnings = append(s.warnings, fmt.Sprintf("pool %s: %d of %d nodes on-demand, its mix needs %d: no further spot node can move to on-demand within the limits",
				pl.Name, od, total, need))
		}
	}
}

// enforceSpotDiversity spreads each owner's replicas in a pool with spotDiversity K over spot
// offerings: at most ceil(r/K) of its r replicas in the pool on one spot offering.
func (s *state) enforceSpotDiversity() {
	for _, pl := range s.pools {
		if pl.Mix == nil || pl.Mix.SpotDiversity < 2 {
			continue
		}
		k := pl.Mix.SpotDiversity
		inPool := func(n *simNode) bool {
			return n.pool == pl || n.existing && n.labels[api.LabelPool] == pl.Name
		}
		total := map[string]int{}
		count := map[string]map[string]int{} // owner → spot offering → replicas
		for _, r := range s.replicas() {
			if !inPool(r.node) {
				continue
			}
			total[r.owner]++
			if so := spotOffering(r.node); so != "" {
				if count[r.owner] == nil {
					count[r.owner] = map[string]int{}
				}
				count[r.owner][so]++
			}
		}
		limit := func(owner string) int { return (total[owner] + k - 1) / k }
		owners := make([]string, 0, len(count))
		for o := range count {
			owners = append(owners, o)
		}
		slices.Sort(owners)
		for _, owner := range owners {
			for _, so := range sortedKeys(count[owner]) {
				if count[owner][so] <= limit(owner) {
					continue
				}
				var nodes []*simNode
				for _, n := range s.newNodes() {
					if n.pool == pl && spotOffering(n) == so && ownerPods(n)[owner] > 0 {
						nodes = append(nodes, n)
					}
				}
				slices.SortStableFunc(nodes, func(a, b *simNode) int { return ownerPods(a)[owner] - ownerPods(b)[owner] })
				for _, n := range nodes {
					if count[owner][so] <= limit(owner) {
						break
					}
					pods := ownerPods(n)
					fits := func(o *offering) bool {
						if o.ct != api.Spot {
							return true
						}
						to := string(o.it.Name) + "/" + o.zone
						if to == so {
							return false
						}
						for ow, c := range pods {
							if count[ow][to]+c > limit(ow) {
								return false
							}
						}
						return true
					}
					if o := s.alternative(n, fits); o != nil {
						s.setChosen(n, o)
						for ow, c := range pods {
							count[ow][so] -= c
							if o.ct == api.Spot {
								count[ow][string(o.it.Name)+"/"+o.zone] += c
							}
						}
					}
				}
				if count[owner][so] > limit(owner) {
					s.warnings = append(s.warnings, fmt.Sprintf("pool %s: %d of the %d replicas of %s stay on spot offering %s, over ceil(r/%d) = %d: no other offering (within the limits) holds them",
						pl.Name, count[owner][so], total[owner], owner, so, k, limit(owner)))
				}
			}
		}
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// reservationID is the ID of the reservation o buys into, "" for open capacity.
func (o *offering) reservationID() string {
	if o.res == nil {
		return ""
	}
	return o.res.ID
}
