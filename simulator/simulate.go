package simulator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// Options tune a simulation. The zero value is usable.
type Options struct {
	// Now is the simulation's time (used in node names and reasons, and to tell which capacity
	// reservations may be planned onto: policy.Reservation.Plannable); zero means the snapshot's.
	// The simulator reads no clock.
	Now time.Time
	// NodeNamePrefix starts every new node's name; default "tiler-".
	NodeNamePrefix string
	// Seed makes new node names unique across simulations (the controller passes a batch ID);
	// the same seed and input give the same plan.
	Seed string
	// InFlight are nodes already being launched: the simulation counts them as existing capacity
	// so that it never buys twice for the same pods.
	InFlight []InFlightNode
	// Bought are nodes that registered, but were bought for pods that may still be pending:
	// re-planning puts those pods back on them first, as it does for in-flight nodes, so that a
	// pod that arrived later does not take their room in the plan (the node's reservation keeps
	// it from doing so in the cluster) and they are not bought for again.
	Bought []BoughtNode
	// MIGRelayout lets the plan re-partition idle GPUs of existing MIG nodes instead of buying
	// (Plan.Relayouts, relayout.go). Only a caller that applies the re-layouts may set it: a plan
	// that counts on a re-layout nobody applies buys nothing for its pods.
	MIGRelayout bool
	// NoPreemption plans no preemption (preempt.go): the caller's pending pods are those
	// kube-scheduler already tried and could not place, its preemption included. The controller
	// sets it: a pod the scheduler nominated for preemption is not provisionable, so a
	// provisionable one is a pod for which the scheduler found no victims, whatever the model says.
	NoPreemption bool
	// Relayouting are MIG re-layouts under way (an earlier plan's Relayouts whose
	// nvidia.com/mig.config.state is not success yet): each node counts with the allocatable its
	// new layout gives, whatever its status shows meanwhile, and is not re-laid-out again.
	Relayouting []api.NodeRelayout
	// noDRAMemo turns off what each node remembers of its DRA allocations (draState.noMemo); a
	// test (export_test.go) checks that plans are the same without it.
	noDRAMemo bool
}

// BoughtNode names a registered node and the pods (namespace/name) it was bought for.
type BoughtNode struct {
	Name string
	Pods []string
}

// InFlightNode is a node that was bought but has not registered yet (or registered without its
// devices).
type InFlightNode struct {
	Name string
	Pool string
	// PricedOffering is what the node was bought as.
	api.PricedOffering
	// GPU is the GPU configuration the node was bought with (nil: the pool's first variant).
	GPU *api.GPUConfig
	// Pods are the pods (namespace/name) the node was bought for. Re-planning places those still
	// pending there first, so that a later batch never re-packs in-flight nodes differently and buys
	// again.
	Pods []string
	// Claims are the devices the plan that bought the node allocated to those pods' claims there
	// (api.NewNode.Claims). A pod put back on the node gets the same devices while they are
	// free: the allocator fits first, so what a pod gets depends on the order the pods come in,
	// and pods put back in another order can leave no room for the last of them (dynamic MIG:
	// 1g.5gb partitions taking the slots a 2g.10gb needs), which the re-plan would buy again.
	Claims []api.ClaimAllocation
}

// Input is everything a simulation reads.
type Input struct {
	Snapshot *snapshot.Snapshot
	Catalog  *catalog.Catalog
	// Policy is the cost policy; nil means policy.Default().
	Policy  *policy.CostPolicy
	Options Options
}

// Simulate plans new nodes for the snapshot's pending pods at the lowest price it can find and
// returns the plan. It is a pure function of its input: the same input gives the same plan. The
// error is reserved for bad input (a policy naming an unknown instance type, an invalid catalog);
// pods without a place are reported in the plan with a reason.
func Simulate(in Input) (*api.Plan, error) {
	if needsAdmission(in) {
		return simulateAdmitted(in)
	}
	return simulateOnce(in)
}

