package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
)

// Config is what a replay runs with besides the workload and the policy.
type Config struct {
	// Catalog is the instance types and prices every policy buys from.
	Catalog *catalog.Catalog
	// Controller is the configuration Decide runs with (batching, EmptyNodeTTL, resync).
	// DefaultConfig takes the controller's defaults with nominations and node reservations off:
	// the scheduler model binds the pods a launch was bought for to its node first instead.
	Controller provisioner.Config
	// BootDelay is the time from a launch to a Ready Node without GPUs, GPUBootDelay with GPUs;
	// DeviceDelay the time from Ready to the GPUs published (the device-plugin gap).
	BootDelay, GPUBootDelay, DeviceDelay time.Duration
	// ConsolidationInterval is how often a consolidating policy plans disruption.
	ConsolidationInterval time.Duration
	// SampleInterval spaces the time series of the result.
	SampleInterval time.Duration
	// PrescaleInterval is how often a forecasting policy's pre-scaler sizes its forecasts again
	// (the controller's prescale Interval; in between, the last round's demand is held as the
	// controller holds it); PrescaleHistory how much of a load series' past each round reads.
	PrescaleInterval, PrescaleHistory time.Duration
	// CapacityTypes the policies buy (nil: on-demand only).
	CapacityTypes []api.CapacityType
	// SpotInterruptionRate is the expected number of interruptions per spot instance-hour: each
	// spot launch is reclaimed at a time drawn from an exponential distribution of that rate from
	// its launch, as a Poisson process would (interrupt.go); 0 interrupts nothing.
	// InterruptionSeed seeds the draws: each launch's from the seed and its launch ID alone, so
	// the same seed gives the same result. InterruptionGrace is the time from the notice to the
	// reclaim (EC2's two minutes).
	SpotInterruptionRate float64
	InterruptionSeed     uint64
	InterruptionGrace    time.Duration
	// Progress, when set, is called with the policy (or PolicyClairvoyant) and the virtual time
	// reached, at most once per ProgressEvery of virtual time.
	Progress      func(policy string, reached, total time.Duration)
	ProgressEvery time.Duration
}

// DefaultConfig is the replay's defaults on a catalog.
func DefaultConfig(cat *catalog.Catalog) Config {
	ctrl := provisioner.DefaultConfig()
	ctrl.Nominate, ctrl.Reserve = false, false
	return Config{Catalog: cat, Controller: ctrl, BootDelay: 90 * time.Second, GPUBootDelay: 3 * time.Minute,
		DeviceDelay: time.Minute, ConsolidationInterval: time.Minute, SampleInterval: 5 * time.Minute,
		PrescaleInterval: DefaultPrescaleInterval, PrescaleHistory: prescale.DefaultHistory,
		SpotInterruptionRate: DefaultSpotInterruptionRate, InterruptionSeed: DefaultInterruptionSeed, InterruptionGrace: DefaultInterruptionGrace}
}

// DefaultPrescaleInterval is the replay's pre-scaling round: the grid of the controller's
// history queries (prescale.DefaultStep) rather than its 30 s between rounds, since a round
// forecasts from weeks of history (tens of milliseconds) and the loads replayed move on a grid of
// 30 minutes.
const DefaultPrescaleInterval = prescale.DefaultStep

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	switch {
	case c.Catalog == nil:
		return errors.New("catalog is required")
	case c.BootDelay < 0 || c.GPUBootDelay < 0 || c.DeviceDelay < 0:
		return errors.New("bootDelay, gpuBootDelay and deviceDelay must not be negative")
	case c.ConsolidationInterval <= 0:
		return errors.New("consolidationInterval must be positive")
	case c.SampleInterval <= 0:
		return errors.New("sampleInterval must be positive")
	case c.PrescaleInterval <= 0:
		return errors.New("prescaleInterval must be positive")
	case c.PrescaleHistory <= 0:
		return errors.New("prescaleHistory must be positive")
	case c.SpotInterruptionRate < 0 || math.IsNaN(c.SpotInterruptionRate) || math.IsInf(c.SpotInterruptionRate, 0):
		return fmt.Errorf("spotInterruptionRate %v: must be a finite number ≥ 0 (interruptions per spot instance-hour)", c.SpotInterruptionRate)
	case c.InterruptionGrace < 0:
		return errors.New("interruptionGrace must not be negative")
	}
	return c.Controller.Validate()
}

