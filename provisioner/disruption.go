package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// Disruption gives capacity back. A loop of its own (runDisruption), on its own cadence and
// clock, never inside a provisioning batch, plans consolidation with simulator.PlanDisruption
// over the snapshot the batch builds, and carries the plan's actions out in one order, whatever
// the action's reason (consolidation; drift, expiry and repair, which the plan puts first; and
// interruptions, which interruptions.go starts from the cloud's notices, bypassing the pools'
// budgets since the node goes anyway):
//
//  1. Replacing (Replace actions): the nodes are annotated with the action, then the replacement
//     is launched through the batch's launch path (launch record first, so in-flight accounting
//     holds and a restart neither buys twice nor leaks), and the action waits until it is Ready
//     with its devices published.
//  2. Draining: the nodes are cordoned and every pod but DaemonSet and mirror pods is evicted
//     through the Eviction API, so that PodDisruptionBudgets hold. A refused eviction (429) is
//     retried with backoff; past Config.DisruptionDrainTimeout the action is abandoned: the nodes
//     are uncordoned and a DisruptionBlocked Event says why. The pods go in waves
//     (evictionWave): by size, largest first (those a hard placement rule holds before the
//     others of as many GPUs), and those the plan moves to the replacement last, each wave
//     once the replicas of the pods evicted before are placed.
//  3. Deleting: only DaemonSet pods remain; the instance, the Node and the launch record are
//     deleted (remove, as housekeeping does).
//
// The action's state lives on its nodes (api.AnnotationDisruptionAction, ...Step, ...StepSince,
// ...Reason, ...Replacement, ...ReplacementPods), not in memory: every pass reads it back from
// the Nodes and advances each action one step as far as it can, so a restarted controller
// resumes where the last one stopped, and a step that can no longer complete rolls the action
// back (uncordon).

// stepOrder ranks the steps; an action whose nodes disagree (a pass died between two node
// patches) is at its least advanced step.
var stepOrder = map[string]int{api.DisruptionStepReplacing: 1, api.DisruptionStepDraining: 2, api.DisruptionStepDeleting: 3}

// Outcomes of an action in ActionProgress.Step besides the steps.
const (
	// ActionDone: every node of the action is removed.
	ActionDone = "Done"
	// ActionAbandoned: the action was rolled back; its nodes are uncordoned.
	ActionAbandoned = "Abandoned"
)

// evictionBackoffMax bounds the wait before a refused eviction is tried again.
const evictionBackoffMax = time.Minute

// DisruptionPass reports one pass of the disruption loop (Controller.Disrupt).
type DisruptionPass struct {
	// Now is the time of the pass (the disruption clock's).
	Now time.Time
	// Actions are the actions under way at the start of the pass and what the pass made of them.
	Actions []ActionProgress
	// Plan is the pass's disruption plan; nil when it planned none (Skipped says why).
	Plan    *api.DisruptionPlan
	Skipped string
	// Started are the IDs of the actions the pass started.
	Started []string
	// Err is why the pass could not read the cluster or plan.
	Err error
}

// ActionProgress is one action under way and where a pass left it.
type ActionProgress struct {
	ID     string
	Kind   api.DisruptionKind
	Reason api.DisruptionReason
	Nodes  []string
	// Replacement is the launch ID of the action's new node; the IDs, comma-separated, when it
	// has more than one (api.DisruptionAction.MoreReplacements).
	Replacement string
	// Step is the action's step after the pass, ActionDone or ActionAbandoned.
	Step string
	// Message says what the action waits for, or why it was abandoned.
	Message string
}

// disruptionMemory is what the disruption loop and the batch share in memory. None of it is
// needed for safety: the state of actions lives on the nodes.
type disruptionMemory struct {
	mu sync.Mutex
	// evicted is when a disruption last evicted a pod of each controller (UID).
	evicted map[string]time.Time
	// backoff is, per pod (namespace/name), when a refused eviction may be tried again and the
	// delay after the next refusal.
	backoff map[string]evictionBackoff
	// told is the keep reason last told in a DisruptionBlocked Event, per node.
	told map[string]api.KeepReason
	// kept are the nodes the last batch kept for the forecast.
	kept []string
	// booked are the nodes the last batch kept for ProvisioningRequests' booked room.
	booked []string
	// grace is how long an eviction counts (Config.DisruptionRescheduleGrace).
	grace time.Duration
	// concluded is, per node, the action this process carried to its end there (done or
	// abandoned), until the node informer shows the node without it or not at all. For a moment
	// after the last write the informer may still show the action's annotations, and a pass that
	// read them would carry the action out again: a second abandon with its Events, a second
	// count.
	concluded map[string]string
	// ended is when each pod (UID) was evicted, or deleted past its action's
	// terminationGracePeriod: a pass that follows at once may still see it in the informer, not
	// terminating, and must not evict or delete (and count) it again.
	ended map[types.UID]time.Time
	// waves is, per action under way, the wave of its drain evicted last (keptRoom, wavePlaced).
	// Lost on a restart, when the next wave goes at once anyway.
	waves map[string]*waveState
	// turn is the action whose replacement is open for its last wave (turns.go). Lost on a
	// restart, when the next action to reach its last wave takes it.
	turn turn
}

// waveState is the wave an action's drain evicted last.
type waveState struct {
	// room: the nodes the plan moves the wave's pods to, which stay free of
	// api.TaintReplacementFilling until its replicas are placed.
	room []string
	// owners: per controller (UID) of an evicted pod, the pods it had when the wave began and how
	// many the wave evicted: the wave is placed once it has as many pods more, bound.
	owners map[types.UID]*ownerWave
}

type ownerWave struct {
	before  map[types.UID]bool
	evicted map[types.UID]bool // (a pass the informer lags may evict a pod twice)
}

type evictionBackoff struct {
	next  time.Time
	delay time.Duration
}

func newDisruptionMemory(grace time.Duration) *disruptionMemory {
	return &disruptionMemory{evicted: map[string]time.Time{}, backoff: map[string]evictionBackoff{},
		told: map[string]api.KeepReason{}, grace: grace, concluded: map[string]string{}, waves: map[string]*waveState{}, ended: map[types.UID]time.Time{}}
}

// conclude remembers that the action id ended on nodes.
func (m *disruptionMemory) conclude(id string, nodes []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range nodes {
		m.concluded[n] = id
	}
	delete(m.waves, id)
	if m.turn.id == id {
		m.turn = turn{}
	}
}

// endOnce reports whether pod uid may be evicted or deleted now, and remembers it: false when it
// was within the last endedMemory.
func (m *disruptionMemory) endOnce(uid types.UID, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for u, at := range m.ended {
		if now.Sub(at) > endedMemory {
			delete(m.ended, u)
		}
	}
	if _, ok := m.ended[uid]; ok {
		return false
	}
	m.ended[uid] = now
	return true
}

// hasEnded reports whether pod uid was evicted or deleted within the endedMemory before now.
func (m *disruptionMemory) hasEnded(uid types.UID, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.ended[uid]
	return ok && now.Sub(at) <= endedMemory
}

// forgetEnded forgets an eviction or deletion that did not happen (refused or failed), so that
// the next pass tries again.
func (m *disruptionMemory) forgetEnded(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ended, uid)
}

// endedMemory is how long an eviction or forced deletion is remembered: longer than the informer
// takes to show the pod terminating.
const endedMemory = 10 * time.Minute

// startWave remembers that action id evicts a new wave, whose pods the plan moves to room.
func (m *disruptionMemory) startWave(id string, room []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waves[id] = &waveState{room: room, owners: map[types.UID]*ownerWave{}}
}

// waveRoomOf returns the room of the wave action id evicted last.
func (m *disruptionMemory) waveRoomOf(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.waves[id]; w != nil {
		return w.room
	}
	return nil
}

// replacedBy are the kinds of controllers that make a new pod for an evicted one, whose replicas
// a drain's next wave waits for (wavePlaced). A Job may count the eviction as a failure instead,
// and what another controller does is not known.
var replacedBy = map[string]bool{"ReplicaSet": true, "StatefulSet": true, "ReplicationController": true}

// waveEvicted counts pod p, evicted by action id's wave, against its controller, whose pods
// (among all) are noted the first time.
func (m *disruptionMemory) waveEvicted(id string, p *corev1.Pod, all []*corev1.Pod) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || !replacedBy[ref.Kind] {
		return // nothing known to replace it
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.waves[id]
	if w == nil {
		w = &waveState{owners: map[types.UID]*ownerWave{}}
		m.waves[id] = w
	}
	o := w.owners[ref.UID]
	if o == nil {
		o = &ownerWave{before: map[types.UID]bool{}, evicted: map[types.UID]bool{}}
		for _, q := range all {
			if r := metav1.GetControllerOfNoCopy(q); r != nil && r.UID == ref.UID {
				o.before[q.UID] = true
			}
		}
		w.owners[ref.UID] = o
	}
	o.evicted[p.UID] = true
}

