package provisioner

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// A batch is observe → Decide → act. Decide is the controller's judgement: a pure function of the
// State, the configuration and the Memory of earlier batches, which calls no client, informer or
// cloud (simulator.Simulate is pure too). It returns a Decision, which act carries out against
// the API server and the cloud, as Simulate returns a plan. Tests assert Decisions and move a
// fake clock between batches; a replay drives Decide with a virtual clock and an in-memory
// cluster and carries the Memory itself.

// Memory is what decisions carry from batch to batch. The controller owns one; a replay carries
// its own.
type Memory struct {
	// Batches counts the batches decided; it numbers their IDs.
	Batches int
	// EmptySince is when each managed node (by name) was first seen empty.
	EmptySince map[string]time.Time
	// Announced are the managed nodes (by name) already announced Ready.
	Announced map[string]bool
	// FailedBoots are, by pool, the launches removed for RemovalRegistrationTimeout since a node
	// of the pool last registered (by launch ID): from ProbeAfterFailedBoots of them on, the pool
	// launches one node at a time (Decision.Held).
	FailedBoots map[string]map[string]bool
}

// ProbeAfterFailedBoots is how many launches of a pool may fail to register in a row before the
// pool launches one node at a time: a bootstrap, image or network that keeps nodes from joining
// would otherwise be paid for once per pending node, every registration timeout (Karpenter's
// "degraded NodePool"), though one node tells as much. A node of the pool that registers ends it.
const ProbeAfterFailedBoots = 2

// NewMemory returns the memory of a controller that has decided nothing yet.
func NewMemory() *Memory {
	return &Memory{EmptySince: map[string]time.Time{}, Announced: map[string]bool{}, FailedBoots: map[string]map[string]bool{}}
}

// forget drops what the memory holds about nodes no launch record names any more.
func (m *Memory) forget(recs []LaunchRecord) {
	names := make(map[string]bool, len(recs))
	for _, r := range recs {
		names[r.NodeName] = true
	}
	for n := range m.EmptySince {
		if !names[n] {
			delete(m.EmptySince, n)
		}
	}
	for n := range m.Announced {
		if !names[n] {
			delete(m.Announced, n)
		}
	}
}

// DecideConfig is what Decide is configured with: the controller's Config and, optionally, a
// clock that times the simulation for the tiler_provisioner_simulation_duration_seconds metric.
// Decisions never read the clock; they are made at State.Now.
type DecideConfig struct {
	// Config is the controller's configuration.
	Config
	// Clock, when set, times the simulation (Decision.SimulationTime).
	Clock clock.PassiveClock
}

// Removal reasons (the reason label of tiler_provisioner_deletions_total).
const (
	// RemovalRegistrationTimeout: the launch did not become a Ready Node within
	// Config.RegistrationTimeout; its offering is marked unavailable. A node that was Ready once
	// (LaunchRecord.ReadyAt) is never removed so: when it stops being Ready (a kubelet restart, a
	// network partition) it is repair's to replace, replacement first.
	RemovalRegistrationTimeout = "registration-timeout"
	// RemovalNodeGone: the Node of a launch that was Ready once is gone (the cloud ended the
	// instance and its cloud controller deleted the Node, or a person deleted it): the instance is
	// deleted. Its offering is marked unavailable only when the cloud says it ended the instance
	// for want of capacity, and nothing counts against the pool's boots or the image.
	RemovalNodeGone = "node-gone"
	// RemovalEmpty: the managed node stayed empty for Config.EmptyNodeTTL.
	RemovalEmpty = "empty"
	// RemovalInterrupted: the cloud announced it reclaims the instance before its Node
	// registered (interruptions.go).
	RemovalInterrupted = "interrupted"
)