// podState is a workload pod in the world.
type podState struct {
	spec *Pod
	obj  *corev1.Pod
	key  string
	// arrived and departed bracket its life; boundAt is its first binding (zero: never bound).
	arrived, departed bool
	boundAt           time.Time
	evictions         int
	// requeuedAt is when an interruption last evicted the pod while it has not been bound again
	// (zero: none); rewait sums the time it spent pending again after interruptions.
	requeuedAt time.Time
	rewait     time.Duration
}

// nodeState is one launch of the simulated cloud: its record, the node it was planned as, its
// Node once registered, and the cloud's deadlines.
type nodeState struct {
	rec                provisioner.LaunchRecord
	planned            api.NewNode
	obj                *corev1.Node
	readyAt, devicesAt time.Time
	devices            bool
	// drainFor names the replacements (launch IDs) still to come before this node drains.
	drainFor    []string
	drainReason string
	// candidateSince is when disruption first listed the node as a candidate.
	candidateSince time.Time
	// reclaimAt is when the cloud reclaims a spot instance (zero: never); noticed says its notice
	// came (InterruptionGrace before). An instance noticed before its Node registered is removed
	// at the notice, as the controller removes it.
	reclaimAt time.Time
	noticed   bool
}

// usable reports whether the node is Ready with its GPUs published.
func (n *nodeState) usable() bool { return n.obj != nil && (n.rec.GPUs == 0 || n.devices) }

// world is the cluster a replay runs: the pods, the simulated cloud and the controller's records.
type world struct {
	cfg   Config
	pol   Policy
	wl    *Workload
	mem   *provisioner.Memory
	now   time.Time
	pods  []*podState
	live  map[string]*podState
	nodes map[string]*nodeState
	// instances numbers the simulated cloud's instance IDs.
	instances int
	// noTypes is the catalog the scheduler model places with: no types, so it buys nothing;
	// schedPolicy the policy's pools without their instance types, which noTypes lacks.
	noTypes     *catalog.Catalog
	schedPolicy *policy.CostPolicy
	// groups are the workload's gangs as PodGroups.
	groups []*schedulingv1beta1.PodGroup
	pre    prescaler
	acct   accounting
	// unavailable are the offerings marked unavailable (State.Unavailable): interrupted ones and
	// those of launches that did not register.
	unavailable []provisioner.UnavailableEntry
}

// Run replays the workload under the policy and returns what it cost.
func Run(wl *Workload, pol Policy, cfg Config) (*Result, error) {
	if err := wl.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := newWorld(wl, pol, cfg)
	arrivals := append([]*podState(nil), w.pods...)
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].spec.Arrive < arrivals[j].spec.Arrive })
	departures := append([]*podState(nil), w.pods...)
	sort.SliceStable(departures, func(i, j int) bool { return departures[i].spec.Depart < departures[j].spec.Depart })

	end := wl.Start.Add(wl.Length)
	ctrl := cfg.Controller
	prog := newProgress(cfg, pol.Name, wl.Length)
	nextResync, nextSample := wl.Start, wl.Start
	nextDisrupt := wl.Start.Add(cfg.ConsolidationInterval)
	var batchAt time.Time
	for {
		t := end
		if len(arrivals) > 0 {
			t = earliest(t, wl.Start.Add(arrivals[0].spec.Arrive))
		}
		if len(departures) > 0 {
			t = earliest(t, wl.Start.Add(departures[0].spec.Depart))
		}
		t = earliest(t, w.nextCloudEvent(), batchAt, nextResync, nextSample)
		if pol.Consolidation != ConsolidateNone {
			t = earliest(t, nextDisrupt)
		}
		if !t.Before(end) {
			break
		}
		w.now = t
		prog.at(t.Sub(wl.Start))
		changed := false
		for len(departures) > 0 && !wl.Start.Add(departures[0].spec.Depart).After(t) {
			w.depart(departures[0])
			departures = departures[1:]
			changed = true
		}
		for len(arrivals) > 0 && !wl.Start.Add(arrivals[0].spec.Arrive).After(t) {
			w.arrive(arrivals[0])
			arrivals = arrivals[1:]
			changed = true
		}
		stepped, err := w.cloudStep()
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", pol.Name, t.Sub(wl.Start), err)
		}
		changed = changed || stepped
		if pol.Consolidation != ConsolidateNone && !nextDisrupt.After(t) {
			nextDisrupt = t.Add(cfg.ConsolidationInterval)
			acted, err := w.disrupt()
			if err != nil {
				return nil, fmt.Errorf("%s at %s: %w", pol.Name, t.Sub(wl.Start), err)
			}
			changed = changed || acted
		}
		if changed {
			pending, err := w.schedule()
			if err != nil {
				return nil, fmt.Errorf("%s at %s: %w", pol.Name, t.Sub(wl.Start), err)
			}
			if pending > 0 && batchAt.IsZero() {
				batchAt = t.Add(ctrl.BatchIdle)
			}
		}
		resync := !nextResync.After(t)
		if resync || !batchAt.IsZero() && !batchAt.After(t) {
			w.batch()
			batchAt = time.Time{}
			if resync {
				nextResync = t.Add(ctrl.ResyncPeriod)
			}
		}
		if !nextSample.After(t) {
			w.sample()
			nextSample = t.Add(cfg.SampleInterval)
		}
	}
	w.now = end
	if err := w.checkBindings(); err != nil {
		return nil, fmt.Errorf("%s at the end: %w", pol.Name, err)
	}
	return w.finish(), nil
}

