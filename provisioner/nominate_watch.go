package provisioner

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// nominationWorkers is the number of goroutines writing nominations. Each write is one patch; two
// keep a burst of cleared nominations (one per pod the scheduler retried at a node event) short.
const nominationWorkers = 2

// nominationWatch applies the nomination decisions (nominate.go) as events arrive, without waiting
// for the next batch: launch-record updates (the cloud accepted a launch, a launch failed or was
// deleted), Node events (a planned node registered, turned Ready, became usable) and pod updates
// (the scheduler cleared or overwrote a nomination). Handlers only decide and queue pod keys;
// workers read the pod again and write. It reads and writes through its own narrow dependencies,
// not through the controller; the controller builds it only when nominations are on, and each
// batch queues the pods it decided on (Decision.Nominations) and reads usableSince.
type nominationWatch struct {
	kube   kubernetes.Interface
	pods   cache.SharedIndexInformer // the controller's pod informer
	nodes  cache.SharedIndexInformer // the controller's node informer
	slices cache.SharedIndexInformer // the controller's ResourceSlice informer
	clock  clock.WithTicker
	log    *zap.Logger
	// records are the controller's launch records, whose informer the watch follows.
	records *recordStore
	queue   workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	plan    *nominationPlan           // from the launch records
	usable  map[string]time.Time      // node → when it was first seen usable
	phases  map[string]nodePhase      // node → its phase at its last event
	cleared map[string]nominationLoss // pod key → the scheduler's clears of Tiler's nomination
}

// nominationLoss counts the scheduler's clears of Tiler's nomination of one pod since its node
// last advanced, and when the latest was seen.
type nominationLoss struct {
	count int
	at    time.Time
}

// retryAt returns when the nomination may be set again: nominationRetryMin after the first clear,
// doubling with each further clear up to nominationRetryMax.
func (l nominationLoss) retryAt() time.Time {
	if l.count == 0 {
		return time.Time{}
	}
	d := nominationRetryMin
	for i := 1; i < l.count && d < nominationRetryMax; i++ {
		d *= 2
	}
	return l.at.Add(min(d, nominationRetryMax))
}

// nominationDeps are what the nomination watch needs: the API server's client, the controller's
// pod, node and ResourceSlice informers, the launch records, a clock and a logger.
type nominationDeps struct {
	kube                kubernetes.Interface
	pods, nodes, slices cache.SharedIndexInformer
	records             *recordStore
	clock               clock.WithTicker
	log                 *zap.Logger
}

func newNominationWatch(d nominationDeps) *nominationWatch {
	return &nominationWatch{
		kube: d.kube, pods: d.pods, nodes: d.nodes, slices: d.slices, clock: d.clock,
		log:     d.log.Named("nominations"),
		records: d.records,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](nominationRetryMin, nominationRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: d.clock}),
		plan:    newNominationPlan(nil),
		usable:  map[string]time.Time{},
		phases:  map[string]nodePhase{},
		cleared: map[string]nominationLoss{},
	}
}

// register hooks the handlers to the pod and node informers and to the launch-records informer.
func (w *nominationWatch) register() {
	if err := w.slices.AddIndexers(cache.Indexers{sliceNodeIndex: sliceNode}); err != nil {
		w.log.Warn("indexing ResourceSlices by node: nodes whose GPUs only the DRA driver publishes never count as usable", zap.Error(err))
	}
	_, _ = w.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.onPod(nil, o) },
		UpdateFunc: w.onPod,
		DeleteFunc: w.onPodDelete,
	})
	_, _ = w.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.onNode,
		UpdateFunc: func(_, o any) { w.onNode(o) },
	})
	// A node whose GPUs only the DRA driver publishes becomes usable with its ResourceSlices.
	_, _ = w.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if names, _ := sliceNode(o); len(names) == 1 {
				if n := w.node(names[0]); n != nil {
					w.onNode(n)
				}
			}
		},
	})
	w.records.onChange(w.onRecords)
}

// start starts the workers, which stop when ctx ends. Call it after the controller's informers
// and the launch records' have synced.
func (w *nominationWatch) start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for range nominationWorkers {
		go func() {
			for w.next(ctx) {
			}
		}()
	}
	return nil
}