// Decision is what one batch decided, in the order act carries it out.
type Decision struct {
	// Batch names the batch in logs and seeds the plan's node names.
	Batch string
	// Now is when the batch decided (State.Now).
	Now time.Time
	// Relink maps launch IDs to the name of the Node their launch registered under, for the
	// records whose Node took another name than the planned one (see nodeIndex).
	Relink map[string]string
	// Announce are the managed nodes seen Ready for the first time.
	Announce []Announcement
	// MarkUnavailable are offerings to keep out of plans for Config.UnavailableTTL: those of the
	// launches removed for RemovalRegistrationTimeout.
	MarkUnavailable []api.Offering
	// Remove are the launches to delete: instance, Node and launch record.
	Remove []Removal
	// Held are the launches the plan wanted that the batch holds back: their pool's launches
	// keep failing to register (ProbeAfterFailedBoots), and one is in flight already. Their
	// pods stay pending and are planned again.
	Held []HeldLaunch
	// FailedImages are the images of the launches removed for RemovalRegistrationTimeout that no
	// Ready node booted from: remembered, and rolls onto them paused (imagefailures.go).
	FailedImages []FailedImage
	// Chargeback is simulator.Chargeback over the batch's snapshot (the nodes and pods as
	// observed), ChargebackErr why there is none; both nil without a catalog.
	Chargeback    *api.CostReport
	ChargebackErr error
	// Fleet are the managed nodes as they are once Remove is carried out.
	Fleet Fleet
	// KeptForForecast are the managed nodes a plan of the expected pods puts some of them on:
	// housekeeping does not count them as empty, disruption does not touch them (sorted).
	KeptForForecast []string
	// KeptForBooking are the nodes the booked room of ProvisioningRequests is on: not empty for
	// housekeeping, not consolidated (sorted).
	KeptForBooking []string
	// RequestUpdates are the ProvisioningRequest conditions to write (provreq.go).
	RequestUpdates []RequestUpdate
	// KeepErr is why no node could be kept for the forecast in this batch (the plan of the last
	// expected pods failed): empty nodes were judged as if no pod were expected.
	KeepErr error
	// Nominations are the pods whose nomination should change; the nomination watch writes them.
	Nominations []Nomination
	// Pending is the number of pods the batch plans: provisionable pods and expected pods.
	Pending int
	// OldestPending is how long the oldest provisionable pod (not an expected one) has existed; 0
	// with none.
	OldestPending time.Duration
	// RecheckAfter, when positive, is when to look again: at GPU pods held back by
	// Config.GPUTriggerDelay, at pods held back after a disruption evicted their peers
	// (Config.DisruptionRescheduleGrace), or at the next launch retry due (the soonest).
	RecheckAfter time.Duration
	// Retry are the launches the cloud API failed without refusing them (LaunchAttempts) whose
	// retry is due: act launches them again with the same launch ID.
	Retry []LaunchRecord
	// Placeholders are the placeholder pods to delete and to create.
	Placeholders PlaceholderChanges
	// UnavailableOfferings is the number of offerings the plan's catalog has marked unavailable.
	UnavailableOfferings int
	// Plan is the simulation's plan; nil when nothing is pending or PlanErr is set.
	Plan *api.Plan
	// PlanErr is why there is no plan although pods are pending.
	PlanErr error
	// SimulationTime is how long the simulation took (0 without DecideConfig.Clock).
	SimulationTime time.Duration
	// Tolerations maps each pod a plan puts on a reserved node, and that lacks a toleration, to
	// the node reservations (launch IDs) it must tolerate; act adds them before the launches.
	Tolerations map[string][]string
	// Launch are the launch records of the plan's new nodes, in the plan's order: act writes them
	// all, then launches them. Their CreatedAt is set when they are written.
	Launch []LaunchRecord
	// Relayouts are the plan's MIG re-layouts of existing nodes, which act starts; RelayoutsEnded
	// are those the MIG manager finished, whose annotation act removes (relayout.go).
	Relayouts      []api.NodeRelayout
	RelayoutsEnded []RelayoutEnd

	// planned indexes the pods the batch planned (pending and expected), for the launches' Events.
	planned map[string]*corev1.Pod
	// inFlight is the number of launch records the plan counted.
	inFlight int
}

// Announcement is a managed node seen Ready for the first time: act records a Provisioned Event
// on it and its boot time.
type Announcement struct {
	// Record is the node's launch record.
	Record LaunchRecord
	// Node is the Node, Ready.
	Node *corev1.Node
	// BootTime is the time from the launch to Ready; 0 when it cannot be told.
	BootTime time.Duration
}