// newWorld is the world of a replay at the workload's start: no node, no pod arrived.
func newWorld(wl *Workload, pol Policy, cfg Config) *world {
	w := &world{cfg: cfg, pol: pol, wl: wl, mem: provisioner.NewMemory(), now: wl.Start,
		live: map[string]*podState{}, nodes: map[string]*nodeState{},
		noTypes: &catalog.Catalog{Name: cfg.Catalog.Name, Provider: cfg.Catalog.Provider, Region: cfg.Catalog.Region, Zones: cfg.Catalog.Zones}}
	w.acct.init(pol.Name)
	w.groups = podGroups(wl.Gangs)
	sp := *pol.Cost
	sp.Pools = append([]policy.Pool(nil), pol.Cost.Pools...)
	w.schedPolicy = &sp
	for i := range w.schedPolicy.Pools {
		w.schedPolicy.Pools[i].InstanceTypes, w.schedPolicy.Pools[i].InstanceFamilies = nil, nil
	}
	for i := range wl.Pods {
		p := &wl.Pods[i]
		w.pods = append(w.pods, &podState{spec: p, key: Namespace + "/" + p.Name})
	}
	return w
}

// progress reports the virtual time reached to Config.Progress.
type progress struct {
	fn     func(string, time.Duration, time.Duration)
	policy string
	every  time.Duration
	total  time.Duration
	next   time.Duration
}

func newProgress(cfg Config, policy string, total time.Duration) *progress {
	every := cfg.ProgressEvery
	if every <= 0 {
		every = time.Hour
	}
	return &progress{fn: cfg.Progress, policy: policy, every: every, total: total}
}

func (p *progress) at(reached time.Duration) {
	if p.fn != nil && reached >= p.next {
		p.fn(p.policy, reached, p.total)
		p.next = reached + p.every
	}
}

// earliest is the earliest of t and the non-zero times ts.
func earliest(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if !u.IsZero() && u.Before(t) {
			t = u
		}
	}
	return t
}

// arrive creates the pod's object, pending.
func (w *world) arrive(p *podState) {
	p.arrived = true
	p.obj = podObject(p.spec, w.pol.ShareGPUs, metav1.NewTime(w.now))
	w.live[p.key] = p
}

// depart deletes the pod: the room it held is free at once.
func (w *world) depart(p *podState) {
	if !p.arrived || p.departed {
		return
	}
	p.departed = true
	delete(w.live, p.key)
	w.acct.podDone(p, w.wl.Start, w.now)
}

// bind binds the pod to the node, running.
func (w *world) bind(p *podState, node string) {
	p.obj.Spec.NodeName = node
	p.obj.Status.Phase = corev1.PodRunning
	p.obj.Status.Conditions = nil
	if p.boundAt.IsZero() {
		p.boundAt = w.now
	}
	if !p.requeuedAt.IsZero() {
		p.rewait += w.now.Sub(p.requeuedAt)
		p.requeuedAt = time.Time{}
	}
}