// synced reports whether the launch records are known; decisions before would clear nominations
// whose records have not been read yet.
func (w *nominationWatch) synced() bool {
	return w.records.synced()
}

// enqueue queues the pod when its nomination should change; the worker decides again and waits
// for the pod's retry time before it sets a nomination the scheduler cleared.
func (w *nominationWatch) enqueue(p *corev1.Pod, ch nominationChange) {
	if ch.op != NominationKeep {
		w.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// apply queues the pods of a batch's nomination decisions.
func (w *nominationWatch) apply(ns []Nomination) {
	for _, n := range ns {
		w.queue.Add(n.Pod)
	}
}

// current returns the decision inputs from the informers.
func (w *nominationWatch) current() nominationView {
	w.mu.Lock()
	plan := w.plan
	w.mu.Unlock()
	return nominationView{plan: plan, node: w.node, observe: w.observe, pod: w.pod}
}

// node returns the informer's Node of the name, or nil.
func (w *nominationWatch) node(name string) *corev1.Node {
	o, ok, _ := w.nodes.GetIndexer().GetByKey(name)
	if !ok {
		return nil
	}
	n, _ := o.(*corev1.Node)
	return n
}

// pod returns the informer's pod namespace/name, or nil.
func (w *nominationWatch) pod(key string) *corev1.Pod {
	o, ok, _ := w.pods.GetIndexer().GetByKey(key)
	if !ok {
		return nil
	}
	p, _ := o.(*corev1.Pod)
	return p
}

// usableSince returns a copy of when each launched node was first seen usable.
func (w *nominationWatch) usableSince() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.usable)
}

// observe returns the phase of the node n (nil: not registered) launched for r and, when it is
// usable, how long since it was first seen usable.
func (w *nominationWatch) observe(n *corev1.Node, r LaunchRecord) (nodePhase, time.Duration) {
	if n == nil {
		return phaseOf(nil, r, false), 0
	}
	phase := phaseOf(n, r, w.sliced(n.Name))
	w.mu.Lock()
	defer w.mu.Unlock()
	if phase != phaseUsable {
		delete(w.usable, n.Name)
		return phase, 0
	}
	now := w.clock.Now()
	since, seen := w.usable[n.Name]
	if !seen {
		w.usable[n.Name] = now
		return phase, 0
	}
	return phase, now.Sub(since)
}

// sliced reports whether DRA ResourceSlices exist for the node.
func (w *nominationWatch) sliced(node string) bool {
	objs, err := w.slices.GetIndexer().ByIndex(sliceNodeIndex, node)
	return err == nil && len(objs) > 0
}

// sliceNodeIndex indexes ResourceSlices by spec.nodeName.
const sliceNodeIndex = "tiler.dev/slice-node"

func sliceNode(o any) ([]string, error) {
	if s, ok := o.(*resourcev1.ResourceSlice); ok && s.Spec.NodeName != nil {
		return []string{*s.Spec.NodeName}, nil
	}
	return nil, nil
}