// Removal is a launch to delete, and why (RemovalRegistrationTimeout, RemovalEmpty).
type Removal struct {
	// Record is the launch's record.
	Record LaunchRecord
	// Node is the Node to delete with it; "" for none (a Node of the record's name that belongs
	// to another instance).
	Node string
	// Reason is RemovalRegistrationTimeout, RemovalEmpty or RemovalInterrupted.
	Reason string
}

// Fleet are the gauges of the managed nodes.
type Fleet struct {
	// Nodes is the number of managed nodes, registered or in flight.
	Nodes int
	// CostPerHour is their price.
	CostPerHour float64
	// GPUAllocationRatio is requested over allocatable nvidia.com/gpu on them.
	GPUAllocationRatio float64
	// CostByPool is CostPerHour by pool and capacity type.
	CostByPool map[PoolCapacity]float64
}

// PoolCapacity is a pool and a capacity type (on-demand, spot).
type PoolCapacity struct {
	Pool         string
	CapacityType api.CapacityType
}

// Nomination is a change of one pod's nomination: the pod (namespace/name), what to do and, for
// NominationSet, the node.
type Nomination struct {
	// Pod is the pod's namespace/name.
	Pod string
	// Op is what to do to its nomination.
	Op NominationOp
	// Node is the node to nominate it for (NominationSet).
	Node string
}

// PlaceholderChanges are the placeholder pods to delete and to create (sorted by name), and the
// PriorityClass to create first when it is missing.
type PlaceholderChanges struct {
	// Delete are the placeholder pods not wanted any more.
	Delete []*corev1.Pod
	// Create are the wanted placeholder pods that do not exist.
	Create []*corev1.Pod
	// Class is the PriorityClass of Create.
	Class *schedulingv1.PriorityClass
}

