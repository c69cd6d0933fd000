package replaycheck

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/deploy/crds"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/replay"
)

// ControllerNamespace holds the live controller's cost-policy ConfigMap and launch records.
const ControllerNamespace = "tiler-system"

// policyConfigMap names the cost-policy ConfigMap of the live run.
const policyConfigMap = "replaycheck-policy"

// LiveResult is the live run measured as the replay measures itself, in simulated time (wall
// durations × the factor).
type LiveResult struct {
	// Cost is the $ of the instances the simulated cloud ran, each from its launch to its
	// deletion or to the window's end; GPUHoursBought their GPUs × hours.
	Cost           float64 `json:"cost"`
	GPUHoursBought float64 `json:"gpuHoursBought"`
	// Pending times are from a pod's creation to the first time it was seen bound (to its
	// departure when never bound), over the pods that arrived in the window.
	PendingP50 time.Duration `json:"pendingP50"`
	PendingP95 time.Duration `json:"pendingP95"`
	PendingMax time.Duration `json:"pendingMax"`
	Pods       int           `json:"pods"`
	Bound      int           `json:"bound"`
	NeverBound int           `json:"neverBound"`
	// NodesLaunched and NodesRemoved are the event log's launches and deletions in the window.
	NodesLaunched int `json:"nodesLaunched"`
	NodesRemoved  int `json:"nodesRemoved"`
	// Evictions are the pods that went before their departure (and were created again).
	Evictions int `json:"evictions"`
	// Batches is the number of the controller's batches.
	Batches int `json:"batches"`
	// MaxLag is how late, at worst, the driver created or deleted a pod; CreateLatencyP50 the
	// median API round trip of a pod creation. Both in simulated time: what compression costs.
	MaxLag           time.Duration `json:"maxLag"`
	CreateLatencyP50 time.Duration `json:"createLatencyP50"`
	// Waits are the arriving pods' pending times, longest first (--json shows them).
	Waits []PodWait `json:"waits,omitempty"`
}

// PodWait is one pod's pending time in the live run, in simulated time.
type PodWait struct {
	Pod   string        `json:"pod"`
	Wait  time.Duration `json:"wait"`
	Bound bool          `json:"bound"`
	// Arrive is the pod's arrival offset, GPUs its GPU demand.
	Arrive time.Duration `json:"arrive"`
	GPUs   float64       `json:"gpus"`
}

// livePod is one workload pod in the live run. Times are wall times.
type livePod struct {
	spec *replay.Pod
	// uid is the current incarnation's; created the first creation's start, boundAt the first
	// binding seen, departedAt when the driver deleted it.
	uid                 string
	created, boundAt    time.Time
	departed            bool
	departedAt          time.Time
	evictions           int
	createLatencies     []time.Duration
	arrived, recreating bool
}

// driver creates and deletes the workload's pods at their compressed times, and watches them.
type driver struct {
	o     Options
	kube  kubernetes.Interface
	mu    sync.Mutex
	pods  map[string]*livePod
	end   time.Time
	lag   time.Duration
	again chan string
}

