package simulator

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// disruptor is one disruption decision's working set: the simulation state with every pod that
// may move placed where it runs, and the facts about each node.
type disruptor struct {
	in  DisruptionInput
	now time.Time
	s   *state
	// facts holds every node of the snapshot, by name order; order the candidates in the order
	// they are tried.
	facts    []*nodeFacts
	byName   map[string]*nodeFacts
	order    []*nodeFacts
	types    map[string]*catalog.InstanceType
	gpuPools map[string]bool
	pdbs     []*pdbInfo
	groups   podGroups // the snapshot's native PodGroups
	// podPDBs lists, per moving pod, the budgets that select it.
	podPDBs map[string][]int
	// origin maps each moving pod to the node it runs on; origAlloc holds the allocations of the
	// claims only moving pods hold, which the derived snapshot clears (preplace commits them
	// again).
	origin    map[string]string
	origAlloc map[string]*resourcev1.AllocationResult
	// poolNodes and poolDisrupting count each pool's nodes, and those already being disrupted;
	// repairing those already being disrupted that are unhealthy (under repair).
	poolNodes      map[string]int
	poolDisrupting map[string]int
	repairing      map[string]int
	// forced lists the nodes that must go and may, in the order they are handled
	// (disrupt_forced.go); hashes caches each pool's policy.PoolHash; deviceTaints lists each
	// node's tainted DRA devices.
	forced       []*nodeFacts
	hashes       map[string]string
	deviceTaints map[string][]string
	warnings     []string
}

// newDisruptor classifies the nodes, builds the simulation state over a snapshot in which the
// pods that may move are pending, and places each of them back on its node.
func newDisruptor(in DisruptionInput) (*disruptor, error) {
	if err := in.Policy.Validate(); err != nil {
		return nil, err
	}
	d := &disruptor{in: in, now: in.Options.Now, groups: newPodGroups(in.Snapshot), byName: map[string]*nodeFacts{}, types: typesByLabel(in.Catalog),
		gpuPools: map[string]bool{}, podPDBs: map[string][]int{}, origin: map[string]string{},
		origAlloc: map[string]*resourcev1.AllocationResult{}, poolNodes: map[string]int{}, poolDisrupting: map[string]int{},
		repairing: map[string]int{}, hashes: map[string]string{}}
	d.classify()
	o := in.Options
	s, err := newState(Input{Snapshot: d.movableSnapshot(), Catalog: in.Catalog, Policy: in.Policy,
		Options: Options{Now: o.Now, NodeNamePrefix: o.NodeNamePrefix, Seed: o.Seed, InFlight: o.InFlight}})
	if err != nil {
		return nil, err
	}
	d.s = s
	d.attach()
	d.preplace()
	s.placePendingOnExisting()
	d.orderCandidates()
	d.orderForced()
	return d, nil
}

// movableSnapshot returns the snapshot with the pods of the nodes that may be disrupted made
// pending (so the simulation sets them up like any pending pod: requests, constraints, claims,
// gangs) and the allocations of the claims only they hold cleared.
func (d *disruptor) movableSnapshot() *snapshot.Snapshot {
	snap := d.in.Snapshot
	moving := map[string]bool{}
	for _, f := range d.facts {
		if f.keep == nil {
			for _, p := range f.pods {
				moving[podKey(p)] = true
			}
		}
	}
	out := *snap
	out.Pods = make([]*corev1.Pod, 0, len(snap.Pods))
	for _, p := range snap.Pods {
		if !moving[podKey(p)] || !snapshot.IsActive(p) {
			out.Pods = append(out.Pods, p)
			continue
		}
		cp := *p
		cp.Spec.NodeName = ""
		cp.Status.Phase = corev1.PodPending
		d.origin[podKey(p)] = p.Spec.NodeName
		out.Pods = append(out.Pods, &cp)
	}
	out.ResourceClaims = d.releaseClaims(moving)
	return &out
}

// releaseClaims returns the snapshot's claims with the allocation of each claim that only moving
// pods hold cleared: the claim controller deallocates a claim no pod reserves, and the moved pods'
// claims are allocated again where they land. A claim a staying pod also holds keeps its
// allocation, which pins the moving pods to the nodes it allows.
func (d *disruptor) releaseClaims(moving map[string]bool) []*resourcev1.ResourceClaim {
	snap := d.in.Snapshot
	if len(snap.ResourceClaims) == 0 {
		return snap.ResourceClaims
	}
	idx := dra.NewClaimIndex(snap.ResourceClaims, snap.ResourceClaimTemplates)
	held, stays := map[string]bool{}, map[string]bool{}
	for _, p := range snap.Pods {
		if len(p.Spec.ResourceClaims) == 0 || !snapshot.IsActive(p) {
			continue
		}
		claims, err := idx.PodClaims(p)
		if err != nil {
			continue
		}
		for _, c := range claims {
			if moving[podKey(p)] {
				held[claimKey(c)] = true
			} else {
				stays[claimKey(c)] = true
			}
		}
	}
	out := make([]*resourcev1.ResourceClaim, len(snap.ResourceClaims))
	for i, c := range snap.ResourceClaims {
		out[i] = c
		if k := claimKey(c); held[k] && !stays[k] && c.Status.Allocation != nil {
			cp := c.DeepCopy()
			d.origAlloc[k] = c.Status.Allocation
			cp.Status.Allocation, cp.Status.ReservedFor = nil, nil
			out[i] = cp
		}
	}
	return out
}