// Decide makes one batch's decisions over s (see the comment at the top of this file). It updates
// mem: the batch count, and the empty-node and announcement bookkeeping.
func Decide(s State, cfg DecideConfig, mem *Memory) *Decision {
	mem.Batches++
	d := &Decision{Batch: fmt.Sprintf("%d-%d", s.Now.Unix(), mem.Batches), Now: s.Now}
	idx := newNodeIndex(s.Nodes)
	recs, moved := idx.relink(s.Records)
	d.Relink = moved
	rd := decideRequests(&s, cfg.Config, recs, idx)
	for n := range rd.nodes {
		d.KeptForBooking = append(d.KeptForBooking, n)
	}
	sort.Strings(d.KeptForBooking)
	defer func() { d.RequestUpdates = rd.updates }()
	recs = d.housekeep(&s, cfg.Config, mem, recs, idx)
	if cfg.Nominate {
		d.Nominations = decideNominations(&s, recs)
	}
	if s.Catalog != nil {
		d.Chargeback, d.ChargebackErr = simulator.Chargeback(s.snapshot(nil), s.Catalog, s.Policy)
	}
	pending, held := provisionablePods(s.Pods, s.Now, cfg.GPUTriggerDelay)
	if held {
		d.RecheckAfter = cfg.GPUTriggerDelay
	}
	if len(pending) > 0 && cfg.PlanUnjudgedWithin > 0 {
		// The scheduler found no place for some pods: those it has not judged yet arrived with
		// them and are planned with them (existing capacity first), so that a burst is planned
		// in one batch rather than in the slices the scheduler has marked so far.
		pending = append(pending, unjudgedPods(s.Pods, s.Now, cfg.PlanUnjudgedWithin, cfg.GPUTriggerDelay > 0)...)
	}
	// Pods a disruption evicted are expected where its plan moved them: not a reason to buy.
	pending, wait := holdEvicted(pending, s.DisruptionEvicted, s.Now, cfg.DisruptionRescheduleGrace)
	if wait > 0 && (d.RecheckAfter == 0 || wait < d.RecheckAfter) {
		d.RecheckAfter = wait
	}
	var retryIn time.Duration
	d.Retry, retryIn = launchRetries(recs, s.Launching, s.Now)
	if retryIn > 0 && (d.RecheckAfter == 0 || retryIn < d.RecheckAfter) {
		d.RecheckAfter = retryIn
	}
	setPlaceholders := func() {
		if s.ExpectedErr == nil {
			class := s.PlaceholderClass
			if class == nil {
				class = s.ProvisioningRequestClass
			}
			wanted := append(slices.Clone(s.WantedPlaceholders), rd.placeholders...)
			d.Placeholders = placeholderChanges(s.Placeholders, wanted, class)
		}
	}
	setPlaceholders()
	for _, p := range pending {
		if age := s.Now.Sub(p.CreationTimestamp.Time); age > d.OldestPending {
			d.OldestPending = age
		}
	}
	pending = append(pending, s.Expected...)
	// Booked room is planned first (the highest priority); the gangs of best-effort-atomic
	// requests are planned and bought for as pending pods are.
	simOnly := slices.Clone(rd.booked)
	for _, k := range slices.Sorted(maps.Keys(rd.atomic)) {
		simOnly = append(simOnly, rd.atomic[k]...)
	}
	pending = append(pending, simOnly...)
	d.Pending = len(pending)
	relayouting, ended := relayouts(s.Nodes, s.Now, cfg.RegistrationTimeout)
	d.RelayoutsEnded = ended
	if len(pending) == 0 {
		return d
	}
	snap := s.snapshot(pending)
	unavailable := s.Unavailable
	if len(d.MarkUnavailable) > 0 {
		unavailable = slices.Clone(s.Unavailable)
		for _, o := range d.MarkUnavailable {
			unavailable = append(unavailable, cloudprovider.UnavailableEntry{Offering: o, Code: RemovalRegistrationTimeout,
				Until: s.Now.Add(cfg.UnavailableTTL)})
		}
	}
	cat, marked := cloudprovider.MarkCatalog(s.Catalog, unavailable, s.Now)
	d.UnavailableOfferings = marked
	var start time.Time
	if cfg.Clock != nil {
		start = cfg.Clock.Now()
	}
	d.inFlight = len(recs)
	flying, bought := inFlight(recs, idx, s.ResourceSlices)
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: s.Policy,
		Options: simulator.Options{Now: s.Now, Seed: d.Batch, InFlight: flying, Bought: bought,
			MIGRelayout: cfg.MIGRelayout, Relayouting: relayouting, NoPreemption: true}})
	if cfg.Clock != nil {
		d.SimulationTime = cfg.Clock.Since(start)
	}
	if err != nil {
		d.PlanErr = err
		return d
	}
	d.Plan = plan
	d.planned = podIndex(pending)
	d.settleAtomic(rd, plan, s.Now)
	setPlaceholders()
	if cfg.Reserve {
		expected := make(map[string]bool, len(s.Expected))
		for _, p := range append(slices.Clone(s.Expected), simOnly...) {
			expected[p.Namespace+"/"+p.Name] = true
		}
		d.Tolerations = tolerationsToAdd(plan, recs, idx, d.planned, expected)
	}
	probing := probingPools(mem, recs, idx)
	for _, n := range plan.NewNodes {
		r := recordFor(n, s.Now, s.Policy)
		r.Batch = d.Batch
		if probe, ok := probing[r.Pool]; ok {
			if probe != "" {
				d.Held = append(d.Held, HeldLaunch{Record: r, Why: fmt.Sprintf("pool %s: %d launches in a row did not register; one node at a time until one does (launch %s is the probe)",
					r.Pool, len(mem.FailedBoots[r.Pool]), probe)})
				continue
			}
			probing[r.Pool] = r.LaunchID
		}
		d.Launch = append(d.Launch, r)
	}
	d.Relayouts = plan.Relayouts
	return d
}

// HeldLaunch is a launch the plan wanted and the batch holds back, and why.
type HeldLaunch struct {
	Record LaunchRecord
	Why    string
}

