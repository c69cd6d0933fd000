package simtest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// CheckPurchasing independently checks a plan's purchasing mix against the policy (pol nil: no
// mix to check), by counting over the snapshot's nodes and the plan's new nodes:
//
//   - every pool with a mix has at least onDemandBase + ceil((total − base) × (100 − spotAbove)%)
//     nodes that are not spot (all of them when total ≤ base);
//   - no owner with tiler.dev/max-spot-share p has more than floor(r × p%) of its r replicas on
//     spot nodes;
//   - in a pool with spotDiversity K, no spot instance type × zone holds more than ceil(r/K) of
//     an owner's r replicas in the pool;
//   - no reservation holds more nodes than its count, and each new node on one is on-demand, of
//     its pool, type and zone, at its effective price, and carries its label.
//
// It shares no code with the simulator. It returns the violations found.
func CheckPurchasing(snap *snapshot.Snapshot, pol *policy.CostPolicy, plan *api.Plan) []string {
	if pol == nil {
		return nil
	}
	var errs []string
	errorf := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }

	type node struct {
		name, pool, typ, zone string
		ct                    api.CapacityType
		reservation           string
	}
	nodes := map[string]node{}
	for _, n := range snap.Nodes {
		typ := n.Labels[api.LabelCatalogInstanceType]
		if typ == "" {
			typ = n.Labels[corev1.LabelInstanceTypeStable]
		}
		nodes[n.Name] = node{name: n.Name, pool: n.Labels[api.LabelPool], typ: typ, zone: n.Labels[corev1.LabelTopologyZone],
			ct: api.CapacityType(n.Labels[api.LabelCapacityType]), reservation: n.Labels[api.LabelCapacityReservation]}
	}
	for _, nn := range plan.NewNodes {
		nodes[nn.Name] = node{name: nn.Name, pool: nn.Pool, typ: string(nn.InstanceType), zone: nn.Zone, ct: nn.CapacityType,
			reservation: nn.CapacityReservation}
	}

	// Where every pod runs or is planned, and each owner's share.
	pods := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	where := map[string]string{}
	for _, p := range snap.Pods {
		if snapshot.IsActive(p) {
			if _, ok := nodes[p.Spec.NodeName]; ok {
				where[p.Namespace+"/"+p.Name] = p.Spec.NodeName
			}
		}
	}
	for _, en := range plan.ExistingNodes {
		for _, k := range en.Pods {
			where[k] = en.Name
		}
	}
	for _, nn := range plan.NewNodes {
		for _, k := range nn.Pods {
			where[k] = nn.Name
		}
	}
	owner := func(p *corev1.Pod) string {
		for _, r := range p.OwnerReferences {
			if r.Controller != nil && *r.Controller {
				return p.Namespace + "/" + r.Kind + "/" + r.Name
			}
		}
		return p.Namespace + "/Pod/" + p.Name
	}
	share := map[string]int{}
	for k := range where {
		p := pods[k]
		if p == nil {
			continue
		}
		if v, ok := p.Annotations[api.AnnotationMaxSpotShare]; ok {
			n, err := strconv.Atoi(strings.TrimSuffix(v, "%"))
			if err != nil {
				errorf("pod %s with an invalid %s %q is placed", k, api.AnnotationMaxSpotShare, v)
				continue
			}
			if old, ok := share[owner(p)]; !ok || n < old {
				share[owner(p)] = n
			}
		}
	}
	total, spot := map[string]int{}, map[string]int{}
	for k, nodeName := range where {
		p := pods[k]
		if p == nil {
			continue
		}
		total[owner(p)]++
		if nodes[nodeName].ct == api.Spot {
			spot[owner(p)]++
		}
	}
	for o, p := range share {
		if spot[o] > total[o]*p/100 {
			errorf("%s: %d of %d replicas on spot, over its max-spot-share %d%%", o, spot[o], total[o], p)
		}
	}

	for _, pl := range pol.Pools {
		if m := pl.Mix; m != nil {
			n, od := 0, 0
			for _, nd := range nodes {
				if nd.pool == pl.Name {
					n++
					if nd.ct != api.Spot {
						od++
					}
				}
			}
			spotAbove := 100
			if m.SpotAbove != nil {
				spotAbove = *m.SpotAbove
			}
			need := n
			if n > m.OnDemandBase {
				need = m.OnDemandBase + ((n-m.OnDemandBase)*(100-spotAbove)+99)/100
			}
			if od < need {
				errorf("pool %s: %d of %d nodes on-demand, the mix (base %d, spot above %d%%) needs %d", pl.Name, od, n, m.OnDemandBase, spotAbove, need)
			}
			if k := m.SpotDiversity; k > 1 {
				inPool := map[string]int{}
				perOffering := map[string]int{}
				for key, nodeName := range where {
					nd := nodes[nodeName]
					p := pods[key]
					if p == nil || nd.pool != pl.Name {
						continue
					}
					inPool[owner(p)]++
					if nd.ct == api.Spot {
						perOffering[owner(p)+" on "+nd.typ+"/"+nd.zone]++
					}
				}
				for ko, c := range perOffering {
					o, _, _ := strings.Cut(ko, " on ")
					if limit := (inPool[o] + k - 1) / k; c > limit {
						errorf("pool %s: %d replicas of %s, over ceil(%d/%d) = %d", pl.Name, c, ko, inPool[o], k, limit)
					}
				}
			}
		}
		for _, r := range pl.Reservations {
			used := 0
			for _, nd := range nodes {
				if nd.reservation == r.ID {
					used++
				}
			}
			if used > r.Count {
				errorf("reservation %s holds %d nodes, its count is %d", r.ID, used, r.Count)
			}
			for _, nn := range plan.NewNodes {
				if nn.CapacityReservation != r.ID {
					continue
				}
				if nn.Pool != pl.Name || nn.InstanceType != r.InstanceType || nn.Zone != r.Zone || nn.CapacityType != api.OnDemand {
					errorf("node %s on reservation %s is %s of pool %s, not %s/%s/on-demand of pool %s", nn.Name, r.ID, nn.Offering, nn.Pool, r.InstanceType, r.Zone, pl.Name)
				}
				if nn.PricePerHour != r.PricePerHour {
					errorf("node %s on reservation %s costs $%v/h, not its effective $%v/h", nn.Name, r.ID, nn.PricePerHour, r.PricePerHour)
				}
				if nn.Labels[api.LabelCapacityReservation] != r.ID {
					errorf("node %s on reservation %s lacks its label %s", nn.Name, r.ID, api.LabelCapacityReservation)
				}
			}
		}
	}
	ids := map[string]bool{}
	for _, pl := range pol.Pools {
		for _, r := range pl.Reservations {
			ids[r.ID] = true
		}
	}
	for _, nn := range plan.NewNodes {
		if nn.CapacityReservation != "" && !ids[nn.CapacityReservation] {
			errorf("node %s is on reservation %s, which the policy does not list", nn.Name, nn.CapacityReservation)
		}
	}
	sort.Strings(errs)
	return errs
}