// attach links the facts to the simulation's nodes and pools, counts each pool's nodes and keeps
// pods off the nodes already being disrupted.
func (d *disruptor) attach() {
	nodes := make(map[string]*simNode, len(d.s.nodes))
	for _, n := range d.s.nodes {
		nodes[n.name] = n
	}
	uses := utilisations(d.in.Snapshot, d.gpuModel)
	for _, f := range d.facts {
		f.sim = nodes[f.node.Name]
		f.use = uses[f.node.Name]
		if f.pol != nil {
			f.pool = d.s.poolNamed(f.pol.Name)
			d.poolNodes[f.pol.Name]++
			if f.disrupting {
				d.poolDisrupting[f.pol.Name]++
			}
			if f.disrupting && slices.ContainsFunc(f.health, func(h api.UnhealthyNode) bool { return h.Due }) {
				d.repairing[f.pol.Name]++
			}
		}
		// Nodes that are going, or must go, take no pods: what moves there would move again.
		if (f.disrupting || f.forced != nil) && f.sim != nil {
			f.sim.noTarget = true
		}
	}
}

// preplace commits every moving pod on the node it runs on, with the claim allocations it has
// there, and leaves only the really pending pods pending. A moving pod the setup could not
// simulate (an invalid selector or claim, an incomplete gang) stays on its node, which is kept.
func (d *disruptor) preplace() {
	s := d.s
	byKey := map[string]*podInfo{}
	for _, pi := range s.pending {
		byKey[pi.key] = pi
	}
	for pi := range s.reasons {
		byKey[pi.key] = pi
	}
	keys := make([]string, 0, len(d.origin))
	for k := range d.origin {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		pi, f := byKey[key], d.byName[d.origin[key]]
		if pi == nil || f.sim == nil {
			continue
		}
		pi.origin = f.node.Name
		if r, bad := s.reasons[pi]; bad {
			f.keep = &api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: api.KeepUnplaceablePod, Message: "pod " + key + ": " + r.Reason}
			delete(s.reasons, pi)
		}
		s.commit(pi, f.sim, nil, "")
		if pi.dra != nil {
			d.commitOriginalClaims(pi, f.sim)
		}
	}
	pending := s.pending[:0]
	for _, pi := range s.pending {
		if pi.origin == "" {
			pending = append(pending, pi)
		}
	}
	s.pending = pending
	s.undo = s.undo[:0]
}

// commitOriginalClaims commits the pod's claims on n as the snapshot allocated them; a claim
// without a recorded allocation (one for DRA-served extended resources) is allocated afresh.
func (d *disruptor) commitOriginalClaims(pi *podInfo, n *simNode) {
	s := d.s
	var claims, fresh []*resourcev1.ResourceClaim
	var results []resourcev1.AllocationResult
	for _, c := range s.claimsOn(pi, n.alloc).claims {
		switch a := d.origAlloc[claimKey(c)]; {
		case s.dra.allocated(c):
		case a != nil:
			claims, results = append(claims, c), append(results, *a)
		default:
			fresh = append(fresh, c)
		}
	}
	if len(claims) > 0 {
		s.commitClaims(n, pi, claims, results)
	}
	if len(fresh) > 0 {
		res, r := s.dra.fit(n.node, n.slices, fresh)
		if r != nil {
			d.warnings = append(d.warnings, fmt.Sprintf("pod %s: its claims do not fit its own node %s (%s)", pi.key, n.name, r))
		} else {
			s.commitClaims(n, pi, fresh, res)
		}
	}
	s.addDRAPod(n, pi)
}

// orderCandidates lists the nodes that may be disrupted in the order they are tried, cheapest to
// disrupt first (as Karpenter sorts by disruption cost): GPU nodes that carry only CPU pods
// (their pods belong on a CPU node), then fewer pods, lower utilisation, higher price, name.
func (d *disruptor) orderCandidates() {
	for _, f := range d.facts {
		if f.keep == nil && f.forced == nil && f.sim != nil && f.pool != nil {
			d.order = append(d.order, f)
		}
	}
	cpuOnly := func(f *nodeFacts) bool { return f.gpus > 0 && !f.use.gpuPods && len(f.pods) > 0 }
	sort.SliceStable(d.order, func(i, j int) bool {
		a, b := d.order[i], d.order[j]
		switch {
		case cpuOnly(a) != cpuOnly(b):
			return cpuOnly(a)
		case len(a.sim.pods) != len(b.sim.pods):
			return len(a.sim.pods) < len(b.sim.pods)
		case a.use.util != b.use.util:
			return a.use.util < b.use.util
		case a.price != b.price:
			return a.price > b.price
		}
		return a.node.Name < b.node.Name
	})
}