// wavePlaced reports whether the replicas of the pods action id's last wave evicted are all
// there and bound: each controller has as many bound, not terminating pods it did not have when
// the wave began as the wave evicted. (A pending replica alone would not do: a ReplicaSet creates
// it a moment after the eviction, and a next wave evicted in between lets it take that wave's
// room.) A controller that makes fewer (scaled down meanwhile) holds the next wave until the
// reschedule grace ends.
func (m *disruptionMemory) wavePlaced(id string, all []*corev1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.waves[id]
	if w == nil {
		return true
	}
	// (One scan of the pods, whatever the number of controllers.)
	bound := map[types.UID]int{}
	for _, q := range all {
		if r := metav1.GetControllerOfNoCopy(q); r != nil && q.DeletionTimestamp == nil && q.Spec.NodeName != "" {
			if o := w.owners[r.UID]; o != nil && !o.before[q.UID] {
				bound[r.UID]++
			}
		}
	}
	for uid, o := range w.owners {
		if bound[uid] < len(o.evicted) {
			return false
		}
	}
	return true
}

// withoutConcluded returns the nodes but those the informer still shows under an action this
// process ended there, and how many it left out. A node shown without that action, or not shown,
// is forgotten.
func (m *disruptionMemory) withoutConcluded(nodes []*corev1.Node) ([]*corev1.Node, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.concluded) == 0 {
		return nodes, 0
	}
	out := make([]*corev1.Node, 0, len(nodes))
	shown := map[string]bool{}
	for _, n := range nodes {
		id, ok := m.concluded[n.Name]
		if ok && n.Annotations[api.AnnotationDisruptionAction] == id {
			shown[n.Name] = true
			continue
		}
		out = append(out, n)
	}
	for n := range m.concluded {
		if !shown[n] {
			delete(m.concluded, n)
		}
	}
	return out, len(nodes) - len(out)
}

// evictedOwners returns a copy of the controllers whose pods a disruption evicted.
func (m *disruptionMemory) evictedOwners() map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]time.Time, len(m.evicted))
	for k, v := range m.evicted {
		out[k] = v
	}
	return out
}

func (m *disruptionMemory) noteEviction(p *corev1.Pod, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, t := range m.evicted {
		if now.Sub(t) > m.grace {
			delete(m.evicted, uid)
		}
	}
	if o := metav1.GetControllerOf(p); o != nil {
		m.evicted[string(o.UID)] = now
	}
	delete(m.backoff, p.Namespace+"/"+p.Name)
}

// mayEvict reports whether the pod's backoff allows an eviction at now.
func (m *disruptionMemory) mayEvict(key string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.backoff[key]
	return !ok || !now.Before(b.next)
}

// refused doubles the pod's backoff, from min up to evictionBackoffMax.
func (m *disruptionMemory) refused(key string, now time.Time, min time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.backoff[key]
	if b.delay == 0 {
		b.delay = min
	}
	b.next = now.Add(b.delay)
	b.delay = minDuration(2*b.delay, evictionBackoffMax)
	m.backoff[key] = b
}

func (m *disruptionMemory) setKept(nodes, booked []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept = append([]string(nil), nodes...)
	m.booked = append([]string(nil), booked...)
}

func (m *disruptionMemory) keptForForecast() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.kept))
	for _, n := range m.kept {
		out[n] = "kept for the forecast: a plan of the expected pods needs it"
	}
	for _, n := range m.booked {
		out[n] = "booked for a ProvisioningRequest: its pods have not all arrived"
	}
	return out
}

// tell reports whether the node's keep reason changed since the last Event, and remembers it.
func (m *disruptionMemory) tell(node string, r api.KeepReason) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.told[node] == r {
		return false
	}
	m.told[node] = r
	return true
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// blockingReasons are the keep reasons told in a DisruptionBlocked Event: what a user set (or a
// pod lacks) that keeps a node Tiler would otherwise consider, a roll onto an image whose
// nodes are unhealthy, paused, and repairs held by a fault too wide to be the nodes'.
var blockingReasons = map[api.KeepReason]bool{
	api.KeepDoNotDisrupt: true, api.KeepPodDoNotDisrupt: true, api.KeepPDB: true,
	api.KeepPodWithoutController: true, api.KeepLocalStorage: true, api.KeepRollPaused: true,
	api.KeepTooManyUnhealthy: true,
}

// runDisruption is the disruption loop: at once and every DisruptionStepInterval it advances the
// actions under way; every DisruptionInterval (when positive) it also plans new ones. It runs
// until ctx ends.
func (c *Controller) runDisruption(ctx context.Context) {
	step := c.dclock.NewTicker(c.cfg.DisruptionStepInterval)
	defer step.Stop()
	var planC <-chan time.Time
	if c.cfg.DisruptionInterval > 0 {
		t := c.dclock.NewTicker(c.cfg.DisruptionInterval)
		defer t.Stop()
		planC = t.C()
	}
	c.disrupt(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-step.C():
			c.disrupt(ctx, false)
		case <-c.disruptWake:
			c.disrupt(ctx, false)
		case <-planC:
			c.disrupt(ctx, true)
		}
	}
}

// Disrupt runs one pass of the disruption loop: it advances the actions under way and, when
// none is left and the cluster is settled (no pod pending, no launch in flight), plans
// consolidation and starts the plan's actions. Run calls it on the loop's cadence; tests call it
// directly.
func (c *Controller) Disrupt(ctx context.Context) *DisruptionPass { return c.disrupt(ctx, true) }

func (c *Controller) disrupt(ctx context.Context, plan bool) *DisruptionPass {
	if !plan && !c.actionsUnderWay() {
		return nil
	}
	pass := c.disruptPass(ctx, plan)
	if pass.Err != nil && ctx.Err() == nil {
		c.log.Error("disruption pass", zap.Error(pass.Err))
	}
	if c.onDisruption != nil {
		c.onDisruption(pass)
	}
	return pass
}

// actionsUnderWay reports whether a Node carries a disruption action or an interruption notice
// (from the informer).
func (c *Controller) actionsUnderWay() bool {
	nodes, err := c.nodes()
	if err != nil {
		return true // let the pass report it
	}
	for _, n := range nodes {
		if n.Annotations[api.AnnotationDisruptionAction] != "" || n.Annotations[api.AnnotationInterruption] != "" {
			return true
		}
	}
	return false
}

// disruptPass advances the actions under way and plans. It runs beside the batches: only the
// start of new actions waits for a batch to end (batchMu), and happens only if the cluster is
// still settled then, so that a long plan never holds a batch and no batch buys for what an
// action is about to move.
func (c *Controller) disruptPass(ctx context.Context, plan bool) *DisruptionPass {
	now := c.dclock.Now()
	pass := &DisruptionPass{Now: now}
	s, err := c.observeCluster(ctx, now)
	if err != nil {
		pass.Err = err
		return pass
	}
	idx := newNodeIndex(s.Nodes)
	open := 0
	current, lagging := c.disruption.withoutConcluded(s.Nodes)
	actions := actionsOf(current)
	for _, a := range actions {
		p := c.advance(ctx, &s, idx, a)
		pass.Actions = append(pass.Actions, p)
		if p.Step == ActionDone || p.Step == ActionAbandoned {
			c.disruption.conclude(p.ID, p.Nodes)
			a.room = nil
		} else {
			open++
		}
	}
	c.keepRoom(ctx, s.Nodes, actions)
	// Interrupted nodes are started whatever else is under way and however unsettled the cluster
	// is (interruptions.go). A node whose action was abandoned in this pass is planned again at
	// the next one, with what the abandon taught (an offering marked unavailable).
	if in := interruptedNodes(s.Nodes); len(in) > 0 {
		for _, p := range pass.Actions {
			for _, n := range p.Nodes {
				delete(in, n)
			}
		}
		if len(in) > 0 {
			c.batchMu.Lock()
			started, err := c.startInterrupted(ctx, &s, idx, in, now)
			c.batchMu.Unlock()
			pass.Started = append(pass.Started, started...)
			if err != nil {
				pass.Err = err
				return pass
			}
			if len(started) > 0 {
				open++
			}
		}
	}
	switch {
	case !plan:
		return pass
	case c.cfg.DisruptionInterval == 0:
		pass.Skipped = "planning is off (disruption-interval 0)"
		return pass
	case open > 0 || len(pass.Actions) > 0:
		pass.Skipped = "an action is under way"
		return pass
	case lagging > 0:
		pass.Skipped = "the node informer still shows an ended action"
		return pass
	}
	if why := unsettled(&s, idx); why != "" {
		pass.Skipped = why
		return pass
	}
	cat, _ := PlanningCatalog(s.Catalog, s.Unavailable, now)
	images, err := nodeImages(ctx, c.provider, s.Records, idx)
	if err != nil {
		c.log.Warn("the image the cloud launches now is not known; no node is drifted by its image in this pass", zap.Error(err))
	}
	var failed map[string]string
	if len(images) > 0 { // (no node's image known: no roll to pause, no image to fail)
		if failed, err = c.failedImages(ctx, now); err != nil {
			pass.Err = fmt.Errorf("the failed images are not known, so no roll is planned: %w", err)
			return pass
		}
	}
	dp, err := simulator.PlanDisruption(simulator.DisruptionInput{Snapshot: s.snapshot(nil), Catalog: cat, Policy: s.Policy,
		Options: simulator.DisruptionOptions{Now: now, Seed: fmt.Sprintf("d%d", now.Unix()), Keep: c.disruption.keptForForecast(), Images: images,
			FailedImages: failed, ImageProbation: c.cfg.ImageProbation}})
	if err != nil {
		pass.Err = fmt.Errorf("planning disruption: %w", err)
		return pass
	}
	pass.Plan = dp
	// Before any action: a repair of the node an image failed on must not end what is remembered.
	var fs []FailedImage
	for _, f := range dp.FailedImages {
		fs = append(fs, FailedImage{Image: f.Image, Node: f.Node, Why: f.Message, At: now})
	}
	c.rememberImageFailures(ctx, now, fs)
	c.reportPlan(ctx, &s, dp, now)
	if len(dp.Actions) == 0 {
		return pass
	}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	// What a batch did while the plan was made: the plan may be stale.
	if s2, err := c.observeCluster(ctx, now); err != nil {
		pass.Err = err
		return pass
	} else if why := unsettled(&s2, newNodeIndex(s2.Nodes)); why != "" {
		pass.Skipped = "the cluster changed while planning: " + why
		return pass
	} else if len(s2.Records) != len(s.Records) {
		pass.Skipped = "the cluster changed while planning: launches were recorded or removed"
		return pass
	}
	for _, a := range dp.Actions {
		if err := c.startAction(ctx, &s, idx, a, now); err != nil {
			c.log.Warn("disruption action not started", zap.String(keyAction, a.ID), zap.Error(err))
			continue
		}
		pass.Started = append(pass.Started, a.ID)
	}
	return pass
}