// runLive runs the live mode and measures it.
func runLive(ctx context.Context, rc *rest.Config, o Options) (*LiveResult, error) {
	f := o.Factor
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 500, 1000
	// The driver, the controller and the cloud's kubelets each have a client of their own (their
	// own rate limits), as separate processes would.
	var clients [3]kubernetes.Interface
	for i := range clients {
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("building a client: %w", err)
		}
		clients[i] = c
	}
	kube, ctrlKube, cloudKube := clients[0], clients[1], clients[2]
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	if err := setup(ctx, kube, dyn, o); err != nil {
		return nil, err
	}
	cfg := LiveConfig(o)
	cat := o.Replay.Catalog
	simCfg := sim.DefaultConfig(cat, cfg.ClusterName, filepath.Join(o.Dir, "cloud.json"))
	simCfg.BootDelay = scale(o.Replay.BootDelay, f)
	simCfg.DeviceDelay = scale(o.Replay.DeviceDelay, f)
	for i := range cat.Types {
		if cat.Types[i].GPU.Count > 0 {
			simCfg.Faults.SlowBoots = append(simCfg.Faults.SlowBoots, sim.SlowBoot{
				Offering: api.Offering{InstanceType: cat.Types[i].Name}, BootDelay: scale(o.Replay.GPUBootDelay, f)})
		}
	}
	simCfg.StepInterval = o.StepInterval
	// No kubelet loop for pods (sim.Config.RunPods): the pods end at once when deleted or evicted
	// (terminationGracePeriodSeconds 0), nothing in the controller reads their phase, and listing
	// every pod at every step would load the API server the run measures.
	simCfg.RunPods = false
	simCfg.Logger = o.Log
	cloud, err := sim.New(simCfg, cloudKube, clock.RealClock{})
	if err != nil {
		return nil, fmt.Errorf("starting the simulated cloud: %w", err)
	}
	var batches atomic.Int64
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: ctrlKube, Dynamic: dyn, Provider: cloud, Catalog: cat,
		Clock: clock.RealClock{}, Logger: o.Log, Metrics: provisioner.NewMetrics(prometheus.NewRegistry()),
		Interruptions: cloud.Interruptions(), OnBatch: func(provisioner.State, *provisioner.Result) { batches.Add(1) }})
	if err != nil {
		return nil, fmt.Errorf("building the controller: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	d := &driver{o: o, kube: kube, pods: map[string]*livePod{}, again: make(chan string, len(o.Workload.Pods))}
	for i := range o.Workload.Pods {
		p := &o.Workload.Pods[i]
		d.pods[p.Name] = &livePod{spec: p}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(replay.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.seen(obj) },
		UpdateFunc: func(_, obj any) { d.seen(obj) },
		DeleteFunc: d.deleted,
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(runCtx.Done())
	// The pods the window opens with are there before the controller starts, so that its first
	// batch sees them all, as the replay's first batch does: created one by one through a loaded
	// API server, they would otherwise be planned in slices.
	sched := d.schedule()
	if len(sched) > 0 && sched[0].at == 0 && !sched[0].depart {
		if err := d.run(runCtx, sched[0]); err != nil {
			return nil, err
		}
		sched = sched[1:]
		// and kube-scheduler has judged them (PodScheduled=False), as the replay's scheduler model
		// has when its first batch runs.
		if err := waitFor(runCtx, time.Minute, "kube-scheduler to judge the pods the window opens with", func() bool {
			for _, obj := range inf.GetStore().List() {
				if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == "" && !judged(pod) {
					return false
				}
			}
			return true
		}); err != nil {
			return nil, err
		}
	}
	wg.Go(func() { _ = cloud.Run(runCtx) })
	wg.Go(func() { _ = ctrl.Run(runCtx) })
	if err := waitFor(runCtx, time.Minute, "the controller's and the driver's informers to sync", func() bool {
		return ctrl.Synced() && inf.HasSynced()
	}); err != nil {
		return nil, err
	}
	o.Progress("live run: %s of workload in %s of wall time (%g×)", o.Workload.Length, scale(o.Workload.Length, f).Round(time.Millisecond), f)
	t0 := time.Now()
	d.mu.Lock()
	for _, p := range d.pods {
		if p.arrived {
			p.created = t0 // the window opens when the controller is up
		}
	}
	d.end = t0.Add(scale(o.Workload.Length, f))
	d.mu.Unlock()
	wg.Go(func() { d.recreate(runCtx) })
	if err := d.play(runCtx, t0, sched); err != nil {
		return nil, err
	}
	res := d.result()
	res.Batches = int(batches.Load())
	cancel()
	events, err := sim.ReadEvents(cloud.EventLogPath())
	if err != nil {
		return nil, err
	}
	bill(res, events, cat, cfg.ClusterName, d.end, f)
	return res, nil
}

// setup creates the namespaces, the launch-record CRDs and the compressed cost policy.
func setup(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o Options) error {
	for _, name := range []string{ControllerNamespace, replay.Namespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		return err
	}
	pol, err := compressed(o.Policy.Cost, o.Factor)
	if err != nil {
		return err
	}
	doc, err := yaml.Marshal(pol)
	if err != nil {
		return fmt.Errorf("encoding the cost policy: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policyConfigMap, Namespace: ControllerNamespace,
		Labels: map[string]string{api.LabelCostPolicy: "true"}}, Data: map[string]string{policy.ConfigMapKey: string(doc)}}
	if _, err := kube.CoreV1().ConfigMaps(ControllerNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the cost-policy ConfigMap: %w", err)
	}
	return nil
}

// event is one change of the workload: pods arriving or departing at an offset.
type event struct {
	at     time.Duration
	depart bool
	pods   []*livePod
}

// schedule is the workload's changes in order; at one offset departures come first, as in the
// replay.
func (d *driver) schedule() []event {
	byAt := map[time.Duration]*[2][]*livePod{}
	for _, p := range d.pods {
		for i, at := range []time.Duration{p.spec.Arrive, p.spec.Depart} {
			if i == 1 && at >= d.o.Workload.Length {
				continue
			}
			e := byAt[at]
			if e == nil {
				e = &[2][]*livePod{}
				byAt[at] = e
			}
			e[1-i] = append(e[1-i], p) // [0]: departures, [1]: arrivals
		}
	}
	var out []event
	for at, e := range byAt {
		for i, ps := range e {
			if len(ps) > 0 {
				sort.Slice(ps, func(a, b int) bool { return ps[a].spec.Name < ps[b].spec.Name })
				out = append(out, event{at: at, depart: i == 0, pods: ps})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].at != out[j].at {
			return out[i].at < out[j].at
		}
		return out[i].depart && !out[j].depart
	})
	return out
}

// play creates and deletes the pods at their compressed times until the window's end.
func (d *driver) play(ctx context.Context, t0 time.Time, sched []event) error {
	for _, e := range sched {
		due := t0.Add(scale(e.at, d.o.Factor))
		if err := sleepUntil(ctx, due); err != nil {
			return err
		}
		d.lag = max(d.lag, time.Since(due))
		if err := d.run(ctx, e); err != nil {
			return err
		}
	}
	return sleepUntil(ctx, d.end)
}

// run creates or deletes the event's pods, several at once.
func (d *driver) run(ctx context.Context, e event) error {
	var wg sync.WaitGroup
	errs := make([]error, len(e.pods))
	sem := make(chan struct{}, 16)
	for i, p := range e.pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if e.depart {
				errs[i] = d.depart(ctx, p)
			} else {
				errs[i] = d.create(ctx, p, true)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podObject is the pod the driver creates: the replay's, without the Job owner (nothing would
// recreate it) but annotated safe to evict, so that consolidation may move it as the replay's.
func (d *driver) podObject(p *livePod) *corev1.Pod {
	o := replay.PodObject(p.spec, d.o.Policy.ShareGPUs, metav1.Time{})
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels,
		Annotations: map[string]string{api.AnnotationSafeToEvict: "true"}}, Spec: o.Spec}
	zero := int64(0)
	obj.Spec.TerminationGracePeriodSeconds = &zero
	obj.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	return obj
}

// create creates the pod (first: its arrival; otherwise again after an eviction).
func (d *driver) create(ctx context.Context, p *livePod, first bool) error {
	start := time.Now()
	d.mu.Lock()
	if first {
		p.created, p.arrived = start, true
	}
	d.mu.Unlock()
	got, err := d.kube.CoreV1().Pods(replay.Namespace).Create(ctx, d.podObject(p), metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("creating pod %s: %w", p.spec.Name, err)
	}
	d.mu.Lock()
	p.uid = string(got.UID)
	p.recreating = false
	p.createLatencies = append(p.createLatencies, time.Since(start))
	late := !first && p.departed // it departed while being created again
	d.mu.Unlock()
	if late {
		zero := int64(0)
		if err := d.kube.CoreV1().Pods(replay.Namespace).Delete(ctx, p.spec.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil &&
			!apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("deleting pod %s: %w", p.spec.Name, err)
		}
	}
	return nil
}

// depart deletes the pod at its departure.
func (d *driver) depart(ctx context.Context, p *livePod) error {
	d.mu.Lock()
	p.departed, p.departedAt = true, time.Now()
	d.mu.Unlock()
	zero := int64(0)
	err := d.kube.CoreV1().Pods(replay.Namespace).Delete(ctx, p.spec.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		return fmt.Errorf("deleting pod %s: %w", p.spec.Name, err)
	}
	return nil
}

// seen records the first binding of a pod.
func (d *driver) seen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.pods[pod.Name]; p != nil && p.boundAt.IsZero() && p.arrived {
		p.boundAt = now
	}
}

// deleted queues for creation again a pod that went before its departure (evicted by a
// disruption), as its controller would recreate it.
func (d *driver) deleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.pods[pod.Name]
	if p == nil || p.departed || p.recreating || p.uid != string(pod.UID) || !time.Now().Before(d.end) {
		return
	}
	p.evictions++
	p.recreating = true
	d.again <- p.spec.Name
}

