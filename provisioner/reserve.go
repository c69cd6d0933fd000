package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/snapshot"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reservations keep a bought node's room for the pods planned onto it.
//
// Nominations alone cannot: kube-scheduler v1.37 clears an external nomination at each failed
// attempt (nominate.go), so while nodes boot, a pod planned for a node that is still booting can
// be bound on another one that came up first, on the room planned for that node's own pods — which
// then stay pending (a GPU planned for a whole-GPU claim taken by a 4 GiB claim, the MIG slice of
// another zone's pod, …) and a second node is bought. So each node Tiler launches registers with
// the taint tiler.dev/reserved=<launch ID>:NoSchedule (api.TaintReserved), and before the
// launch the controller adds the matching toleration to every pod planned there (the API allows
// adding tolerations to a pod). The scheduler then binds only planned pods on a reserved node; a
// pod planned elsewhere may still land on a node without the taint (an existing node, or one whose
// reservation ended) — a move, but one that strands no planned pod on a new node.
//
// The simulation ignores the taint: a later batch may plan more pods into a reserved node's spare
// room (leftover GPUs of an in-flight node), and the controller adds their tolerations as well.
//
// On AWS, nodes of a pool share a launch template, so the taint registers with the value
// api.ReservationPending, which no pod tolerates; the controller sets the launch ID as
// soon as it matches the Node to its launch record (by provider ID), and removes a pending
// reservation of a Node no record claims.
//
// A reservation ends, and the taint is removed, as soon as no unbound pod tolerates it — every pod
// planned there is bound (there or elsewhere) or gone; a disruption's replacement is opened by
// its action's drain instead, and held until its action is over (turns.go) — or when the node
// has been Ready for
// Config.ReservationTTL, so that a pod that cannot bind there (or a DaemonSet that does not
// tolerate the taint) holds the node's room for a bounded time only. DaemonSets that must run
// before the planned pods can (the GPU device plugin, the DRA driver) must tolerate
// tiler.dev/reserved (operator Exists); until the reservation ends they are not scheduled there.
// Config.Reserve switches reservations off, to measure their effect.

// reservationWorkers bounds the concurrent pod updates that add tolerations.
const reservationWorkers = 64

// reservationTaint is the taint a node launched as launchID registers with.
func reservationTaint(launchID string) corev1.Taint {
	return corev1.Taint{Key: api.TaintReserved, Value: launchID, Effect: corev1.TaintEffectNoSchedule}
}

// reservationValue returns the value of the node's reservation taint, if it has one.
func reservationValue(n *corev1.Node) (string, bool) {
	for _, t := range n.Spec.Taints {
		if t.Key == api.TaintReserved {
			return t.Value, true
		}
	}
	return "", false
}

// toleratesReservation reports whether p tolerates the reservation value.
func toleratesReservation(p *corev1.Pod, value string) bool {
	t := reservationTaint(value)
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &t, true) {
			return true
		}
	}
	return false
}

// reservedValues returns the reservation values p tolerates by an Equal toleration of
// TaintReserved (an Exists toleration tolerates every reservation and holds none).
func reservedValues(p *corev1.Pod) []string {
	var out []string
	for _, t := range p.Spec.Tolerations {
		if t.Key == api.TaintReserved && t.Operator == corev1.TolerationOpEqual && t.Value != "" {
			out = append(out, t.Value)
		}
	}
	return out
}

// reservationWatch adds reservation tolerations to planned pods (as each batch decided:
// Decision.Tolerations) and ends reservations. It reads and writes through its own narrow
// dependencies, not through the controller; the controller builds it only when reservations are on.
type reservationWatch struct {
	reservationDeps
	log  *zap.Logger
	wake chan struct{}

	mu sync.Mutex
	// held: reservation value → keys of the pods this process gave its toleration, so that a
	// reservation is not ended on a pod cache that has not seen the toleration yet.
	held map[string]map[string]bool
}