// simulatePlain is one simulation of all the snapshot's pending pods, without preemption
// (simulateOnce adds it). When pods have soft constraints, it plans once honouring them and once not, and keeps the first unless it costs
// more than the policy's soft-constraint premium allows (keepSoftPlan).
func simulatePlain(in Input) (*api.Plan, error) {
	plan, s, err := simulatePass(in, true)
	if err != nil || !s.hasSoft {
		return plan, err
	}
	base, _, err := simulatePass(withoutSoft(in), false)
	if err != nil {
		return nil, err
	}
	if keepSoftPlan(plan, base, s.premium()) {
		return plan, nil
	}
	base.Warnings = append(base.Warnings, fmt.Sprintf("soft constraints (preferred affinity, ScheduleAnyway spread) were not honoured: "+
		"the plan honouring them costs $%.4f/h, more than softConstraints.maxPremiumPercent (%g%%) over $%.4f/h, or leaves more pods unschedulable",
		plan.CostPerHour, 100*s.premium(), base.CostPerHour))
	return base, nil
}

// simulatePass is one simulation, honouring soft constraints when soft is set.
//
// A pass whose nodes open zone-spread domains that break a spread as placed (brokenDomains) is
// run again with those domains counted from the start, at most once per zone and spread: kube-scheduler
// counts them, and would bind fewer of the spread pods than planned. That plan is compared with
// one that buys no node in those zones that would open them (closesDomain), which may keep the
// spread whole by buying the other nodes elsewhere. That one is kept when it leaves fewer pods
// without a place, or the same pods for less; a pod pinned to the closed zone is not traded for a
// spread pod on price.
func simulatePass(in Input, soft bool) (*api.Plan, *state, error) {
	plan, s, opened, err := simulateConsistent(in, soft, nil)
	if err != nil || len(opened) == 0 {
		return plan, s, err
	}
	alt, as, _, err := simulateConsistent(in, soft, opened)
	if err != nil {
		return nil, nil, err
	}
	if len(alt.Unschedulable) < len(plan.Unschedulable) ||
		sameUnplaced(alt, plan) && alt.CostPerHour < plan.CostPerHour-1e-9 {
		return alt, as, nil
	}
	return plan, s, nil
}