// probingPools returns the pools whose last ProbeAfterFailedBoots launches or more did not
// register (Memory.FailedBoots), each with the launch in flight that probes it ("" for none yet:
// the batch may launch one).
func probingPools(mem *Memory, recs []LaunchRecord, idx nodeIndex) map[string]string {
	var out map[string]string
	for pool, failed := range mem.FailedBoots {
		if len(failed) >= ProbeAfterFailedBoots {
			if out == nil {
				out = map[string]string{}
			}
			out[pool] = ""
		}
	}
	if out == nil {
		return nil
	}
	for _, r := range recs {
		if probe, ok := out[r.Pool]; ok && probe == "" {
			if n := idx.forRecord(r); n == nil || !snapshot.IsNodeReady(n) {
				out[r.Pool] = r.LaunchID
			}
		}
	}
	return out
}

// housekeep decides on the launches: it announces the nodes that turned Ready, removes the
// launches that did not register in time (marking their offering unavailable), those whose Node
// is gone after it was Ready (RemovalNodeGone; one that is there and not Ready is repair's) and the managed
// nodes that stayed empty for EmptyNodeTTL (never below a pool's minNodes), and sums up the
// fleet. A node that a plan of the last expected pods needs is not empty: it is kept for the
// forecast (keptForForecast), from housekeeping and from disruption. It returns the records that
// remain.
func (d *Decision) housekeep(s *State, cfg Config, mem *Memory, recs []LaunchRecord, idx nodeIndex) []LaunchRecord {
	mem.forget(recs)
	busy := map[string]bool{}
	for _, p := range s.Pods {
		if snapshot.IsActive(p) && !snapshot.IsDaemonSetPod(p) {
			busy[p.Spec.NodeName] = true
		}
	}
	kept, err := keptForForecast(s, recs, idx)
	d.KeepErr = err
	for _, n := range d.KeptForBooking {
		busy[n] = true
	}
	for n := range kept {
		d.KeptForForecast = append(d.KeptForForecast, n)
	}
	sort.Strings(d.KeptForForecast)
	now := s.Now
	poolNodes := map[string]int{}
	booted := map[string]bool{} // boots (simulator.BootName) of the Ready nodes
	for _, r := range recs {
		poolNodes[r.Pool]++
		if n := idx.forRecord(r); n != nil && snapshot.IsNodeReady(n) {
			booted[simulator.BootName(r.Image, r.Settings)] = true
		}
	}
	removed := map[string]bool{}
	var cost float64
	costByPool := map[PoolCapacity]float64{}
	for _, r := range recs {
		if s.Removing[r.LaunchID] {
			poolNodes[r.Pool]--
			removed[r.LaunchID] = true
			continue
		}
		n := idx.forRecord(r)
		if n != nil && snapshot.IsNodeReady(n) && !mem.Announced[r.NodeName] {
			mem.Announced[r.NodeName] = true
			if r.ReadyAt.IsZero() {
				// A node that registers now ends the pool's failed boots; one a process before
				// this one saw Ready (a restart) says nothing of the launches since.
				delete(mem.FailedBoots, r.Pool)
			}
			d.Announce = append(d.Announce, Announcement{Record: r, Node: n, BootTime: bootTime(r, n, now)})
		}
		wasReady := !r.ReadyAt.IsZero() || mem.Announced[r.NodeName]
		switch {
		case n == nil && wasReady && !s.Launching[r.LaunchID]:
			d.Remove = append(d.Remove, Removal{Record: r, Node: idx.nodeToDelete(r), Reason: RemovalNodeGone})
			poolNodes[r.Pool]--
			removed[r.LaunchID] = true
			continue
		case (n == nil || !snapshot.IsNodeReady(n)) && !wasReady && now.Sub(r.CreatedAt) > cfg.RegistrationTimeout && !s.Launching[r.LaunchID]:
			// (A launch whose call is under way is removed once the call has returned: a removal
			// now could miss the instance the call is creating.)
			d.MarkUnavailable = append(d.MarkUnavailable, r.Offering)
			d.Remove = append(d.Remove, Removal{Record: r, Node: idx.nodeToDelete(r), Reason: RemovalRegistrationTimeout})
			if mem.FailedBoots == nil {
				mem.FailedBoots = map[string]map[string]bool{}
			}
			if mem.FailedBoots[r.Pool] == nil {
				mem.FailedBoots[r.Pool] = map[string]bool{}
			}
			mem.FailedBoots[r.Pool][r.LaunchID] = true
			if boot := simulator.BootName(r.Image, r.Settings); boot != "" && !booted[boot] {
				// No Ready node booted from the image (with the settings): it may not boot at all.
				d.FailedImages = append(d.FailedImages, FailedImage{Image: boot, Node: r.NodeName, At: now,
					Why: fmt.Sprintf("launch %s (%s) booted from it did not register within %s, and no Ready node booted from it", r.LaunchID, r.Offering, cfg.RegistrationTimeout)})
			}
			poolNodes[r.Pool]--
			removed[r.LaunchID] = true
			continue
		case n != nil && !busy[n.Name] && !kept[n.Name] && n.Annotations[api.AnnotationDisruptionAction] == "":
			// (A node under a disruption action is the disruption loop's to remove.)
			// A removal that fails keeps the node's entry, so the next batch tries again at once;
			// one that succeeds takes the record, and the entry goes with it (Memory.forget).
			since, seen := mem.EmptySince[n.Name]
			if !seen {
				mem.EmptySince[n.Name] = now
			} else if now.Sub(since) >= cfg.EmptyNodeTTL && poolNodes[r.Pool] > minNodes(s.Policy, r.Pool) {
				d.Remove = append(d.Remove, Removal{Record: r, Node: n.Name, Reason: RemovalEmpty})
				poolNodes[r.Pool]--
				removed[r.LaunchID] = true
				continue
			}
		default:
			delete(mem.EmptySince, r.NodeName) // relinked: n.Name when n != nil
		}
		cost += r.PricePerHour
		costByPool[PoolCapacity{r.Pool, r.CapacityType}] += r.PricePerHour
	}
	d.Fleet = Fleet{Nodes: len(recs) - len(removed), CostPerHour: cost, GPUAllocationRatio: gpuAllocationRatio(recs, idx, s.Pods),
		CostByPool: costByPool}
	if len(removed) == 0 {
		return recs
	}
	out := make([]LaunchRecord, 0, len(recs)-len(removed))
	for _, r := range recs {
		if !removed[r.LaunchID] {
			out = append(out, r)
		}
	}
	return out
}