// reservationDeps are what the reservation watch needs: the API server's client, the
// controller's pod and node informers, the launch records, a clock, a logger, an Event recorder,
// the counter of ended reservations and the timing of Config.
type reservationDeps struct {
	kube         kubernetes.Interface
	pods, nodes  cache.SharedIndexInformer
	records      func(context.Context) ([]LaunchRecord, error)
	clock        clock.Clock
	log          *zap.Logger
	recorder     record.EventRecorder
	ended        *prometheus.CounterVec
	ttl, recheck time.Duration // Config.ReservationTTL and Config.ResyncPeriod
}

func newReservationWatch(d reservationDeps) *reservationWatch {
	return &reservationWatch{reservationDeps: d, log: d.log.Named("reservations"), wake: make(chan struct{}, 1),
		held: map[string]map[string]bool{}}
}

func (w *reservationWatch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// register wakes the release loop on the events that can end a reservation: a reserved node's
// changes (registered, Ready), the end of a Replace action (its nodes lose the action or go:
// replacementsUnderWay) and the binding or deletion of a pod that holds a reservation.
func (w *reservationWatch) register() {
	// Only the transition matters: a bound pod keeps its tolerations, and its later status updates
	// must not rescan every pod.
	_, _ = w.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, o any) {
			before, ok1 := old.(*corev1.Pod)
			p, ok2 := o.(*corev1.Pod)
			if ok1 && ok2 && waitingPod(before) && !waitingPod(p) && len(reservedValues(p)) > 0 {
				w.poke()
			}
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); !ok || len(reservedValues(p)) > 0 {
				w.poke()
			}
		},
	})
	_, _ = w.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { w.pokeNode(o) },
		UpdateFunc: func(_, o any) {
			w.pokeNode(o)
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			w.pokeNode(o)
		},
	})
}

func (w *reservationWatch) pokeNode(o any) {
	if n, ok := o.(*corev1.Node); ok {
		// (A node under a Replace action: its action's end ends the hold on its replacement's
		// reservation, replacementsUnderWay.)
		if _, reserved := reservationValue(n); reserved || n.Annotations[api.AnnotationDisruptionReplacement] != "" {
			w.poke()
		}
	}
}

// start runs the release loop until ctx ends.
func (w *reservationWatch) start(ctx context.Context) {
	go func() {
		for {
			next := w.release(ctx)
			wait := w.recheck
			if next > 0 && next < wait {
				wait = next
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			case <-w.clock.After(wait):
			}
		}
	}()
}