// sameUnplaced reports whether two plans leave the same pods without a place.
func sameUnplaced(a, b *api.Plan) bool {
	pods := func(p *api.Plan) []string {
		out := make([]string, 0, len(p.Unschedulable))
		for _, u := range p.Unschedulable {
			out = append(out, u.Pod)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(pods(a), pods(b))
}

// simulateConsistent runs passes until no node of the plan opens a zone-spread domain that breaks
// a spread as placed, each counting the domains the ones before found from the start, and returns
// the last with those domains. closed are domains no new node may open (closesDomain).
func simulateConsistent(in Input, soft bool, closed []openedDomain) (*api.Plan, *state, []openedDomain, error) {
	var opened []openedDomain
	for {
		plan, s, err := simulateOnePass(in, soft, opened, closed)
		if err != nil {
			return nil, nil, nil, err
		}
		more := slices.DeleteFunc(s.brokenDomains(), func(d openedDomain) bool {
			return slices.ContainsFunc(opened, func(o openedDomain) bool { return o.zone == d.zone && o.sig == d.sig })
		})
		if len(more) == 0 {
			return plan, s, opened, nil
		}
		opened = append(opened, more...)
	}
}

// simulateOnePass is one simulation, honouring soft constraints when soft is set, counting the
// opened zone-spread domains from the start and opening none of the closed ones.
func simulateOnePass(in Input, soft bool, opened, closed []openedDomain) (*api.Plan, *state, error) {
	s, err := newStateClosing(in, closed)
	if err != nil {
		return nil, nil, err
	}
	s.softOn = soft
	s.opened = opened
	if err := s.planRelayouts(); err != nil {
		return nil, nil, err
	}
	s.placeAll()
	s.consolidate()
	s.split()
	if s.repackLP() {
		// The classes' last nodes are partly filled; the full ones have a little room left.
		s.consolidate()
		s.split()
	}
	s.exactSmall()
	s.keepSpreadDomains()
	s.addMinNodes()
	s.applyMix()
	return s.buildPlan(), s, nil
}

// withoutPlaceholders returns the snapshot without placeholder pods (itself when it has none).
func withoutPlaceholders(snap *snapshot.Snapshot) *snapshot.Snapshot {
	if !slices.ContainsFunc(snap.Pods, isPlaceholder) {
		return snap
	}
	out := *snap
	out.Pods = slices.DeleteFunc(slices.Clone(snap.Pods), isPlaceholder)
	return &out
}

// state is one simulation's working set.
type state struct {
	in         Input
	cat        *catalog.Catalog
	pools      []*poolInfo
	dims       *dims
	gpuDims    []int
	offerings  []*offering
	nodes      []*simNode     // existing and in-flight first, then new ones in creation order
	nodeIdx    map[string]int // a cache of the nodes' indexes by name (nodeIndex)
	pending    []*podInfo
	trackers   *trackers
	antiTerms  []antiTerm
	sigs       map[string]int
	sigPods    []*corev1.Pod // a representative pod per signature
	compat     [][]bool      // per signature, per offering
	nodeOK     [][]int8      // per signature, per node: 0 unknown, 1 compatible, 2 not
	eligible   map[[3]int][]string
	pinned     *[]pinnedZone // pinnedZones, nil until first asked
	reasons    map[*podInfo]api.UnschedulablePod
	groups     podGroups // the snapshot's native PodGroups (buildGangs)
	matchCache map[string][2][]int
	keys       map[string]int
	undo       []func()
	// dra is the DRA working set, nil when no pending pod uses DRA.
	dra *draState
	// claimPods: a pending pod has ResourceClaims, so GPU pools without a gpu.driver offer nodes
	// whose GPUs the DRA driver alone publishes; plainGPUPods: one asks for nvidia.com/gpu, so they
	// offer nodes of the device plugin too (deviceVariants).
	claimPods, plainGPUPods bool
	// gpuRank ranks existing nodes for device-plugin GPU pods (gpupack.go), nil when unused.
	gpuRank  *gpuRank
	newCount int
	// newNodeCap, when positive, is the length s.nodes may not reach by opening nodes: the
	// disruption plan lets an action open at most one. Simulate leaves it 0 (no cap).
	newNodeCap int
	// bestFit makes placeOne try the existing nodes tightest first (the least room left, as
	// shares of allocatable summed over the resources) rather than in name order: moveOpening's
	// second try when a disruption's pods find no place first fit.
	bestFit  bool
	budget   float64 // $/h of managed nodes, existing and new
	warnings []string
	// spreads are the hard zone spreads of the snapshot's pods, running or pending, with the
	// domains each counts (zoneSpreads, nil until first asked): no new node should open a domain
	// they cannot use.
	spreads *[]*spreadDomains
	// relayouts are the MIG re-layouts of existing nodes planned before placement (relayout.go).
	relayouts []*relayout
	// teams resolves pods' teams (nil without teams in the policy); sigPools holds, per signature,
	// the pools its pods' team may buy from (nil: all).
	teams    *teamIndex
	sigPools [][]string
	// mix is the purchasing mix's working set (mix.go).
	mix *mixState
	// softOn makes placement honour soft constraints (soft.go); hasSoft reports that a pending pod
	// has some.
	softOn, hasSoft bool
	// improving is set while consolidation or split moves pods between planned nodes
	// (allocateOn refuses rather than replays there).
	improving bool
	// sigTiers holds, per signature, the priority the pools' priority tiers are checked with.
	sigTiers []sigTier
	// opened are the zone-spread domains an earlier pass's nodes opened (brokenDomains), counted
	// from the start by eligibleDomains; closed are those no new node may open (closesDomain).
	opened, closed []openedDomain
}

func newState(in Input) (*state, error) {
	return newStateClosing(in, nil)
}

// newStateClosing is newState with no offering that would open one of the closed zone-spread
// domains (closesDomain).
func newStateClosing(in Input, closed []openedDomain) (*state, error) {
	if in.Snapshot == nil || in.Catalog == nil {
		return nil, fmt.Errorf("simulate: snapshot and catalog are required")
	}
	if err := in.Catalog.Validate(); err != nil {
		return nil, err
	}
	pol := in.Policy
	if pol == nil {
		pol = policy.Default()
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	if in.Options.NodeNamePrefix == "" {
		in.Options.NodeNamePrefix = "tiler-"
	}
	in.Snapshot = withoutPlaceholders(in.Snapshot)
	s := &state{in: in, cat: in.Catalog, dims: newDims(), trackers: newTrackers(), sigs: map[string]int{},
		eligible: map[[3]int][]string{}, reasons: map[*podInfo]api.UnschedulablePod{}, matchCache: map[string][2][]int{}, keys: map[string]int{},
		closed: closed}
	s.in.Policy = pol
	for i := range pol.Pools {
		s.pools = append(s.pools, &poolInfo{Pool: &pol.Pools[i], index: i})
	}
	sort.SliceStable(s.pools, func(i, j int) bool { return s.pools[i].Weight > s.pools[j].Weight })
	if err := checkPoolTypes(s.cat, s.pools); err != nil {
		return nil, err
	}
	if err := checkReservations(s.cat, s.pools); err != nil {
		return nil, err
	}
	s.warnings = append(s.warnings, in.Snapshot.Warnings...)
	s.teams = newTeamIndex(pol, in.Snapshot)
	if err := s.setup(); err != nil {
		return nil, err
	}
	for _, pl := range s.pools {
		pl.before = pl.nodes
	}
	return s, nil
}

// setup reads pods and nodes into the working set. Order matters: dimensions are registered from
// pending pods first, so every later vector has its final length.
func (s *state) setup() error {
	prio := priorityClasses(s.in.Snapshot)
	for i, p := range s.in.Snapshot.Pods {
		if !snapshot.IsPending(p) {
			continue
		}
		pi := &podInfo{pod: p, key: podKey(p), order: i, priority: podPriority(p, prio), ports: podHostPorts(p)}
		req := podRequests(p)
		pi.req = s.dims.fromList(req, true)
		s.pending = append(s.pending, pi)
		s.claimPods = s.claimPods || len(p.Spec.ResourceClaims) > 0
		if q, ok := req[api.ResourceGPU]; ok && !q.IsZero() {
			s.plainGPUPods = true
		}
	}
	for i, name := range s.dims.names {
		if strings.HasPrefix(string(name), "nvidia.com/") {
			s.gpuDims = append(s.gpuDims, i)
		}
	}
	for _, pi := range s.pending {
		pi.req = s.dims.grow(pi.req)
		team, err := s.teams.of(pi.pod.Namespace)
		if err != nil {
			return err
		}
		var pools []string
		if team != nil {
			pools = team.Pools
		}
		pi.sig = s.signature(pi.pod, pools, pi.priority)
	}
	if err := s.buildOfferings(); err != nil {
		return err
	}
	s.applyDaemonSets()
	if err := s.setupDRA(); err != nil {
		return err
	}
	s.addExistingNodes()
	s.addInFlightNodes()
	s.gpuRank = s.setupGPURank()
	if err := s.buildConstraints(); err != nil {
		return err
	}
	s.setupMix()
	s.buildGangs()
	s.countFlex()
	sortPods(s.pending, s.gpuDims)
	return nil
}

func priorityClasses(snap *snapshot.Snapshot) map[string]int32 {
	m := map[string]int32{}
	for _, pc := range snap.PriorityClasses {
		m[pc.Name] = pc.Value
	}
	return m
}

// podPriority is spec.priority when the admission plugin has set it, else the value of its
// PriorityClass, else 0.
func podPriority(p *corev1.Pod, classes map[string]int32) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return classes[p.Spec.PriorityClassName]
}

// signature interns the pod's node-selection signature: its node selection, the pools its team
// may buy from (nil: all) and, when a pool is reserved for a priority tier, its priority and
// PriorityClass.
func (s *state) signature(p *corev1.Pod, pools []string, priority int32) int {
	k := signatureKey(p)
	if pools != nil {
		k += "|pools=" + strings.Join(pools, ",")
	}
	tier := sigTier{}
	if s.priorityTiers() {
		tier = sigTier{set: true, priority: priority, class: p.Spec.PriorityClassName}
		k += fmt.Sprintf("|priority=%d/%s", priority, tier.class)
	}
	if i, ok := s.sigs[k]; ok {
		return i
	}
	s.sigs[k] = len(s.sigPods)
	s.sigPods = append(s.sigPods, p)
	s.sigPools = append(s.sigPools, pools)
	s.sigTiers = append(s.sigTiers, tier)
	return len(s.sigPods) - 1
}

// sigTier is a signature's priority and PriorityClass, set when a pool of the policy is reserved
// for a priority tier (policy.Pool.MinPriority, MaxPriority, PriorityClassNames).
type sigTier struct {
	set      bool
	priority int32
	class    string
}

// priorityTiers reports whether a pool of the policy is reserved for a priority tier.
func (s *state) priorityTiers() bool {
	for _, pl := range s.pools {
		if pl.HasPriorityTier() {
			return true
		}
	}
	return false
}

// tierAllows reports whether pods of signature sig may be bought for in the pool.
func (s *state) tierAllows(sig int, pl *poolInfo) bool {
	t := s.sigTiers[sig]
	return !t.set || pl.AdmitsPriority(t.priority, t.class)
}