// recreate creates the evicted pods again.
func (d *driver) recreate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-d.again:
			d.mu.Lock()
			p := d.pods[name]
			gone := p.departed
			d.mu.Unlock()
			if !gone {
				if err := d.create(ctx, p, false); err != nil {
					d.o.Progress("recreating evicted pod %s: %v", name, err)
				}
			}
		}
	}
}

// result measures the pods: pending times, bindings, evictions, and the driver's own latency.
func (d *driver) result() *LiveResult {
	f := d.o.Factor
	d.mu.Lock()
	defer d.mu.Unlock()
	res := &LiveResult{MaxLag: time.Duration(float64(d.lag) * f)}
	var pending, creates []time.Duration
	for _, p := range d.pods {
		if !p.arrived {
			continue
		}
		res.Pods++
		res.Evictions += p.evictions
		creates = append(creates, p.createLatencies...)
		left := d.end
		if p.departed && p.departedAt.Before(left) {
			left = p.departedAt
		}
		wait := left.Sub(p.created)
		if p.boundAt.IsZero() || !p.boundAt.Before(left) {
			res.NeverBound++
		} else {
			res.Bound++
			wait = p.boundAt.Sub(p.created)
		}
		if !p.spec.Carried {
			w := time.Duration(float64(wait) * f)
			pending = append(pending, w)
			res.Waits = append(res.Waits, PodWait{Pod: p.spec.Name, Wait: w, Bound: !p.boundAt.IsZero() && p.boundAt.Before(left),
				Arrive: p.spec.Arrive, GPUs: p.spec.GPUs()})
		}
	}
	sortDurations(pending)
	sortDurations(creates)
	sort.Slice(res.Waits, func(i, j int) bool { return res.Waits[i].Wait > res.Waits[j].Wait })
	res.PendingP50, res.PendingP95 = quantile(pending, 0.5), quantile(pending, 0.95)
	if len(pending) > 0 {
		res.PendingMax = pending[len(pending)-1]
	}
	res.CreateLatencyP50 = time.Duration(float64(quantile(creates, 0.5)) * f)
	return res
}