// tolerate adds the tolerations a batch decided (pod key → node reservations it must tolerate,
// Decision.Tolerations) before the plan's launches. Pods already bound or gone are skipped; a pod
// that cannot be updated is logged — it waits for the reservation to end.
func (w *reservationWatch) tolerate(ctx context.Context, log *zap.Logger, values map[string][]string) {
	if len(values) == 0 {
		return
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(reservationWorkers, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range work {
				if err := w.addTolerations(ctx, key, values[key]); err != nil {
					log.Warn("adding the reservation toleration; the pod waits for the reservation to end",
						zap.String(keyPod, key), zap.Strings("reservations", values[key]), zap.Error(err))
				}
			}
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
}

func validReservation(v string) bool {
	return len(validation.IsValidLabelValue(v)) == 0 && v != ""
}

// addTolerations adds to the pod key the tolerations of the reservation values it lacks, in one
// JSON patch computed from the informer's copy of the pod (no GET, no read-modify-write of the
// whole pod): the patch appends, so a concurrent writer's change to the pod is kept. A copy that
// is a little stale can at worst append a toleration the pod already has, which is harmless.
func (w *reservationWatch) addTolerations(ctx context.Context, key string, values []string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	obj, ok, err := w.pods.GetStore().GetByKey(key)
	if err != nil {
		return err
	}
	if !ok {
		return nil // deleted
	}
	p, isPod := obj.(*corev1.Pod)
	if !isPod || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return nil
	}
	patch, err := tolerationPatch(p, values)
	if err != nil || patch == nil {
		return err
	}
	_, err = w.kube.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range values {
		if w.held[v] == nil {
			w.held[v] = map[string]bool{}
		}
		w.held[v][key] = true
	}
	return nil
}

// tolerationPatch is the JSON patch that appends to p's tolerations those of the reservation
// values it lacks (nil when it lacks none).
func tolerationPatch(p *corev1.Pod, values []string) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var add []corev1.Toleration
	for _, v := range values {
		if !toleratesReservation(p, v) {
			add = append(add, corev1.Toleration{Key: api.TaintReserved, Operator: corev1.TolerationOpEqual, Value: v,
				Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	var ops []op
	if p.Spec.Tolerations == nil {
		ops = append(ops, op{Op: "add", Path: "/spec/tolerations", Value: add})
	} else {
		for _, t := range add {
			ops = append(ops, op{Op: "add", Path: "/spec/tolerations/-", Value: t})
		}
	}
	return json.Marshal(ops)
}

// release ends the reservations that are over and returns how long until the next one may end by
// its TTL (0: none pending).
func (w *reservationWatch) release(ctx context.Context) time.Duration {
	var nodes []*corev1.Node
	for _, o := range w.nodes.GetStore().List() {
		if n, ok := o.(*corev1.Node); ok {
			nodes = append(nodes, n)
		}
	}
	waiting := map[string]bool{} // reservation values an unbound pod holds
	for _, o := range w.pods.GetStore().List() {
		p, ok := o.(*corev1.Pod)
		if !ok || !waitingPod(p) {
			continue
		}
		for _, v := range reservedValues(p) {
			waiting[v] = true
		}
	}
	podIndexer := w.pods.GetIndexer()
	w.mu.Lock()
	for v, keys := range w.held {
		for k := range keys {
			if o, exists, _ := podIndexer.GetByKey(k); exists && waitingPod(o.(*corev1.Pod)) {
				waiting[v] = true
			} else {
				delete(keys, k)
			}
		}
		if len(keys) == 0 {
			delete(w.held, v)
		}
	}
	w.mu.Unlock()
	// A replacement's room is for the pods its action moves there: its drain opens it (turns.go).
	for _, id := range replacementsUnderWay(nodes) {
		waiting[id] = true
	}
	w.holdForPlanned(ctx, nodes, waiting)
	launchIDs := w.launchIDs(ctx, nodes)
	rekey, ends, next := decideReservations(nodes, waiting, launchIDs, w.clock.Now(), w.ttl)
	for node, id := range rekey {
		if err := w.setTaint(ctx, node, id); err != nil {
			w.log.Warn("setting the reservation of a registered node", zap.String(keyNode, node), zap.Error(err))
		}
	}
	for _, e := range ends {
		if err := w.untaint(ctx, e.node.Name); err != nil {
			w.log.Warn("ending the reservation", zap.String(keyNode, e.node.Name), zap.Error(err))
			continue
		}
		w.ended.WithLabelValues(e.reason).Inc()
		w.log.Info("reservation ended", zap.String(keyNode, e.node.Name), zap.String(keyReason, e.reason))
		w.recorder.Eventf(e.node, corev1.EventTypeNormal, "ReservationEnded", "reservation %s ended (%s): any pod may use the node", e.value, e.reason)
	}
	return next
}

// holdForPlanned marks as waiting the reservation of every launch whose record lists a pod that
// is still unbound, whether or not its toleration has been written yet: a node that turns Ready
// before the tolerations of its planned pods are written (a fast boot, a thousand pods to patch)
// must not be released to other pods, which would take the planned pods' room and have them
// bought for again. The reservation TTL still bounds the wait for a pod that never comes.
//
// The nodes of one batch (LaunchRecord.Batch) are held together, until every pod the batch
// planned is bound: a pod whose own node or toleration is not there yet would otherwise take the
// room left on a node of the batch whose pods are all bound, and under a hard zone spread, a pod
// bound in another zone than planned leaves the group's last planned pods refused by their own
// nodes on the skew, until the TTL ends other reservations (a 1,000-pod burst bound in 120 s
// instead of 20 s, in 1 of 7 runs).
//
// It reads the launch records only when a reserved node has no tolerating pod waiting: during a
// burst of binds the release loop runs back to back, and most nodes' pods tolerate them already.
func (w *reservationWatch) holdForPlanned(ctx context.Context, nodes []*corev1.Node, waiting map[string]bool) {
	unheld := false
	for _, n := range nodes {
		if v, ok := reservationValue(n); ok && !waiting[v] {
			unheld = true
			break
		}
	}
	if !unheld {
		return
	}
	recs, err := w.records(ctx)
	if err != nil {
		w.log.Warn("reading the launch records to hold reservations for their planned pods", zap.Error(err))
		return
	}
	pods := w.pods.GetIndexer()
	batches := map[string]bool{} // batch → one of its pods waits
	for _, r := range recs {
		if !waiting[r.LaunchID] {
			for _, key := range r.Pods {
				if o, exists, _ := pods.GetByKey(key); exists && waitingPod(o.(*corev1.Pod)) {
					waiting[r.LaunchID] = true
					break
				}
			}
		}
		if waiting[r.LaunchID] && r.Batch != "" {
			batches[r.Batch] = true
		}
	}
	for _, r := range recs {
		if batches[r.Batch] && r.Batch != "" {
			waiting[r.LaunchID] = true
		}
	}
}

// reservationEnd is a node reservation to end, and why (the reason label of
// tiler_provisioner_reservations_ended_total).
type reservationEnd struct {
	node          *corev1.Node
	value, reason string
}

// decideReservations decides, at now, on the reservations of nodes given the reservation values
// an unbound pod holds (waiting) and the launch IDs of the nodes registered with
// api.ReservationPending (nil: the launch records could not be read). It returns the pending
// reservations to set to their launch ID (node → launch ID), the reservations to end — an
// unknown launch's, one no unbound pod holds, one whose node has been Ready for ttl — and how long
// until the next may end by its TTL (0: none).
func decideReservations(nodes []*corev1.Node, waiting map[string]bool, launchIDs map[string]string, now time.Time,
	ttl time.Duration) (rekey map[string]string, ends []reservationEnd, next time.Duration) {
	rekey = map[string]string{}
	for _, n := range nodes {
		v, ok := reservationValue(n)
		if !ok {
			continue
		}
		if v == api.ReservationPending {
			if id := launchIDs[n.Name]; id != "" {
				rekey[n.Name] = id
				continue
			}
			if launchIDs == nil {
				continue // the launch records could not be read: try again later
			}
		}
		reason := ""
		switch since, isReady := snapshot.NodeReadySince(n); {
		case v == api.ReservationPending:
			reason = "unknown-launch"
		case !waiting[v]:
			reason = "planned-pods-bound"
		case isReady && now.Sub(since) >= ttl:
			reason = "ttl"
		case isReady:
			if d := ttl - now.Sub(since); next == 0 || d < next {
				next = d
			}
		}
		if reason != "" {
			ends = append(ends, reservationEnd{node: n, value: v, reason: reason})
		}
	}
	return rekey, ends, next
}

// launchIDs maps the nodes whose reservation registered as api.ReservationPending to
// the launch ID of their launch record (matched by provider ID or name); nil when the records
// cannot be read.
func (w *reservationWatch) launchIDs(ctx context.Context, nodes []*corev1.Node) map[string]string {
	pending := false
	for _, n := range nodes {
		if v, ok := reservationValue(n); ok && v == api.ReservationPending {
			pending = true
		}
	}
	if !pending {
		return map[string]string{}
	}
	recs, err := w.records(ctx)
	if err != nil {
		w.log.Warn("reading the launch records to match reserved nodes", zap.Error(err))
		return nil
	}
	idx := newNodeIndex(nodes)
	out := map[string]string{}
	for _, r := range recs {
		if n := idx.forRecord(r); n != nil && validReservation(r.LaunchID) {
			out[n.Name] = r.LaunchID
		}
	}
	return out
}

// untaint removes the reservation taint from the node.
func (w *reservationWatch) untaint(ctx context.Context, name string) error {
	return w.mutateReservation(ctx, name, func(t *corev1.Taint) bool { return false })
}

// setTaint sets the value of the node's reservation taint.
func (w *reservationWatch) setTaint(ctx context.Context, name, value string) error {
	return w.mutateReservation(ctx, name, func(t *corev1.Taint) bool { t.Value = value; return true })
}

// mutateReservation applies fn to the node's reservation taint (false: remove it) and updates the
// node when that changed it, starting from the informer's copy of the Node (mutateTaints).
func (w *reservationWatch) mutateReservation(ctx context.Context, name string, fn func(*corev1.Taint) bool) error {
	var cached *corev1.Node
	if o, ok, _ := w.nodes.GetStore().GetByKey(name); ok {
		cached = o.(*corev1.Node)
	}
	err := mutateTaints(ctx, w.kube.CoreV1().Nodes(), name, cached, func(taints []corev1.Taint) ([]corev1.Taint, bool) {
		kept := make([]corev1.Taint, 0, len(taints))
		changed := false
		for _, t := range taints {
			if t.Key == api.TaintReserved {
				before := t
				if !fn(&t) {
					changed = true
					continue
				}
				changed = changed || t != before
			}
			kept = append(kept, t)
		}
		return kept, changed
	})
	if err != nil {
		return fmt.Errorf("updating taint %s: %w", api.TaintReserved, err)
	}
	return nil
}

// mutateTaints applies fn to the node's taints and updates the Node when fn says it changed them.
// The first try starts from cached (an informer's copy; nil: none), with no GET: a copy that is
// stale fails with a conflict, and the retries start from the API server's. A Node that is gone
// is no error.
func mutateTaints(ctx context.Context, nodes typedcorev1.NodeInterface, name string, cached *corev1.Node, fn func([]corev1.Taint) ([]corev1.Taint, bool)) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n *corev1.Node
		if cached != nil && first {
			n = cached.DeepCopy()
		} else {
			var err error
			if n, err = nodes.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		first = false
		taints, changed := fn(n.Spec.Taints)
		if !changed {
			return nil
		}
		n.Spec.Taints = taints
		_, err := nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitingPod reports whether p may still be scheduled: not bound, not finished, not being deleted.
func waitingPod(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// reservationValues returns, for each pod the plan puts on a reserved node, the reservation values
// it must tolerate: the new nodes' (value: launch ID = planned name) and those of existing or
// in-flight nodes still reserved (value: the launch ID of their record, or the Node's taint) —
// except, for a pod whose own planned node is still reserved for it, another reserved node's.
// node returns a Node by name (nil: none).
func reservationValues(plan *api.Plan, recs []LaunchRecord, idx nodeIndex, node func(string) *corev1.Node) map[string][]string {
	values := map[string][]string{} // pod key → reservation values
	for _, n := range plan.NewNodes {
		if !validReservation(n.Name) {
			continue
		}
		for _, key := range n.Pods {
			values[key] = append(values[key], n.Name)
		}
	}
	// Node name in the plan → reservation value: a launch whose Node has not registered is in the
	// plan under its launch ID; a registered Node under its name, reserved while it has the taint
	// (whose value may still be api.ReservationPending: the launch ID is what it becomes).
	reserved := map[string]string{}
	holds := map[string]string{} // pod key → launch ID of the reservation it was planned into, still standing
	for _, r := range recs {
		if !validReservation(r.LaunchID) {
			continue
		}
		if n := idx.forRecord(r); n == nil {
			reserved[r.NodeName] = r.LaunchID
		} else if _, ok := reservationValue(n); ok {
			reserved[n.Name] = r.LaunchID
		} else {
			continue
		}
		for _, key := range r.Pods {
			holds[key] = r.LaunchID
		}
	}
	for _, en := range plan.ExistingNodes {
		v, ok := reserved[en.Name]
		if !ok {
			if n := node(en.Name); n != nil {
				v, ok = reservationValue(n)
				ok = ok && v != api.ReservationPending
			}
		}
		if !ok {
			continue
		}
		for _, key := range en.Pods {
			// A pod whose own planned node is still reserved for it keeps that one: a later plan
			// that shuffles in-flight pods between reserved nodes would only let the scheduler
			// swap them (the launch records and the nominations keep the first plan).
			if lid, ok := holds[key]; ok && lid != v {
				continue
			}
			values[key] = append(values[key], v)
		}
	}
	return values
}