// evict makes a bound pod pending again (its controller recreates it; the replay keeps its
// name and its departure).
func (w *world) evict(p *podState) {
	p.evictions++
	w.acct.evictions++
	p.obj = podObject(p.spec, w.pol.ShareGPUs, metav1.NewTime(w.now))
}

// markUnschedulable records that the scheduler found no node for the pod, as kube-scheduler's
// PodScheduled=False condition does (from the first failed attempt).
func markUnschedulable(p *corev1.Pod, now time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now)})
}

// launch starts an instance for the record: it registers as a Ready Node after the boot delay
// and publishes its GPUs after the device delay.
func (w *world) launch(rec provisioner.LaunchRecord, planned api.NewNode) {
	w.instances++
	rec.InstanceID = fmt.Sprintf("i-%06d", w.instances)
	rec.CreatedAt = w.now
	boot := w.cfg.BootDelay
	if rec.GPUs > 0 {
		boot = w.cfg.GPUBootDelay
	}
	n := &nodeState{rec: rec, planned: planned, readyAt: w.now.Add(boot), reclaimAt: w.reclaimTime(rec)}
	if rec.GPUs > 0 {
		n.devicesAt = n.readyAt.Add(w.cfg.DeviceDelay)
	}
	w.nodes[rec.LaunchID] = n
	w.acct.launched(rec, w.cfg.Catalog)
}

// nextCloudEvent is the next registration or device publication (zero: none).
func (w *world) nextCloudEvent() time.Time {
	var t time.Time
	for _, n := range w.nodes {
		switch {
		case n.obj == nil:
			t = earliestNonZero(t, n.readyAt)
		case n.rec.GPUs > 0 && !n.devices:
			t = earliestNonZero(t, n.devicesAt)
		}
		if e := w.interruptionEvent(n); !e.IsZero() {
			t = earliestNonZero(t, e)
		}
	}
	return t
}

func earliestNonZero(t, u time.Time) time.Time {
	if t.IsZero() || u.Before(t) {
		return u
	}
	return t
}

// cloudStep registers the instances whose boot is over and publishes the GPUs whose device delay
// is over; it delivers the spot interruptions due (interrupt.go); a replacement that becomes
// usable drains the nodes it replaces. It reports whether anything changed.
func (w *world) cloudStep() (bool, error) {
	changed := false
	var usableNow []string
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if n.obj == nil && !n.readyAt.After(w.now) {
			n.obj = nodeObject(n.planned, n.readyAt, false)
			changed = true
			if n.usable() {
				usableNow = append(usableNow, name)
			}
		}
		if n.obj != nil && n.rec.GPUs > 0 && !n.devices && !n.devicesAt.After(w.now) {
			n.devices = true
			n.obj.Status.Allocatable = n.planned.Allocatable.DeepCopy()
			n.obj.Status.Capacity = n.obj.Status.Allocatable
			changed = true
			usableNow = append(usableNow, name)
		}
	}
	interrupted, err := w.interrupt()
	if err != nil {
		return false, err
	}
	for _, repl := range usableNow {
		for _, name := range w.nodeNames() {
			n := w.nodes[name]
			if n == nil || !slices.Contains(n.drainFor, repl) {
				continue
			}
			if n.drainFor = slices.DeleteFunc(n.drainFor, func(id string) bool { return id == repl }); len(n.drainFor) == 0 {
				w.removeNode(name, n.drainReason)
			}
		}
	}
	return changed || interrupted, nil
}