// launchRetries returns the records of launches the cloud API failed without refusing them whose
// retry is due at now, and how long until the next one that is not (0 for none). A launch whose
// call is under way (launching) is not retried: its call decides.
func launchRetries(recs []LaunchRecord, launching map[string]bool, now time.Time) (due []LaunchRecord, next time.Duration) {
	for _, r := range recs {
		if r.InstanceID != "" || r.LaunchAttempts == 0 || launching[r.LaunchID] {
			continue
		}
		if wait := r.RetryAt.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		due = append(due, r)
	}
	return due, next
}

// minNodes is the pool's minNodes in the policy (0 without one).
func minNodes(p *policy.CostPolicy, pool string) int {
	if p != nil {
		for _, pl := range p.Pools {
			if pl.Name == pool {
				return pl.MinNodes
			}
		}
	}
	return 0
}

// bootTime is the time from the launch r to Ready of its node n, seen Ready at now: to the Ready
// condition's transition, or to now when that is older than the launch; 0 when not after it.
func bootTime(r LaunchRecord, n *corev1.Node, now time.Time) time.Duration {
	at := now
	if t, _ := snapshot.NodeReadySince(n); t.After(r.CreatedAt) && !t.After(now) {
		at = t
	}
	return max(0, at.Sub(r.CreatedAt))
}

// gpuAllocationRatio is requested over allocatable nvidia.com/gpu on the managed nodes.
func gpuAllocationRatio(recs []LaunchRecord, idx nodeIndex, pods []*corev1.Pod) float64 {
	managed := map[string]bool{}
	var alloc int64
	for _, r := range recs {
		if n := idx.forRecord(r); n != nil {
			managed[n.Name] = true
			q := n.Status.Allocatable["nvidia.com/gpu"]
			alloc += q.Value()
		}
	}
	if alloc == 0 {
		return 0
	}
	var used int64
	for _, p := range pods {
		if snapshot.IsActive(p) && managed[p.Spec.NodeName] {
			for _, ctr := range p.Spec.Containers {
				q := ctr.Resources.Requests["nvidia.com/gpu"]
				used += q.Value()
			}
		}
	}
	return float64(used) / float64(alloc)
}