// bill integrates the instances' prices over their lives in the window, from the event log.
func bill(res *LiveResult, events []sim.Event, cat *catalog.Catalog, cluster string, end time.Time, f float64) {
	deleted := map[string]time.Time{}
	for _, e := range events {
		if e.Cluster == cluster && e.Kind == sim.EventDeleted && !e.Time.After(end) {
			deleted[e.InstanceID] = e.Time
			res.NodesRemoved++
		}
	}
	for _, e := range events {
		if e.Cluster != cluster || e.Kind != sim.EventLaunched || e.Time.After(end) {
			continue
		}
		res.NodesLaunched++
		stop := end
		if t, ok := deleted[e.InstanceID]; ok {
			stop = t
		}
		h := stop.Sub(e.Time).Hours() * f
		price, _ := cat.Price(e.Offering)
		res.Cost += price * h
		if it, ok := cat.Type(e.Offering.InstanceType); ok {
			res.GPUHoursBought += float64(it.GPU.Count) * h
		}
	}
}

// judged reports whether kube-scheduler has tried the pod (it has a PodScheduled condition).
func judged(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return true
		}
	}
	return false
}

// sleepUntil waits until the wall time t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// waitFor polls cond every 20 ms until it holds, failing after timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out after %s", what, timeout)
		}
		if err := sleepUntil(ctx, time.Now().Add(20*time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}

func sortDurations(ds []time.Duration) { sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] }) }

// quantile is the nearest-rank quantile of sorted durations (0 when empty), as the replay's.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