// removeNode deletes the instance and its Node; the pods on it are evicted. Pods evicted from an
// interrupted node wait again, and that wait counts (podState.rewait).
func (w *world) removeNode(name, reason string) {
	n, ok := w.nodes[name]
	if !ok {
		return
	}
	idx, logged := w.acct.interruptionIdx[name]
	for _, p := range w.livePods() {
		if p.obj.Spec.NodeName == name {
			w.evict(p)
			if n.noticed {
				w.acct.interruptionEvictions++
				p.requeuedAt = w.now
				if logged {
					w.acct.res.InterruptionLog[idx].Evicted++
				}
			}
		}
	}
	if logged && n.noticed {
		w.acct.res.InterruptionLog[idx].Removed, w.acct.res.InterruptionLog[idx].Gone = w.now.Sub(w.wl.Start), true
	}
	delete(w.nodes, name)
	w.acct.removed(n, w.now, reason)
	// A replacement that goes before it was usable (its spot instance reclaimed while booting)
	// never comes: an interrupted node waiting for it drains now (its pods are bought for as any
	// pending pod); a consolidation's nodes are uncordoned (the action is abandoned).
	for _, other := range w.nodeNames() {
		o := w.nodes[other]
		if !slices.Contains(o.drainFor, name) {
			continue
		}
		if o.noticed {
			w.removeNode(other, removalInterrupted)
			continue
		}
		o.drainFor, o.drainReason = nil, ""
		o.obj.Spec.Unschedulable = false
	}
}

// nodeNames are the launches' names, sorted.
func (w *world) nodeNames() []string {
	out := make([]string, 0, len(w.nodes))
	for name := range w.nodes {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// livePods are the pods that arrived and did not leave, by name.
func (w *world) livePods() []*podState {
	out := make([]*podState, 0, len(w.live))
	for _, p := range w.live {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// batch is one batch of the controller: observe (the State of the world), Decide, act (carried
// out on the world).
func (w *world) batch() {
	s := w.state()
	if w.pol.Forecast && len(w.wl.Forecasts) > 0 {
		s.LastExpected = w.pre.expected
		s.Expected = w.expectedPods(s.Pods)
	}
	d := provisioner.Decide(s, provisioner.DecideConfig{Config: w.cfg.Controller}, w.mem)
	w.pre.kept = d.KeptForForecast
	w.acct.batches++
	if d.PlanErr != nil {
		w.acct.planErrors++
	}
	for _, o := range d.MarkUnavailable {
		w.unavailable = append(w.unavailable, provisioner.UnavailableEntry{Offering: o, Code: provisioner.RemovalRegistrationTimeout,
			Until: w.now.Add(w.cfg.Controller.UnavailableTTL)})
	}
	for _, rm := range d.Remove {
		w.removeNode(rm.Record.LaunchID, rm.Reason)
	}
	if d.Plan == nil {
		return
	}
	planned := make(map[string]api.NewNode, len(d.Plan.NewNodes))
	for _, n := range d.Plan.NewNodes {
		planned[n.Name] = n
	}
	for _, rec := range d.Launch {
		w.launch(rec, planned[rec.LaunchID])
	}
}

// state is the cluster as the controller observes it now: the live pods, the registered Nodes,
// the launch records and the offerings still marked unavailable (expired marks are dropped).
func (w *world) state() provisioner.State {
	s := provisioner.State{Now: w.now, Policy: w.pol.Cost, Catalog: w.cfg.Catalog, PodGroups: w.groups}
	for _, p := range w.livePods() {
		s.Pods = append(s.Pods, p.obj)
	}
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		s.Records = append(s.Records, n.rec)
		if n.obj != nil {
			s.Nodes = append(s.Nodes, n.obj)
		}
	}
	live := w.unavailable[:0]
	for _, e := range w.unavailable {
		if w.now.Before(e.Until) {
			live = append(live, e)
		}
	}
	w.unavailable = live
	s.Unavailable = slices.Clone(live)
	return s
}

// nodeObject is the Node a planned node registers as at created: its labels (and the hostname
// label), taints and allocatable — without the GPU resources until the devices are published.
func nodeObject(nn api.NewNode, created time.Time, devices bool) *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name = nn.Name
	n.CreationTimestamp = metav1.NewTime(created)
	n.Labels = map[string]string{corev1.LabelHostname: nn.Name}
	for k, v := range nn.Labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = nn.Taints
	n.Status.Allocatable = nn.Allocatable.DeepCopy()
	if !devices {
		for name := range n.Status.Allocatable {
			if isGPUResource(name) {
				delete(n.Status.Allocatable, name)
			}
		}
	}
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)}}
	return n
}

// isGPUResource reports whether a resource is one the device plugin publishes.
func isGPUResource(name corev1.ResourceName) bool {
	return len(name) > len("nvidia.com/") && name[:len("nvidia.com/")] == "nvidia.com/"
}