// becauseOf is the tail of a Disrupting Event: what the plan says of the action's reason (what
// drifted, how old the node is, which signal is unhealthy), "" for consolidation.
func becauseOf(a api.DisruptionAction) string {
	if a.Message == "" {
		return ""
	}
	return " (" + a.Message + ")"
}

// unsettled says why the cluster is not settled enough to plan disruption ("" when it is): pods
// are pending, or launches are in flight.
func unsettled(s *State, idx nodeIndex) string {
	if pending, _ := provisionablePods(s.Pods, s.Now, 0); len(pending) > 0 {
		return fmt.Sprintf("%d pods are pending", len(pending))
	}
	if f, _ := inFlight(s.Records, idx, s.ResourceSlices); len(f) > 0 {
		return fmt.Sprintf("%d launches are in flight", len(f))
	}
	return ""
}

// reportPlan sets the fleet gauges and the kept-node gauges, tells the nodes newly blocked by a
// user's setting why (DisruptionBlocked), marks the candidates (api.AnnotationCandidateSince, and
// api.TaintDisruptionCandidate unless Config.DisruptionCandidateTaint is off, which the nodes
// kept although due get too): set on the plan's candidates that lack them, removed from every
// other node, and the unhealthy nodes
// the same way (api.AnnotationUnhealthySince, from the plan's Unhealthy list): the repair grace
// period of GPUs missing from allocatable runs from it, so it survives restarts.
func (c *Controller) reportPlan(ctx context.Context, s *State, dp *api.DisruptionPlan, now time.Time) {
	c.metrics.DisruptionFleetCost.WithLabelValues("before").Set(dp.CostPerHourBefore)
	c.metrics.DisruptionFleetCost.WithLabelValues("after").Set(dp.CostPerHourAfter)
	c.metrics.DisruptionBlocked.Reset()
	c.metrics.DisruptionHeld.Reset()
	for _, k := range dp.Kept {
		if k.Reason == api.KeepUnmanaged {
			continue
		}
		c.metrics.DisruptionBlocked.WithLabelValues(string(k.Reason)).Inc()
		if k.Due != "" {
			c.metrics.DisruptionHeld.WithLabelValues(string(k.Due), string(k.Reason)).Inc()
		}
		if blockingReasons[k.Reason] && c.disruption.tell(k.Name, k.Reason) {
			c.recorder.Eventf(nodeRef(k.Name), corev1.EventTypeNormal, "DisruptionBlocked", "kept (%s): %s", k.Reason, k.Message)
		} else if !blockingReasons[k.Reason] {
			c.disruption.tell(k.Name, "")
		}
	}
	cands := map[string]bool{}
	for _, n := range dp.Candidates {
		cands[n] = true
	}
	// The taint steers pods off the nodes next to go: the candidates, and the nodes that must go
	// (drifted, expired, unhealthy) but wait for a budget, a PodDisruptionBudget or a
	// do-not-disrupt pod. A replica kube-scheduler put on one would move again at its turn.
	steer := maps.Clone(cands)
	for _, k := range dp.Kept {
		if k.Due != "" {
			steer[k.Name] = true
		}
	}
	unhealthy := map[string]api.UnhealthyNode{}
	for _, u := range dp.Unhealthy {
		unhealthy[u.Name] = u
	}
	stamp := now.UTC().Format(time.RFC3339)
	for _, n := range s.Nodes {
		// (The taint first: its update starts from the informer's copy, which the annotations'
		// patch would make stale.)
		if want := c.cfg.DisruptionCandidateTaint && steer[n.Name]; hasTaint(n, api.TaintDisruptionCandidate) != want {
			if err := c.setPreferNoSchedule(ctx, n, api.TaintDisruptionCandidate, want); err != nil {
				c.log.Warn("setting the disruption-candidate taint", zap.Bool("candidate", want), zap.Error(err))
			}
		}
		ann := map[string]*string{}
		u, sick := unhealthy[n.Name]
		if _, has := n.Annotations[api.AnnotationUnhealthySince]; sick && !has {
			c.recorder.Eventf(nodeRef(n.Name), corev1.EventTypeWarning, "Unhealthy", "%s: %s; repaired once due (the pool's repair settings)", u.Signal, u.Message)
		}
		for key, listed := range map[string]bool{api.AnnotationCandidateSince: cands[n.Name], api.AnnotationUnhealthySince: sick} {
			switch _, has := n.Annotations[key]; {
			case listed && !has:
				ann[key] = &stamp
			case !listed && has:
				ann[key] = nil
			}
		}
		if len(ann) == 0 {
			continue
		}
		if err := c.annotate(ctx, n.Name, ann, nil); err != nil {
			c.log.Warn("marking a disruption candidate or an unhealthy node", zap.String(keyNode, n.Name), zap.Error(err))
		}
	}
}

// actionState is an action under way as its nodes' annotations say.
type actionState struct {
	id          string
	step        string
	since       time.Time
	reason      api.DisruptionReason
	replacement string
	nodes       []*corev1.Node
	// interrupted: a node of the action carries an interruption notice (api.AnnotationInterruption);
	// deadline is the earliest of their deadlines (zero: none).
	interrupted bool
	deadline    time.Time
	// grace is the action's terminationGracePeriod (AnnotationDisruptionGracePeriod; 0: none) and
	// forceAfter when it ends, once the drain began (AnnotationDisruptionForceAfter).
	grace      time.Duration
	forceAfter time.Time
	// toReplacement are the pods the plan moves to the replacement, by key
	// (AnnotationDisruptionReplacementPods): drained after the others.
	toReplacement map[string]bool
	// moves are where the plan moves the action's other pods, pod key to node
	// (AnnotationDisruptionMoves), and replacementNodes the names of its replacements' Nodes
	// registered so far (advance).
	moves            map[string]string
	replacementNodes []string
	// room is what the action wants of api.TaintReplacementFilling after the pass (keptRoom):
	// true on the nodes only its later waves move pods to, false on those of the wave being
	// placed; nil when it has no waves (urgent, forced, past the reschedule grace, or no pod left).
	room map[string]bool
}

// urgent reports whether the action's nodes go whatever Tiler does (interrupted, or repaired
// because broken): its drain is never abandoned, and do-not-disrupt pods are left where they are
// rather than abandoning the action.
func (a *actionState) urgent() bool {
	return a.interrupted || a.reason == api.ReasonInterrupted || a.reason == api.ReasonUnhealthy
}

// dead reports whether the action repairs nodes none of which is Ready: their kubelets are not
// running (or not reachable) and end no pod, so pods annotated not to be disrupted, and pods not
// Ready whose unhealthy budgets refuse their eviction, would hold them until
// kube-controller-manager's taint eviction (for ever, for pods that tolerate
// node.kubernetes.io/unreachable for ever): such pods go with the node instead (goWithNode).
func (a *actionState) dead() bool {
	return a.reason == api.ReasonUnhealthy && len(a.nodes) > 0 && !slices.ContainsFunc(a.nodes, snapshot.IsNodeReady)
}

// deadlineNear reports whether an interrupted action's deadline is within margin of now.
func (a *actionState) deadlineNear(now time.Time, margin time.Duration) bool {
	return a.interrupted && InterruptionDrainDue(a.deadline, now, margin)
}

// replacements are the launch IDs of the action's new nodes (AnnotationDisruptionReplacement).
func (a *actionState) replacements() []string {
	if a.replacement == "" {
		return nil
	}
	return strings.Split(a.replacement, ",")
}

func (a *actionState) kind() api.DisruptionKind {
	if a.replacement != "" {
		return api.ActionReplace
	}
	return api.ActionDelete
}

func (a *actionState) names() []string {
	out := make([]string, len(a.nodes))
	for i, n := range a.nodes {
		out[i] = n.Name
	}
	return out
}