// onPod notes the scheduler's clears of Tiler's nominations and queues pods whose nomination
// should change.
func (w *nominationWatch) onPod(oldObj, newObj any) {
	p, ok := newObj.(*corev1.Pod)
	if !ok || !w.synced() {
		return
	}
	key := p.Namespace + "/" + p.Name
	if !snapshot.IsPending(p) {
		w.forget(key)
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && old.Status.NominatedNodeName != "" && p.Status.NominatedNodeName == "" &&
		p.Annotations[api.AnnotationNominatedBy] == nominatedByTiler {
		w.mu.Lock()
		l := w.cleared[key]
		w.cleared[key] = nominationLoss{count: l.count + 1, at: w.clock.Now()}
		w.mu.Unlock()
	}
	w.enqueue(p, w.current().decide(p))
}

func (w *nominationWatch) onPodDelete(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if p, ok := o.(*corev1.Pod); ok {
		w.forget(p.Namespace + "/" + p.Name)
	}
}

// forget drops what the watch keeps about a pod.
func (w *nominationWatch) forget(key string) {
	w.mu.Lock()
	delete(w.cleared, key)
	w.mu.Unlock()
	w.queue.Forget(key)
}

// onNode queues the pods planned onto a launched node when the node advances (registers, turns
// Ready, becomes usable), and notes when it becomes usable.
func (w *nominationWatch) onNode(o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	pn := w.plan.nodes[n.Name]
	if pn == nil {
		pn = w.plan.byInstance[cloudprovider.InstanceIDOfNode(n)]
	}
	w.mu.Unlock()
	if pn == nil {
		return
	}
	phase, _ := w.observe(n, pn.record)
	w.mu.Lock()
	prev, seen := w.phases[n.Name]
	w.phases[n.Name] = phase
	w.mu.Unlock()
	if !seen || prev != phase {
		w.mu.Lock()
		for key := range pn.pods {
			delete(w.cleared, key) // the node advanced: set cleared nominations again at once
		}
		w.mu.Unlock()
		for key := range pn.pods {
			w.queue.Add(key)
		}
	}
}

// onRecords rebuilds the plan from the launch records and queues the pods whose planned node, or
// its launch state, changed.
func (w *nominationWatch) onRecords() {
	recs, err := w.records.List(context.Background())
	if err != nil {
		w.log.Warn("reading launch records for nominations", zap.Error(err))
	}
	w.setPlan(newNominationPlan(recs))
}

func (w *nominationWatch) setPlan(plan *nominationPlan) {
	w.mu.Lock()
	old := w.plan
	w.plan = plan
	for name := range w.usable {
		if plan.nodes[name] == nil {
			delete(w.usable, name)
		}
	}
	for name := range w.phases {
		if plan.nodes[name] == nil {
			delete(w.phases, name)
		}
	}
	for key := range w.cleared {
		if plan.pods[key] == nil {
			delete(w.cleared, key)
		}
	}
	w.mu.Unlock()
	for key := range changedPods(old, plan) {
		w.queue.Add(key)
	}
}

// changedPods returns the pod keys planned differently by a and b: onto another node, or onto a
// node whose launch the cloud has accepted in one and not in the other.
func changedPods(a, b *nominationPlan) map[string]bool {
	state := func(pn *plannedNode) string {
		if pn == nil {
			return ""
		}
		return fmt.Sprintf("%s/%t", pn.record.NodeName, pn.record.InstanceID != "")
	}
	out := map[string]bool{}
	for _, pl := range []*nominationPlan{a, b} {
		for key := range pl.pods {
			if state(a.pods[key]) != state(b.pods[key]) {
				out[key] = true
			}
		}
	}
	return out
}

// next handles one queued pod key; it returns false once the queue is shut down. A write that
// fails is retried with the queue's per-pod backoff (nominationRetryMin to nominationRetryMax);
// the pod's next event queues it anyway.
func (w *nominationWatch) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil && ctx.Err() == nil {
		w.log.Debug("nominating", zap.String(keyPod, key), zap.Error(err))
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// sync decides on the pod's nomination as the informers have it now, and writes the decision —
// a nomination the scheduler cleared only once the pod's retry time has come.
func (w *nominationWatch) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p := w.pod(ns + "/" + name)
	if p == nil {
		return nil
	}
	ch := w.current().decide(p)
	if ch.op == NominationKeep {
		return nil
	}
	if ch.again {
		w.mu.Lock()
		at := w.cleared[key].retryAt()
		w.mu.Unlock()
		if wait := at.Sub(w.clock.Now()); wait > 0 {
			w.queue.AddAfter(key, wait)
			return nil
		}
	}
	if err := w.write(ctx, p, ch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// write carries out a decision in one patch of the pod's status subresource (which also takes
// metadata.annotations), conditional on the pod's resourceVersion.
func (w *nominationWatch) write(ctx context.Context, p *corev1.Pod, ch nominationChange) error {
	body, err := nominationPatch(p, ch)
	if err != nil {
		return err
	}
	if _, err := w.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("%s nomination of %s/%s: %w", ch.op, p.Namespace, p.Name, err)
	}
	w.log.Debug("nomination", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Stringer(keyReason, ch.op),
		zap.String(keyNode, ch.node))
	return nil
}