// provisionablePods returns the pods that may trigger a purchase at now, and whether GPU pods
// were held back: GPU pods unschedulable for less than delay wait for a later batch, so that a
// rollout's pods are planned together.
func provisionablePods(pods []*corev1.Pod, now time.Time, delay time.Duration) (out []*corev1.Pod, held bool) {
	for _, p := range pods {
		if !provisionable(p) {
			continue
		}
		if delay > 0 && requestsGPU(p) {
			if cond, ok := unschedulableSince(p); ok && now.Sub(cond.LastTransitionTime.Time) < delay {
				held = true
				continue
			}
		}
		out = append(out, p)
	}
	return out, held
}

// unjudgedPods returns the pods the scheduler has not judged yet (unjudged) that were created
// within the last window before now; GPU pods only when noGPU is false (a GPU trigger delay holds
// GPU pods until they have been unschedulable that long, which an unjudged pod has not).
//
// A pod that may preempt (a priority above the lowest of the running pods, preemptionPolicy not
// Never) waits for the scheduler's judgement: the batch plans without the preemption model
// (Options.NoPreemption) because a marked pod is one the scheduler found no victims for, which an
// unjudged pod is not yet.
func unjudgedPods(pods []*corev1.Pod, now time.Time, window time.Duration, noGPU bool) []*corev1.Pod {
	lowest, running := int32(0), false
	for _, p := range pods {
		if snapshot.IsActive(p) && p.DeletionTimestamp == nil && !snapshot.IsDaemonSetPod(p) && (!running || priorityOf(p) < lowest) {
			lowest, running = priorityOf(p), true
		}
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !unjudged(p) || now.Sub(p.CreationTimestamp.Time) > window || noGPU && requestsGPU(p) {
			continue
		}
		if running && priorityOf(p) > lowest && (p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// priorityOf is the pod's priority as admission set it (0 when unset).
func priorityOf(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// placeholderChanges compares the placeholder pods that exist with those wanted: the ones not
// wanted any more are deleted (a terminating one is left to go), the wanted ones that do not exist
// are created, once a terminating namesake is gone.
func placeholderChanges(existing, wanted []*corev1.Pod, class *schedulingv1.PriorityClass) PlaceholderChanges {
	want := make(map[string]bool, len(wanted))
	for _, p := range wanted {
		want[p.Namespace+"/"+p.Name] = true
	}
	var ch PlaceholderChanges
	have := make(map[string]bool, len(existing))
	for _, p := range existing {
		key := p.Namespace + "/" + p.Name
		have[key] = true
		if !want[key] && p.DeletionTimestamp == nil {
			ch.Delete = append(ch.Delete, p)
		}
	}
	for _, p := range wanted {
		if !have[p.Namespace+"/"+p.Name] {
			ch.Create = append(ch.Create, p)
		}
	}
	sort.Slice(ch.Create, func(i, j int) bool { return ch.Create[i].Name < ch.Create[j].Name })
	if len(ch.Create) > 0 {
		ch.Class = class
	}
	return ch
}

// inFlight turns launch records into capacity the simulation counts: records whose Node has not
// registered, is not Ready or still carries a start-up taint, or has not published the GPUs it
// was bought for (the device-plugin gap, when a node looks GPU-less and peers buy again). An in-flight node is named as its Node,
// once registered (under whatever name), so that the simulator takes it for that Node and counts
// the pods bound there; until then it keeps the planned name.
//
// The records of the other nodes (registered, Ready, devices published) are returned as bought
// nodes: the pods they were bought for, while still pending, go back there first. A node that
// was Ready once and is not, or whose Node is gone, is neither (phaseDown): it is not coming up.
func inFlight(recs []LaunchRecord, idx nodeIndex, slices []*resourcev1.ResourceSlice) ([]simulator.InFlightNode, []simulator.BoughtNode) {
	sliced := slicedNodes(slices)
	var out []simulator.InFlightNode
	var bought []simulator.BoughtNode
	for _, r := range recs {
		name := r.NodeName
		n := idx.forRecord(r)
		// A node is in flight until it can take its planned pods: Ready, without the taints of a
		// node coming up (the not-ready taint outlives the Ready condition for a moment, and a
		// node counted as existing then is one its pods cannot use: they were bought for again),
		// and, for GPUs, with its devices showing: device-plugin resources in its allocatable, or
		// ResourceSlices for GPUs that only the DRA driver publishes. A node that was Ready once
		// and is not, or whose Node is gone, is down, not coming up: neither.
		switch phaseOf(n, r, n != nil && sliced[n.Name]) {
		case phaseUsable:
			if len(r.Pods) > 0 {
				bought = append(bought, simulator.BoughtNode{Name: n.Name, Pods: r.Pods})
			}
			continue
		case phaseDown:
			continue
		}
		if n != nil {
			name = n.Name
		}
		out = append(out, simulator.InFlightNode{
			PricedOffering: r.PricedOffering,
			Name:           name,
			Pool:           r.Pool,
			GPU:            r.GPU,
			Pods:           r.Pods,
			Claims:         r.Claims,
		})
	}
	return out, bought
}

// slicedNodes returns the nodes that DRA ResourceSlices exist for.
func slicedNodes(slices []*resourcev1.ResourceSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range slices {
		if s.Spec.NodeName != nil {
			out[*s.Spec.NodeName] = true
		}
	}
	return out
}

// devicesShown reports whether the node shows the GPUs its launch was bought for the way the plan
// counted them (simulator.deviceVariants): as device-plugin resources in its allocatable, unless
// the record's GPU configuration has the DRA driver alone publish them (api.GPUConfig.DRAPublishes:
// consumable memory, dynamic MIG, whole GPUs for ResourceClaims), and then as ResourceSlices
// (sliced). A node is not usable for the pods planned on its GPUs before it shows them: taken for
// usable, it looked GPU-less, and its pods were bought for again (20-26 nodes in 1,000-pod bursts).
func devicesShown(n *corev1.Node, r LaunchRecord, sliced bool) bool {
	if r.GPUs == 0 {
		return true
	}
	if r.GPU != nil && r.GPU.DRAPublishes() {
		return sliced
	}
	// In capacity too: a node whose GPUs failed keeps them in capacity and drops them from
	// allocatable (the device plugin's unhealthy devices); it has shown them, and is a node to
	// repair, not one still coming up.
	return devicesPublished(n, r) || gpusInCapacity(n)
}

// gpusInCapacity reports whether the node's capacity lists GPU resources.
func gpusInCapacity(n *corev1.Node) bool {
	for name, q := range n.Status.Capacity {
		if strings.HasPrefix(string(name), "nvidia.com/") && !q.IsZero() {
			return true
		}
	}
	return false
}

// devicesPublished reports whether a GPU node advertises GPU resources yet.
func devicesPublished(n *corev1.Node, r LaunchRecord) bool {
	if r.GPUs == 0 {
		return true
	}
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), "nvidia.com/") && !q.IsZero() {
			return true
		}
	}
	return false
}

// tolerationsToAdd returns, for each pod of the plan on a reserved node that the API server has
// (expected pods are the simulation's alone) and that lacks one of the reservations' tolerations,
// the node reservations it must tolerate (reservationValues). pods indexes the planned pods.
func tolerationsToAdd(plan *api.Plan, recs []LaunchRecord, idx nodeIndex, pods map[string]*corev1.Pod,
	expected map[string]bool) map[string][]string {
	values := reservationValues(plan, recs, idx, func(name string) *corev1.Node { return idx.byName[name] })
	out := map[string][]string{}
	for key, vs := range values {
		p := pods[key]
		if p == nil || expected[key] {
			continue
		}
		for _, v := range vs {
			if !toleratesReservation(p, v) {
				out[key] = vs
				break
			}
		}
	}
	return out
}

// podIndex indexes pods by namespace/name.
func podIndex(pods []*corev1.Pod) map[string]*corev1.Pod {
	m := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		m[p.Namespace+"/"+p.Name] = p
	}
	return m
}