// actionsOf groups the nodes by the disruption action they carry, sorted by action ID.
func actionsOf(nodes []*corev1.Node) []*actionState {
	byID := map[string]*actionState{}
	for _, n := range nodes {
		id := n.Annotations[api.AnnotationDisruptionAction]
		if id == "" {
			continue
		}
		a := byID[id]
		step := n.Annotations[api.AnnotationDisruptionStep]
		since, _ := time.Parse(time.RFC3339, n.Annotations[api.AnnotationDisruptionStepSince])
		if a == nil {
			a = &actionState{id: id, step: step, since: since}
			byID[id] = a
		}
		if stepOrder[step] < stepOrder[a.step] {
			a.step = step
		}
		if a.since.IsZero() || !since.IsZero() && since.Before(a.since) {
			a.since = since
		}
		if r := n.Annotations[api.AnnotationDisruptionReason]; r != "" {
			a.reason = api.DisruptionReason(r)
		}
		if r := n.Annotations[api.AnnotationDisruptionReplacement]; r != "" {
			a.replacement = r
		}
		if g, err := time.ParseDuration(n.Annotations[api.AnnotationDisruptionGracePeriod]); err == nil && g > 0 {
			a.grace = g
		}
		if t, err := time.Parse(time.RFC3339, n.Annotations[api.AnnotationDisruptionForceAfter]); err == nil &&
			(a.forceAfter.IsZero() || t.Before(a.forceAfter)) {
			a.forceAfter = t
		}
		for _, kv := range strings.Split(n.Annotations[api.AnnotationDisruptionMoves], ",") {
			if key, to, ok := strings.Cut(kv, "="); ok && key != "" && to != "" {
				if a.moves == nil {
					a.moves = map[string]string{}
				}
				a.moves[key] = to
			}
		}
		for _, key := range strings.Split(n.Annotations[api.AnnotationDisruptionReplacementPods], ",") {
			if key != "" {
				if a.toReplacement == nil {
					a.toReplacement = map[string]bool{}
				}
				a.toReplacement[key] = true
			}
		}
		if _, ok := n.Annotations[api.AnnotationInterruption]; ok {
			a.interrupted = true
			if d, ok := parseDeadline(n); ok && (a.deadline.IsZero() || d.Before(a.deadline)) {
				a.deadline = d
			}
		}
		a.nodes = append(a.nodes, n)
	}
	out := make([]*actionState, 0, len(byID))
	for _, a := range byID {
		sort.Slice(a.nodes, func(i, j int) bool { return a.nodes[i].Name < a.nodes[j].Name })
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// startAction starts one action of a plan (or a forced one): every node must be a launch Tiler
// recorded, since its instance is deleted through the record. A Replace action annotates its
// nodes Replacing and launches the replacement; a Delete action cordons its nodes Draining.
func (c *Controller) startAction(ctx context.Context, s *State, idx nodeIndex, a api.DisruptionAction, now time.Time) error {
	for _, name := range a.Nodes {
		if _, ok := recordForNode(s.Records, idx, name); !ok {
			return fmt.Errorf("node %s has no launch record: Tiler cannot delete its instance", name)
		}
	}
	log := c.log.With(zap.String(keyAction, a.ID), zap.Strings(keyNodes, a.Nodes), zap.String(keyReason, string(a.Reason)))
	since := now.UTC().Format(time.RFC3339)
	ann := map[string]*string{api.AnnotationDisruptionAction: &a.ID, api.AnnotationDisruptionStepSince: &since}
	reason := string(a.Reason)
	ann[api.AnnotationDisruptionReason] = &reason
	if grace := time.Duration(a.TerminationGracePeriodSeconds) * time.Second; grace > 0 {
		g := grace.String()
		ann[api.AnnotationDisruptionGracePeriod] = &g
		// A reservation that ends bounds the period from the start: it ends before the cloud
		// starts ending the reservation's instances. A Delete drains now; a Replace's drain sets
		// its end when it begins (setStep), taking the bound if earlier.
		force := forceBy(a)
		if a.Replacement == nil {
			force = drainForceAfter(now, grace, force)
		}
		if !force.IsZero() {
			f := force.UTC().Format(time.RFC3339)
			ann[api.AnnotationDisruptionForceAfter] = &f
		}
	}
	if m := movedPods(a); m != "" {
		ann[api.AnnotationDisruptionMoves] = &m
	}
	moves := movesText(a)
	if a.Replacement == nil {
		step := api.DisruptionStepDraining
		ann[api.AnnotationDisruptionStep] = &step
		if err := c.annotateAll(ctx, a.Nodes, ann, ptr.To(true)); err != nil {
			return err
		}
		for _, n := range a.Nodes {
			c.recorder.Eventf(nodeRef(n), corev1.EventTypeNormal, "Disrupting", "action %s (%s, %s): deleting; %s; saves $%.4f/h%s",
				a.ID, a.Kind, a.Reason, moves, a.SavingsPerHour, becauseOf(a))
		}
		log.Info("disruption action started: draining", zap.Float64(keyPrice, a.SavingsPerHour))
		return nil
	}
	var recs []LaunchRecord
	var ids, what []string
	for _, nn := range a.Replacements() {
		rec := recordFor(nn, now, s.Policy)
		rec.Pods = nil // the pods it takes come back under new names
		rec.DisruptionAction = a.ID
		recs = append(recs, rec)
		ids = append(ids, rec.LaunchID)
		what = append(what, fmt.Sprintf("%s (%s, $%.4f/h)", rec.LaunchID, rec.Offering, rec.PricePerHour))
	}
	step := api.DisruptionStepReplacing
	ann[api.AnnotationDisruptionStep] = &step
	replacements := strings.Join(ids, ",")
	ann[api.AnnotationDisruptionReplacement] = &replacements
	if pods := replacementPods(a); pods != "" {
		ann[api.AnnotationDisruptionReplacementPods] = &pods
	}
	// The nodes name the replacement before its record exists: a restart that finds no record
	// rolls the action back; one that finds it resumes (Recover relaunches it idempotently).
	if err := c.annotateAll(ctx, a.Nodes, ann, nil); err != nil {
		return err
	}
	for _, n := range a.Nodes {
		c.recorder.Eventf(nodeRef(n), corev1.EventTypeNormal, "Disrupting", "action %s (%s, %s): replacing with %s; %s; saves $%.4f/h%s",
			a.ID, a.Kind, a.Reason, strings.Join(what, " and "), moves, a.SavingsPerHour, becauseOf(a))
	}
	launched, _ := c.launch(ctx, log, recs, nil)
	log.Info("disruption action started: replacement launched", zap.String(keyLaunchID, replacements),
		zap.Int("accepted", len(launched)), zap.Float64(keyPrice, a.SavingsPerHour))
	return nil
}

// replacementPods is the value of AnnotationDisruptionReplacementPods for action a: the pods it
// moves to its replacements, sorted.
func replacementPods(a api.DisruptionAction) string {
	var out []string
	for _, m := range a.Moves {
		if a.IsReplacement(m.To) {
			out = append(out, m.Pod)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// movedPods is the value of AnnotationDisruptionMoves for action a: where it moves the pods that
// do not go to its replacements, sorted.
func movedPods(a api.DisruptionAction) string {
	var out []string
	for _, m := range a.Moves {
		if !a.IsReplacement(m.To) {
			out = append(out, m.Pod+"="+m.To)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// evictionWave is where a pod comes in a drain's order: the pods the plan moves to existing nodes
// by their requests, largest first (GPUs, counting extended nvidia.com resources and DRA claims,
// then CPU, then memory), and the pods it moves to the replacement after all of them. Among pods
// of as many GPUs, those a hard placement rule holds to some nodes (held: a topology spread that
// does not schedule past its skew, required pod affinity or anti-affinity) go before the others,
// whatever their size: a pod free to go anywhere may take the one room such a pod has (campaign
// seed 11: a zone-spread pod's replica found its zone full). Pods of one wave need the
// same room, so a drain evicts one wave at a time.
type evictionWave struct {
	toReplacement bool
	gpu           int64
	held          bool
	cpu, mem      int64
}

// heldByRule reports whether a hard placement rule holds the pod to some nodes only: a topology
// spread constraint with whenUnsatisfiable DoNotSchedule, or required pod affinity or
// anti-affinity.
func heldByRule(p *corev1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	a := p.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0)
}

func waveOf(p *corev1.Pod, toReplacement map[string]bool) evictionWave {
	w := evictionWave{toReplacement: toReplacement[p.Namespace+"/"+p.Name], gpu: int64(len(p.Spec.ResourceClaims)), held: heldByRule(p)}
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		switch {
		case name == corev1.ResourceCPU:
			w.cpu = q.MilliValue()
		case name == corev1.ResourceMemory:
			w.mem = q.Value()
		case strings.HasPrefix(string(name), "nvidia.com/"):
			w.gpu += q.Value()
		}
	}
	return w
}

// before reports whether wave w is evicted before wave o.
func (w evictionWave) before(o evictionWave) bool {
	switch {
	case w.toReplacement != o.toReplacement:
		return o.toReplacement
	case w.gpu != o.gpu:
		return w.gpu > o.gpu
	case w.held != o.held:
		return w.held
	case w.cpu != o.cpu:
		return w.cpu > o.cpu
	}
	return w.mem > o.mem
}

// replicasPending reports whether a pod of one of the controllers (UIDs) is pending: a replica
// of a pod a disruption evicted that the scheduler has not bound yet.
func replicasPending(owners map[string]bool, all []*corev1.Pod) bool {
	if len(owners) == 0 {
		return false
	}
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && owners[string(ref.UID)] && waitingPod(p) {
			return true
		}
	}
	return false
}

// placingOwners are the controllers whose replicas a drain waits for before its next wave: those
// a disruption evicted from within the reschedule grace. They are kept in memory: after a restart
// the next wave goes at once, and the replacement's taint still keeps its room.
func (c *Controller) placingOwners() map[string]bool {
	out := map[string]bool{}
	now := c.clock.Now()
	for uid, at := range c.disruption.evictedOwners() {
		if now.Sub(at) <= c.cfg.DisruptionRescheduleGrace {
			out[uid] = true
		}
	}
	return out
}

// movesText summarises where an action's pods go.
func movesText(a api.DisruptionAction) string {
	if len(a.Moves) == 0 {
		return "no pod to move"
	}
	to := map[string]int{}
	for _, m := range a.Moves {
		to[m.To]++
	}
	var parts []string
	for n, k := range to {
		parts = append(parts, fmt.Sprintf("%d → %s", k, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d pods move (%s)", len(a.Moves), strings.Join(parts, ", "))
}

// advance carries one action under way as far as it can in this pass.
func (c *Controller) advance(ctx context.Context, s *State, idx nodeIndex, a *actionState) ActionProgress {
	now := s.Now
	log := c.log.With(zap.String(keyAction, a.id), zap.Strings(keyNodes, a.names()), zap.String(keyReason, string(a.reason)))
	p := ActionProgress{ID: a.id, Kind: a.kind(), Reason: a.reason, Nodes: a.names(), Replacement: a.replacement, Step: a.step}
	if _, ok := stepOrder[a.step]; !ok {
		return c.abandon(ctx, log, a, p, fmt.Sprintf("unknown step %q", a.step))
	}
	for _, id := range a.replacements() {
		if rec, ok := recordByLaunchID(s.Records, id); ok {
			if n := idx.forRecord(rec); n != nil {
				a.replacementNodes = append(a.replacementNodes, n.Name)
			}
		}
	}
	if a.step == api.DisruptionStepReplacing {
		// An interrupted node drains when its replacement is Ready or when the deadline is near,
		// whichever comes first; a replacement that fails to come drains it too (its pods become
		// pending and are bought for as any), but while there is time a replacement that was
		// never launched is planned again (abandon leaves the node cordoned and annotated).
		near := a.deadlineNear(now, c.cfg.InterruptionDrainMargin)
		// Every replacement must be Ready (with its devices) before the nodes are cordoned.
		var ready []*corev1.Node
		var missing, waiting []string
		sliced := slicedNodes(s.ResourceSlices)
		for _, id := range a.replacements() {
			rec, ok := recordByLaunchID(s.Records, id)
			if !ok {
				missing = append(missing, id)
				continue
			}
			if n := idx.forRecord(rec); n != nil && snapshot.IsNodeReady(n) && devicesShown(n, rec, sliced[n.Name]) {
				ready = append(ready, n)
			} else {
				waiting = append(waiting, id)
			}
		}
		notReady := strings.Join(append(missing, waiting...), ", ")
		switch {
		case len(missing) == 0 && len(waiting) == 0:
			// (The pods the plan moves elsewhere go first, the replacements' room kept meanwhile:
			// keptRoom.)
			for _, n := range ready {
				log.Info("replacement Ready: draining", zap.String(keyNode, n.Name))
			}
		case near:
			log.Info("interruption deadline near: draining before the replacement is Ready", zap.Time("deadline", a.deadline),
				zap.Duration("margin", c.cfg.InterruptionDrainMargin))
		case len(missing) > 0:
			return c.abandon(ctx, log, a, p, "the replacement "+strings.Join(missing, ", ")+" was not launched")
		case now.Sub(a.since) > c.cfg.RegistrationTimeout && a.interrupted:
			log.Warn("the replacement did not come: draining the interrupted node anyway", zap.String(keyLaunchID, notReady))
		case now.Sub(a.since) > c.cfg.RegistrationTimeout:
			return c.abandon(ctx, log, a, p, fmt.Sprintf("the replacement %s was not Ready with its devices within %s", notReady, c.cfg.RegistrationTimeout))
		default:
			p.Message = "waiting for the replacement " + notReady
			return p
		}
		if err := c.setStep(ctx, a, api.DisruptionStepDraining, now, true); err != nil {
			p.Message = err.Error()
			return p
		}
	}
	if a.step == api.DisruptionStepDraining {
		left, stay, msg, abandon := c.drainAction(ctx, log, idx, a, now)
		if abandon != "" {
			return c.abandon(ctx, log, a, p, abandon)
		}
		if left > 0 || stay > 0 {
			// An action with a terminationGracePeriod is not abandoned: its held pods are deleted
			// when the period ends.
			if !a.urgent() && a.forceAfter.IsZero() && now.Sub(a.since) > c.cfg.DisruptionDrainTimeout {
				return c.abandon(ctx, log, a, p, fmt.Sprintf("drain not done within %s: %s", c.cfg.DisruptionDrainTimeout, msg))
			}
			switch {
			case left == 0 && !a.forceAfter.IsZero():
				msg = fmt.Sprintf("%d pods annotated not to be disrupted stay; the node goes once they end, the cloud reclaims it or the terminationGracePeriod (%s) ends at %s",
					stay, a.grace, a.forceAfter.UTC().Format(time.RFC3339))
			case left == 0:
				msg = fmt.Sprintf("%d pods annotated not to be disrupted stay; the node goes once they end or the cloud reclaims it", stay)
			}
			p.Step, p.Message = a.step, msg
			return p
		}
		if err := c.setStep(ctx, a, api.DisruptionStepDeleting, now, true); err != nil {
			p.Step, p.Message = a.step, err.Error()
			return p
		}
	}
	// Deleting: only DaemonSet pods are left (a pod that got there since is evicted first).
	if left, stay, _, _ := c.drainAction(ctx, log, idx, a, now); left+stay > 0 {
		if err := c.setStep(ctx, a, api.DisruptionStepDraining, now, true); err == nil {
			p.Step, p.Message = api.DisruptionStepDraining, "pods came back; draining again"
		}
		return p
	}
	p.Step = api.DisruptionStepDeleting
	for _, n := range a.nodes {
		rec, ok := recordForNode(s.Records, idx, n.Name)
		if !ok {
			// The record went with the instance in an earlier pass whose Node deletion failed.
			if err := c.kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				p.Message = err.Error()
				return p
			}
			continue
		}
		if !c.removeTracked(ctx, log, rec, n.Name, strings.ToLower(string(a.reason))) {
			p.Message = "removing " + n.Name + " failed or under way; retried"
			return p
		}
	}
	c.metrics.DisruptionActions.WithLabelValues(string(a.kind()), string(a.reason)).Inc()
	log.Info("disruption action done")
	p.Step = ActionDone
	return p
}

// drainAction evicts the pods of the action's nodes that must go (all but DaemonSet and mirror
// pods, and finished ones), and returns how many are left (terminating ones included, but those
// stuck terminating, past StuckTerminatingAfter, or past the action's terminationGracePeriod), what
// holds the drain and, when a pod must never be disrupted, why the action must be abandoned. On
// an urgent action (actionState.urgent) such pods are not evicted either, but the action goes on
// without them: stay counts them (but on a repair of nodes not Ready, actionState.dead, where no
// kubelet would ever end them, they are deleted: goWithNode; on an interrupted node, within their
// own grace period of the reclaim, they are deleted, as is a pod whose eviction is still refused
// then: reclaimDue; and on a repair that carries the pool's terminationGracePeriod, they are
// deleted when it ends, as on any action that carries one).
func (c *Controller) drainAction(ctx context.Context, log *zap.Logger, idx nodeIndex, a *actionState, now time.Time) (left, stay int, msg, abandon string) {
	all, err := c.pods()
	if err != nil {
		return 1, 0, err.Error(), ""
	}
	on := map[string]bool{}
	for _, n := range a.nodes {
		on[n.Name] = true
	}
	// The pods go in waves (evictionWave), each once the replicas of the pods evicted before are
	// placed: kube-scheduler puts a replica on the node its score prefers among those with room
	// (the emptiest by default, the fullest under MostAllocated), which may be room the plan kept
	// for a larger pod. While a wave's replicas are placed, the nodes the plan moves only later
	// waves to carry api.TaintReplacementFilling (keptRoom), and a wave goes once they do. Not on
	// urgent or forced actions, nor once the reschedule grace from the drain's start is over: then
	// every pod goes at once.
	var wave *evictionWave
	waveOfPod := map[*corev1.Pod]evictionWave{} // the pods that wait for their wave
	hold, keeping, turnWait := false, false, false
	a.room = nil
	if a.urgent() || a.forced(now) || now.Sub(a.since) > c.cfg.DisruptionRescheduleGrace {
		// Every pod goes at once: the replacements open now, whatever action's turn it is.
		c.openReplacements(ctx, log, a, idx)
	} else {
		hold = replicasPending(c.placingOwners(), all) || !c.disruption.wavePlaced(a.id, all)
		for _, p := range all {
			if on[p.Spec.NodeName] && mustEvict(p) && p.DeletionTimestamp == nil && !doNotDisrupt(p) {
				w := waveOf(p, a.toReplacement)
				waveOfPod[p] = w
				if wave == nil || w.before(*wave) {
					wave = &w
				}
			}
		}
		if wave != nil {
			a.room = c.keptRoom(a, waveOfPod, *wave, hold)
			// The wave goes once the nodes show the room kept (keepRoom sets it at the pass's end).
			if !hold && !roomKept(a.room, idx) {
				hold, keeping = true, true
			}
			// The last wave, to the replacements: on the action's turn, once they are open.
			if !hold && wave.toReplacement {
				placed := func(id string) bool { return c.disruption.wavePlaced(id, all) }
				if !c.disruption.takeTurn(a.id, now, c.cfg.DisruptionRescheduleGrace, placed) {
					hold, turnWait = true, true
				} else if !c.openReplacements(ctx, log, a, idx) {
					hold = true
				}
			}
		}
	}
	waiting := 0
	// (A repair of nodes not Ready: pods no kubelet will end go with the node, goWithNode.)
	dead := a.urgent() && a.dead()
	var refused, held []string
	pdbs, err := c.factory.Policy().V1().PodDisruptionBudgets().Lister().List(everything())
	if err != nil {
		return 1, 0, err.Error(), ""
	}
	budgets := newBudgetCount(pdbs, func(ns string) ([]*corev1.Pod, error) {
		return c.factory.Core().V1().Pods().Lister().Pods(ns).List(everything())
	})
	for _, p := range all {
		if !on[p.Spec.NodeName] || !mustEvict(p) {
			continue
		}
		left++
		key := p.Namespace + "/" + p.Name
		if p.DeletionTimestamp != nil {
			if a.forced(now) || stuckTerminating(p, now) {
				// The grace period is over, or the pod's kubelet is not ending it: the node goes
				// with the pod still terminating.
				left--
			}
			continue
		}
		if c.disruption.hasEnded(p.UID, now) {
			// Evicted or deleted by a pass the informer has not caught up with: terminating.
			budgets.evicted(p)
			continue
		}
		if w, ok := waveOfPod[p]; ok && (hold || w != *wave) {
			waiting++
			continue
		}
		due := a.forceDue(p, now)
		if doNotDisrupt(p) {
			switch {
			case dead && podReady(p) && now.Sub(a.since) <= StuckTerminatingAfter:
				// Still shown Ready: kube-controller-manager marks the pods of a node not Ready
				// as not Ready within seconds; until then the pod counts in its budgets (the
				// wait is bounded, should nothing mark it).
			case dead:
				// No kubelet runs or ends it: it goes with the node, as an interrupted node's go
				// with the cloud's reclaim (not Ready, it takes nothing from its budgets). It is
				// deleted now rather than by the pod garbage collector once the Node is gone
				// (40 s later), so that its successor takes the room the plan gave it before
				// anything else does; like the evicted pods, it stays terminating (left) until
				// StuckTerminatingAfter.
				c.goWithNode(ctx, log, a, p, deadNode, "the pod is annotated not to be disrupted, but no kubelet runs it there")
			case a.reclaimDue(p, now, c.cfg.DisruptionStepInterval):
				// The cloud reclaims the node at the deadline, and the pod with it: deleted now, it
				// ends gracefully by then, and its successor is made at once and takes the room
				// the plan gave it, rather than 40 s after the Node is gone (the pod garbage
				// collector), when consolidation may have taken that room.
				c.goWithNode(ctx, log, a, p, a.reclaimed(), "the pod is annotated not to be disrupted, but it would end with the node")
			case due:
				// (An urgent action's too: a repair of a node still Ready carries the pool's
				// terminationGracePeriod when it sets one.)
				c.forceDelete(ctx, log, a, p, "it is annotated not to be disrupted")
			case a.urgent():
				left--
				stay++
			case a.grace == 0:
				return left, stay, "", fmt.Sprintf("pod %s is annotated not to be disrupted (%s)", key, api.KeepPodDoNotDisrupt)
			default:
				held = append(held, key)
			}
			continue
		}
		if due {
			c.forceDelete(ctx, log, a, p, "a PodDisruptionBudget allowed no disruption")
			continue
		}
		if a.reclaimDue(p, now, c.cfg.DisruptionStepInterval) && !c.disruption.mayEvict(key, now) {
			// Its eviction refused until now, and backed off: it would end with the node.
			c.goWithNode(ctx, log, a, p, a.reclaimed(), "its eviction was refused, but it would end with the node")
			continue
		}
		if !c.disruption.mayEvict(key, now) {
			refused = append(refused, key)
			continue
		}
		if b, err := budgets.hold(p); b != "" {
			// The budget's own count would refuse; its status may not have seen the pods leave.
			c.disruption.refused(key, now, c.cfg.DisruptionStepInterval)
			c.metrics.DisruptionEvictionsRefused.Inc()
			refused = append(refused, key)
			log.Debug("eviction held: the budget's healthy pods, counted here, allow no disruption", zap.String(keyPod, key), zap.String("pdb", b), zap.Error(err))
			continue
		}
		c.disruption.endOnce(p.UID, now) // (forgotten below when the eviction does not happen)
		ev := &policyv1Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		switch err := c.kube.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev); {
		case err == nil:
			budgets.evicted(p)
			// The batch reads when it was, on its own clock (State.DisruptionEvicted).
			c.disruption.noteEviction(p, c.clock.Now())
			c.disruption.waveEvicted(a.id, p, all)
			c.metrics.DisruptionEvictions.Inc()
			c.recorder.Eventf(p, corev1.EventTypeNormal, "Disrupted", "evicted from node %s by disruption action %s (%s): the node is removed",
				p.Spec.NodeName, a.id, a.reason)
			log.Info("evicted", zap.String(keyPod, key))
		case apierrors.IsNotFound(err):
			left--
		case apierrors.IsTooManyRequests(err) && c.completeCharged(ctx, log, a, p):
			// An eviction the budget had approved, completed (chargedBy).
			budgets.evicted(p)
		case apierrors.IsTooManyRequests(err) && dead && !podReady(p):
			// A pod not Ready on a node not Ready whose budget is unhealthy (the API's
			// IfHealthyBudget policy refuses it then): it takes nothing from the budget's
			// healthy pods, and only kube-controller-manager's taint eviction (five minutes
			// after the node went unreachable) would end it otherwise.
			c.disruption.forgetEnded(p.UID)
			c.goWithNode(ctx, log, a, p, deadNode, "its eviction was refused (its budget is not healthy), but it is not Ready and takes nothing from the budget")
		case apierrors.IsTooManyRequests(err) && a.reclaimDue(p, now, c.cfg.DisruptionStepInterval):
			// Refused within its grace period of the reclaim: it would end with the node.
			c.disruption.forgetEnded(p.UID)
			c.goWithNode(ctx, log, a, p, a.reclaimed(), "its eviction was refused, but it would end with the node")
		case apierrors.IsTooManyRequests(err):
			c.disruption.forgetEnded(p.UID)
			c.disruption.refused(key, now, c.cfg.DisruptionStepInterval)
			c.metrics.DisruptionEvictionsRefused.Inc()
			refused = append(refused, key)
			log.Debug("eviction refused; retried with backoff", zap.String(keyPod, key), zap.Error(err))
		default:
			c.disruption.forgetEnded(p.UID)
			c.disruption.refused(key, now, c.cfg.DisruptionStepInterval)
			refused = append(refused, key)
			log.Warn("evicting", zap.String(keyPod, key), zap.Error(err))
		}
	}
	var msgs []string
	if len(refused) > 0 {
		sort.Strings(refused)
		msgs = append(msgs, fmt.Sprintf("%s: eviction refused (a PodDisruptionBudget allows no disruption now) for %s", api.KeepPDB, strings.Join(refused, ", ")))
	}
	if len(held) > 0 {
		sort.Strings(held)
		msgs = append(msgs, fmt.Sprintf("%s: %s", api.KeepPodDoNotDisrupt, strings.Join(held, ", ")))
	}
	switch {
	case waiting > 0 && turnWait:
		msgs = append(msgs, fmt.Sprintf("%d pods wait for their turn: another action's replacement is open to its own pods (one at a time, so that neither takes the other's)", waiting))
	case waiting > 0 && keeping:
		msgs = append(msgs, fmt.Sprintf("%d pods wait for their turn: the room of the later waves is kept first (%s)", waiting, api.TaintReplacementFilling))
	case waiting > 0:
		msgs = append(msgs, fmt.Sprintf("%d pods wait for their turn: the replicas of the pods evicted before them are placed first", waiting))
	}
	if len(msgs) == 0 && left > 0 {
		msgs = append(msgs, fmt.Sprintf("%d pods still terminating", left))
	}
	if len(msgs) > 0 && !a.forceAfter.IsZero() {
		msgs = append(msgs, fmt.Sprintf("the terminationGracePeriod (%s) ends at %s: the pods still held are deleted by then", a.grace, a.forceAfter.UTC().Format(time.RFC3339)))
	}
	return left, stay, strings.Join(msgs, "; "), ""
}

// forceBy is the latest end of a terminationGracePeriod on action a (zero: none): for a
// reservation that ends (ReservationEnding, its Deadline the end), policy.ReservationTerminationLead
// before the end.
func forceBy(a api.DisruptionAction) time.Time {
	if a.Reason != api.ReasonReservationEnding || a.Deadline == nil || a.Deadline.IsZero() {
		return time.Time{}
	}
	return a.Deadline.Add(-policy.ReservationTerminationLead)
}

// drainForceAfter is when the terminationGracePeriod grace of a drain that begins at now ends:
// grace later, or by when it is not zero and earlier; to the second, as the annotation keeps it.
func drainForceAfter(now time.Time, grace time.Duration, by time.Time) time.Time {
	end := now.Add(grace)
	if !by.IsZero() && by.Before(end) {
		end = by
	}
	return end.Truncate(time.Second)
}

// StuckTerminatingAfter is how long past its deletion timestamp (its deletion's start plus its
// grace period) a pod may still be terminating before a drain stops waiting for it: its kubelet
// would have killed it by then, so the kubelet is not running (a node NotReady, its machine dead
// or parted), and only the node's removal ends the pod (the pod garbage collector deletes the
// pods of a Node that is gone). Karpenter waits the same minute.
const StuckTerminatingAfter = time.Minute

// stuckTerminating reports whether the terminating pod p is past StuckTerminatingAfter at now.
func stuckTerminating(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > StuckTerminatingAfter
}

// forced reports whether the action's terminationGracePeriod is over at now.
func (a *actionState) forced(now time.Time) bool {
	return !a.forceAfter.IsZero() && !now.Before(a.forceAfter)
}

// forceDue reports whether pod p of the action is to be deleted whatever holds its eviction: the
// action's terminationGracePeriod ends within the pod's own terminationGracePeriodSeconds (30 s
// when unset), so that the pod, deleted now, ends by the period's end (at once when the pod's
// own is the longer).
func (a *actionState) forceDue(p *corev1.Pod, now time.Time) bool {
	if a.forceAfter.IsZero() {
		return false
	}
	return !now.Before(a.forceAfter.Add(-podGrace(p)))
}

// forceDelete deletes a pod of the action whose eviction was held (why) when the action's
// terminationGracePeriod runs out: on its UID, keeping its own grace period.
func (c *Controller) forceDelete(ctx context.Context, log *zap.Logger, a *actionState, p *corev1.Pod, why string) {
	if !c.deleteOnce(ctx, log, a, p, "deleting a pod past its action's terminationGracePeriod") {
		return
	}
	c.recorder.Eventf(p, corev1.EventTypeWarning, "DisruptionForced", "deleted from node %s by disruption action %s (%s): %s, and the action's terminationGracePeriod (%s) ends at %s",
		p.Spec.NodeName, a.id, a.reason, why, a.grace, a.forceAfter.UTC().Format(time.RFC3339))
	log.Warn("deleted past its eviction's hold: the terminationGracePeriod ends", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.String("why", why),
		zap.Time("forceAfter", a.forceAfter))
}

// goWithNode deletes pod p, once, without the Eviction API, from a node of action a that goes
// whatever Tiler does (node says why): a node not Ready under repair (actionState.dead), or an
// interrupted node within the pod's grace period of the cloud's reclaim (reclaimDue). The pod is
// one annotated not to be disrupted or one whose eviction was refused (why says which). A
// DisruptionForced Event and tiler_disruption_forced_deletions_total{reason} say so. The deletion
// keeps the pod's grace period and is made on its UID.
func (c *Controller) goWithNode(ctx context.Context, log *zap.Logger, a *actionState, p *corev1.Pod, node, why string) {
	if !c.deleteOnce(ctx, log, a, p, "deleting a pod that goes with its node") {
		return
	}
	c.recorder.Eventf(p, corev1.EventTypeWarning, "DisruptionForced", "deleted from node %s by disruption action %s (%s): %s; %s, and it goes with the node",
		p.Spec.NodeName, a.id, a.reason, node, why)
	log.Warn("deleted with its node", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.String("node", node), zap.String("why", why))
}

// deadNode says why a pod goes with a dead node (actionState.dead), for goWithNode.
const deadNode = "the node is not Ready and is replaced"

// reclaimed says why a pod goes with an interrupted node (reclaimDue), for goWithNode.
func (a *actionState) reclaimed() string {
	return "the cloud reclaims the node at " + a.deadline.UTC().Format(time.RFC3339)
}

// reclaimDue reports whether pod p of an interrupted action, still on its node, is within its own
// terminationGracePeriodSeconds (30 s when unset) and one step (the passes' interval while an
// action is under way) of the cloud's reclaim (the action's deadline): deleted now, it ends
// gracefully by then instead of with the machine. (Without the step, a pod whose own period is
// shorter than the interval would be met by no pass before the reclaim.)
func (a *actionState) reclaimDue(p *corev1.Pod, now time.Time, step time.Duration) bool {
	return !a.deadline.IsZero() && !now.Before(a.deadline.Add(-podGrace(p)-step))
}

// podGrace is the pod's own terminationGracePeriodSeconds (30 s when unset).
func podGrace(p *corev1.Pod) time.Duration {
	own := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if s := p.Spec.TerminationGracePeriodSeconds; s != nil {
		own = *s
	}
	return time.Duration(own) * time.Second
}

// deleteOnce deletes pod p of action a without the Eviction API, once (endOnce: not again while
// a lagging informer shows it running), on its UID and keeping its grace period, and counts it in
// tiler_disruption_forced_deletions_total{reason}. It reports whether it deleted the pod now;
// failing is logged as failed and forgotten, so that the next pass tries again.
func (c *Controller) deleteOnce(ctx context.Context, log *zap.Logger, a *actionState, p *corev1.Pod, failed string) bool {
	if !c.disruption.endOnce(p.UID, c.clock.Now()) {
		return false // deleted by a pass the informer has not caught up with
	}
	switch gone, err := c.deleteOnUID(ctx, p); {
	case gone:
		return false
	case err != nil:
		c.disruption.forgetEnded(p.UID)
		log.Warn(failed, zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
		return false
	}
	c.disruption.noteEviction(p, c.clock.Now())
	c.metrics.DisruptionForcedDeletions.WithLabelValues(string(a.reason)).Inc()
	return true
}

// deleteOnUID deletes pod p keeping its grace period, on its UID so that a pod recreated under
// the name is not touched; gone reports that p was gone already (or replaced).
func (c *Controller) deleteOnUID(ctx context.Context, p *corev1.Pod) (gone bool, err error) {
	uid := p.UID
	err = c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return true, nil
	}
	return false, err
}

// completeCharged deletes a pod whose eviction its PodDisruptionBudget refused while charging
// the pod already (chargedBy): an eviction approved for it that was not carried out. It reports
// whether it deleted the pod (or found it gone). The deletion keeps the pod's grace period and
// is made on the pod's UID, so a pod recreated under the name is not touched.
func (c *Controller) completeCharged(ctx context.Context, log *zap.Logger, a *actionState, p *corev1.Pod) bool {
	pdbs, err := c.factory.Policy().V1().PodDisruptionBudgets().Lister().PodDisruptionBudgets(p.Namespace).List(everything())
	if err != nil {
		return false
	}
	// The charge is stamped, and its expiry judged, by the control plane's clocks: the
	// controller's wall clock (c.clock), not the disruption loop's.
	pdb := chargedBy(p, pdbs, c.clock.Now())
	if pdb == "" {
		return false
	}
	switch gone, err := c.deleteOnUID(ctx, p); {
	case gone:
		return true
	case err != nil:
		log.Warn("completing an approved eviction", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
		return false
	}
	c.disruption.noteEviction(p, c.clock.Now())
	c.metrics.DisruptionEvictions.Inc()
	c.recorder.Eventf(p, corev1.EventTypeNormal, "Disrupted", "deleted from node %s by disruption action %s (%s): PodDisruptionBudget %s had approved its eviction, which was not carried out",
		p.Spec.NodeName, a.id, a.reason, pdb)
	log.Info("completed an eviction the budget had approved", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.String("pdb", pdb))
	return true
}

// mustEvict reports whether a pod bound to a node being drained must go before the node does:
// not DaemonSet or mirror pods, nor finished ones.
func mustEvict(p *corev1.Pod) bool {
	if !snapshot.IsActive(p) || snapshot.IsDaemonSetPod(p) {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	return true
}

// doNotDisrupt reports whether the pod is annotated never to be disrupted.
func doNotDisrupt(p *corev1.Pod) bool {
	a := p.Annotations
	return a[api.AnnotationDoNotDisrupt] == "true" || a[api.AnnotationKarpenterDoNotDisrupt] == "true" || a[api.AnnotationSafeToEvict] == "false"
}

// abandon rolls the action back: its nodes lose the action's annotations and are uncordoned
// (when it had cordoned them), and a DisruptionBlocked Event on each says why. A replacement
// already launched stays, an ordinary managed node (a later plan removes it if it stays empty).
func (c *Controller) abandon(ctx context.Context, log *zap.Logger, a *actionState, p ActionProgress, why string) ActionProgress {
	var uncordon *bool
	if a.step != api.DisruptionStepReplacing && !a.interrupted {
		uncordon = ptr.To(false) // an interrupted node stays cordoned: it goes anyway
	}
	if err := c.annotateAll(ctx, a.names(), actionAnnotationsCleared(), uncordon); err != nil {
		p.Message = "rolling back: " + err.Error()
		return p
	}
	for _, n := range a.nodes {
		c.recorder.Eventf(n, corev1.EventTypeWarning, "DisruptionBlocked", "action %s (%s, %s) abandoned at %s: %s", a.id, a.kind(), a.reason, a.step, why)
	}
	c.metrics.DisruptionAbandoned.WithLabelValues(string(a.kind()), string(a.reason)).Inc()
	log.Warn("disruption action abandoned; nodes uncordoned", zap.String(keyStep, a.step), zap.String("why", why))
	p.Step, p.Message = ActionAbandoned, why
	return p
}

func actionAnnotationsCleared() map[string]*string {
	return map[string]*string{api.AnnotationDisruptionAction: nil, api.AnnotationDisruptionStep: nil,
		api.AnnotationDisruptionStepSince: nil, api.AnnotationDisruptionReason: nil, api.AnnotationDisruptionReplacement: nil,
		api.AnnotationDisruptionGracePeriod: nil, api.AnnotationDisruptionForceAfter: nil, api.AnnotationDisruptionReplacementPods: nil}
}

// setStep moves every node of the action to step at now, cordoning them when cordon is set.
func (c *Controller) setStep(ctx context.Context, a *actionState, step string, now time.Time, cordon bool) error {
	since := now.UTC().Format(time.RFC3339)
	var unsched *bool
	if cordon {
		unsched = ptr.To(true)
	}
	ann := map[string]*string{api.AnnotationDisruptionStep: &step, api.AnnotationDisruptionStepSince: &since}
	// The grace period runs from the drain's first start (the end of Replacing), bounded by the
	// end a reservation set at the start (forceBy); a return to draining keeps it.
	force := a.forceAfter
	if step == api.DisruptionStepDraining && a.grace > 0 && (force.IsZero() || a.step == api.DisruptionStepReplacing) {
		force = drainForceAfter(now, a.grace, a.forceAfter)
		f := force.UTC().Format(time.RFC3339)
		ann[api.AnnotationDisruptionForceAfter] = &f
	}
	if err := c.annotateAll(ctx, a.names(), ann, unsched); err != nil {
		return fmt.Errorf("moving to %s: %w", step, err)
	}
	a.step, a.since, a.forceAfter = step, now, force
	return nil
}

func (c *Controller) annotateAll(ctx context.Context, nodes []string, ann map[string]*string, unschedulable *bool) error {
	var errs []error
	for _, n := range nodes {
		if err := c.annotate(ctx, n, ann, unschedulable); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// annotate merge-patches the node's annotations (nil removes one) and, when set, its
// spec.unschedulable.
func (c *Controller) annotate(ctx context.Context, node string, ann map[string]*string, unschedulable *bool) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": ann}}
	if unschedulable != nil {
		patch["spec"] = map[string]any{"unschedulable": *unschedulable}
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := c.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching node %s: %w", node, err)
	}
	return nil
}

// recordForNode returns the launch record whose Node is the named one.
func recordForNode(recs []LaunchRecord, idx nodeIndex, node string) (LaunchRecord, bool) {
	for _, r := range recs {
		if n := idx.forRecord(r); n != nil && n.Name == node {
			return r, true
		}
	}
	return LaunchRecord{}, false
}

func recordByLaunchID(recs []LaunchRecord, id string) (LaunchRecord, bool) {
	for _, r := range recs {
		if r.LaunchID == id {
			return r, true
		}
	}
	return LaunchRecord{}, false
}

// removeEmpty removes an empty managed node through the disruption path: the node is annotated
// (an Empty Delete action at its Deleting step) and cordoned, its pods are read again from the
// API server, and it is removed only if none must be evicted; otherwise (a pod landed since the
// batch looked) the node is uncordoned and kept. A controller killed in between finds the action
// on the node and finishes it (advance). It reports whether the launch is gone.
func (c *Controller) removeEmpty(ctx context.Context, log *zap.Logger, rm Removal, now time.Time) bool {
	if rm.Node == "" {
		return c.remove(ctx, log, rm.Record, rm.Node, rm.Reason)
	}
	id := api.ActionID(api.DisruptionAction{Kind: api.ActionDelete, Reason: api.ReasonEmpty, Pool: rm.Record.Pool, Nodes: []string{rm.Node}})
	since, step, reason := now.UTC().Format(time.RFC3339), api.DisruptionStepDeleting, string(api.ReasonEmpty)
	ann := map[string]*string{api.AnnotationDisruptionAction: &id, api.AnnotationDisruptionStep: &step,
		api.AnnotationDisruptionStepSince: &since, api.AnnotationDisruptionReason: &reason}
	l := log.With(zap.String(keyAction, id))
	if err := c.annotate(ctx, rm.Node, ann, ptr.To(true)); err != nil {
		l.Error("cordoning an empty node", zap.Error(err))
		return false
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + rm.Node})
	if err == nil {
		for i := range pods.Items {
			if mustEvict(&pods.Items[i]) {
				err = fmt.Errorf("pod %s/%s landed on it", pods.Items[i].Namespace, pods.Items[i].Name)
				break
			}
		}
	}
	if err != nil {
		l.Info("empty node not removed; uncordoned", zap.String(keyNode, rm.Node), zap.Error(err))
		if err := c.annotate(ctx, rm.Node, actionAnnotationsCleared(), ptr.To(false)); err != nil {
			l.Error("uncordoning", zap.Error(err))
		}
		return false
	}
	return c.remove(ctx, l, rm.Record, rm.Node, rm.Reason)
}

// holdEvicted drops from pending the pods of controllers whose pods a disruption evicted less
// than grace ago: they are expected to land where the disruption plan moved them, not a reason to
// buy. It returns the rest and the time until the first held pod may trigger a purchase (0: none
// held).
func holdEvicted(pending []*corev1.Pod, evicted map[string]time.Time, now time.Time, grace time.Duration) ([]*corev1.Pod, time.Duration) {
	if len(evicted) == 0 || grace <= 0 {
		return pending, 0
	}
	var out []*corev1.Pod
	var wait time.Duration
	for _, p := range pending {
		if o := metav1.GetControllerOf(p); o != nil {
			if at, ok := evicted[string(o.UID)]; ok && now.Sub(at) < grace {
				if w := grace - now.Sub(at); wait == 0 || w < wait {
					wait = w
				}
				continue
			}
		}
		out = append(out, p)
	}
	return out, wait
}

// hasTaint reports whether the node carries a taint with the key.
func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// setPreferNoSchedule adds the PreferNoSchedule taint key to the node, or removes it, starting
// from the given copy of the Node (the snapshot's).
func (c *Controller) setPreferNoSchedule(ctx context.Context, n *corev1.Node, key string, want bool) error {
	err := mutateTaints(ctx, c.kube.CoreV1().Nodes(), n.Name, n, func(taints []corev1.Taint) ([]corev1.Taint, bool) {
		i := slices.IndexFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
		switch {
		case want && i < 0:
			return append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectPreferNoSchedule}), true
		case !want && i >= 0:
			return slices.Delete(taints, i, i+1), true
		}
		return taints, false
	})
	if err != nil {
		return fmt.Errorf("setting taint %s on node %s: %w", key, n.Name, err)
	}
	return nil
}

// keptRoom is what action a wants of api.TaintReplacementFilling while its drain goes in waves
// (waiting: the pods still to evict, by wave; wave: the next to go; hold: the replicas of the
// wave evicted last are being placed): the nodes the plan moves the pods of the wave being placed
// to are free of it (false), the nodes only pods still waiting move to carry it (true), so that
// kube-scheduler's score sends each wave's replicas to the room planned for them and the later
// waves find theirs (campaign seed 20: a 2-CPU replica bound on the emptier node, planned for
// later 4-GiB pods, and the last of those fit nowhere). The wave being placed is the one evicted
// now or, while its replicas are placed, the one evicted last (disruptionMemory.waves).
func (c *Controller) keptRoom(a *actionState, waiting map[*corev1.Pod]evictionWave, wave evictionWave, hold bool) map[string]bool {
	to := func(p *corev1.Pod) []string {
		key := p.Namespace + "/" + p.Name
		if a.toReplacement[key] {
			return a.replacementNodes
		}
		if n, ok := a.moves[key]; ok {
			return []string{n}
		}
		return nil
	}
	var placing []string
	if hold {
		placing = c.disruption.waveRoomOf(a.id)
	} else {
		for p, w := range waiting {
			if w == wave {
				placing = append(placing, to(p)...)
			}
		}
		c.disruption.startWave(a.id, placing)
	}
	room := map[string]bool{}
	for p, w := range waiting {
		if hold || w != wave {
			for _, n := range to(p) {
				room[n] = true
			}
		}
	}
	for _, n := range placing {
		room[n] = false
	}
	return room
}

// roomKept reports whether the nodes show api.TaintReplacementFilling as room says (a node not
// shown is left out).
func roomKept(room map[string]bool, idx nodeIndex) bool {
	for name, keep := range room {
		if n := idx.byName[name]; n != nil && hasTaint(n, api.TaintReplacementFilling) != keep {
			return false
		}
	}
	return true
}

// keepRoom sets api.TaintReplacementFilling on the nodes some action under way keeps room on
// (actionState.room) and no action needs free now, and removes it from every other node: from
// the nodes of a wave that comes, and from all once the actions end (a failure is logged and
// mended at the next pass).
func (c *Controller) keepRoom(ctx context.Context, nodes []*corev1.Node, actions []*actionState) {
	want := map[string]bool{}
	free := map[string]bool{}
	for _, a := range actions {
		for n, keep := range a.room {
			if keep {
				want[n] = true
			} else {
				free[n] = true
			}
		}
	}
	for _, n := range nodes {
		keep := want[n.Name] && !free[n.Name]
		if hasTaint(n, api.TaintReplacementFilling) == keep {
			continue
		}
		if err := c.setPreferNoSchedule(ctx, n, api.TaintReplacementFilling, keep); err != nil {
			c.log.Warn("setting the taint that keeps a later wave's room", zap.String(keyNode, n.Name), zap.Bool("keep", keep), zap.Error(err))
		}
	}
}
