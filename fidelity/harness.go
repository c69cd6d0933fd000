package fidelity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/deploy/crds"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/provisioner"
)

// Timing are the harness's delays and timeouts. Zero fields take the defaults of DefaultTiming.
type Timing struct {
	// StepInterval is how often the simulated cloud steps.
	StepInterval time.Duration
	// DeviceDelay is the simulated time from Ready to advertised GPUs.
	DeviceDelay time.Duration
	// Unschedulable bounds the wait for the scheduler to mark every pending pod Unschedulable.
	Unschedulable time.Duration
	// Register bounds the wait for the launched instances to register their Nodes.
	Register time.Duration
	// Bind is how long, after the gate opens, the planned pods have to be bound.
	Bind time.Duration
	// Settle is how long the harness keeps watching, once the planned pods are bound and the
	// nodes have their devices, for pods the plan had no place for.
	Settle time.Duration
}

// DefaultTiming returns the default delays and timeouts.
func DefaultTiming() Timing {
	return Timing{StepInterval: 100 * time.Millisecond, DeviceDelay: time.Second, Unschedulable: 30 * time.Second,
		Register: 30 * time.Second, Bind: 30 * time.Second, Settle: 3 * time.Second}
}

func (t Timing) withDefaults() Timing {
	d := DefaultTiming()
	for _, f := range []struct{ v, def *time.Duration }{{&t.StepInterval, &d.StepInterval}, {&t.DeviceDelay, &d.DeviceDelay},
		{&t.Unschedulable, &d.Unschedulable}, {&t.Register, &d.Register}, {&t.Bind, &d.Bind}, {&t.Settle, &d.Settle}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return t
}

// ControllerNamespace holds the controller's cost-policy ConfigMap and launch records.
const ControllerNamespace = "tiler-system"

// policyConfigMap names the cost-policy ConfigMap the harness writes.
const policyConfigMap = "fidelity-policy"

// Harness runs scenarios on a real control plane with no other workload: it creates and deletes
// Nodes, so it must be the only user of the cluster's nodes. Runs are sequential.
type Harness struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface // the launch records
	dir    string
	log    *zap.Logger
	timing Timing
	runs   int
	ready  bool
}

// NewHarness returns a harness over the API server that kube talks to. dir receives the simulated
// cloud's state files; log receives the controller's and the cloud's logs (nil: none).
func NewHarness(kube kubernetes.Interface, dyn dynamic.Interface, dir string, log *zap.Logger, timing Timing) *Harness {
	if log == nil {
		log = zap.NewNop()
	}
	return &Harness{kube: kube, dyn: dyn, dir: dir, log: log, timing: timing.withDefaults()}
}

// run is the state of one run of a scenario.
type run struct {
	h        *Harness
	sc       *Scenario
	mode     Mode
	id       string // prefix of existing node names, and the simulated cloud's cluster name
	ns       string
	pending  []*corev1.Pod
	existing map[string]bool // renamed existing node names
	cloud    *sim.Provider
	out      *Outcome
	// pre is the state of a preemption scenario's run (preempt.go), nil for the others.
	pre *preemption
}

// Run runs the scenario once in a mode (nominations and reservations on or off) and returns the outcome. It cleans up
// everything it created before it returns, also on error; when only the cleanup fails, it returns
// the outcome with an error that wraps ErrCleanup.
func (h *Harness) Run(ctx context.Context, sc *Scenario, mode Mode) (out *Outcome, err error) {
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	h.runs++
	r := &run{h: h, sc: sc, mode: mode, id: fmt.Sprintf("f%d-%d", os.Getpid()%1000, h.runs),
		ns: fmt.Sprintf("%s-%d", Namespace, h.runs), existing: map[string]bool{},
		out: &Outcome{Scenario: sc.Name, Mode: mode}}
	runCtx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		if cerr := r.cleanup(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := r.run(runCtx); err != nil {
		return nil, fmt.Errorf("scenario %s (mode %s): %w", sc.Name, mode, err)
	}
	return r.out, nil
}

// setup creates the cluster-wide objects once: the controller's namespace.
func (h *Harness) setup(ctx context.Context) error {
	if h.ready {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ControllerNamespace}}
	if _, err := h.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ControllerNamespace, err)
	}
	if err := crds.Install(ctx, h.dyn, time.Minute); err != nil {
		return err
	}
	h.ready = true
	return nil
}

func (r *run) run(ctx context.Context) error {
	h := r.h
	if r.sc.Preempts() {
		if err := r.planPreemptions(); err != nil {
			return err
		}
	}
	if err := r.createObjects(ctx); err != nil {
		return err
	}
	go r.renewLeases(ctx)
	if r.pre != nil {
		go r.playVictims(ctx)
	}
	preBound, err := r.waitUnschedulable(ctx)
	if err != nil {
		return err
	}
	if r.pre != nil {
		if err := r.waitPreemptions(ctx, preBound); err != nil {
			return err
		}
	}
	cat, err := r.sc.LoadCatalog()
	if err != nil {
		return err
	}
	pol, err := r.sc.ParsedPolicy()
	if err != nil {
		return err
	}
	if err := r.applyPolicy(ctx); err != nil {
		return err
	}
	gate := &readyGate{}
	simCfg := sim.DefaultConfig(cat, r.id, filepath.Join(h.dir, r.id+".json"))
	simCfg.BootDelay = 0
	simCfg.DeviceDelay = h.timing.DeviceDelay
	simCfg.StepInterval = h.timing.StepInterval
	simCfg.Logger = h.log
	if r.cloud, err = sim.New(simCfg, gate.client(h.kube), clock.RealClock{}); err != nil {
		return fmt.Errorf("starting the simulated cloud: %w", err)
	}
	cfg := provisioner.DefaultConfig()
	cfg.ClusterName, cfg.Namespace, cfg.Catalog = r.id, ControllerNamespace, r.sc.Catalog
	cfg.Nominate, cfg.Reserve = r.mode.Nominate(), r.mode.Reserve()
	cfg.RegistrationTimeout, cfg.EmptyNodeTTL = 5*time.Minute, time.Hour
	// Fidelity measures purchases: no consolidation moves the fleet under the measurement.
	cfg.DisruptionInterval = 0
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: h.kube, Dynamic: h.dyn, Provider: r.cloud, Catalog: cat, Clock: clock.RealClock{},
		Logger: h.log.With(zap.String("run", r.id)), Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}
	if err := ctrl.Start(ctx); err != nil {
		return fmt.Errorf("starting the controller's informers: %w", err)
	}
	go func() { _ = r.cloud.Run(ctx) }()
	res, err := ctrl.Reconcile(ctx)
	if err != nil {
		return fmt.Errorf("first Reconcile: %w", err)
	}
	r.out.Plan = res.Plan
	for _, f := range res.Failed {
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("launch of planned node %s (%s) failed", f, plannedType(res.Plan, f)))
	}
	if r.out.Launches, err = r.launches(); err != nil {
		return err
	}
	if err := r.waitRegistered(ctx, res.Launched); err != nil {
		return err
	}
	nominated := map[string]string{}
	if r.mode.Nominate() && res.Plan != nil {
		if nominated, err = r.nominations(ctx, ctrl); err != nil {
			return err
		}
	}
	gate.open.Store(true)
	bound, messages, err := r.waitBound(ctx, res.Launched)
	if err != nil {
		return err
	}
	shapes, err := r.shapes(ctx)
	if err != nil {
		return err
	}
	r.classify(pol, preBound, nominated, bound, messages, shapes)
	return nil
}

// plannedType returns the instance type of a planned new node.
func plannedType(p *api.Plan, node string) string {
	if p != nil {
		for _, n := range p.NewNodes {
			if n.Name == node {
				return string(n.InstanceType)
			}
		}
	}
	return "?"
}

// launches counts the cloud's launches.
func (r *run) launches() (int, error) {
	events, err := sim.ReadEvents(r.cloud.EventLogPath())
	if err != nil {
		return 0, fmt.Errorf("reading the cloud's event log: %w", err)
	}
	return sim.CountEvents(events, sim.EventLaunched), nil
}

// nominations calls Reconcile again, as the controller loop would on the Node events, until the
// controller has nominated every planned pod whose node has registered (at most four times) —
// except those whose nomination would block another pod planned there
// (provisioner.NominationBlocksSpread) — and returns pod → nominated node as the API server has
// it. A launch by these calls is noted.
func (r *run) nominations(ctx context.Context, ctrl *provisioner.Controller) (map[string]string, error) {
	list, err := r.h.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	want := map[string]string{}
	for _, n := range r.out.Plan.NewNodes {
		var together []*corev1.Pod
		for _, key := range n.Pods {
			if p := pods[podName(key)]; p != nil {
				together = append(together, p)
			}
		}
		for _, key := range n.Pods {
			if p := pods[podName(key)]; p == nil || !provisioner.NominationBlocksSpread(p, together) {
				want[podName(key)] = n.Name
			}
		}
	}
	var got map[string]string
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			sleep(ctx, 300*time.Millisecond)
		}
		if _, err := ctrl.Reconcile(ctx); err != nil {
			return nil, fmt.Errorf("nominating Reconcile: %w", err)
		}
		n, err := r.launches()
		if err != nil {
			return nil, err
		}
		if extra := n - r.out.Launches - r.out.Extra; extra > 0 {
			r.out.Extra += extra
			r.out.Notes = append(r.out.Notes, fmt.Sprintf("the nominating Reconcile launched %d more node(s)", extra))
		}
		if got, err = r.podNominations(ctx); err != nil {
			return nil, err
		}
		missing := 0
		for pod, node := range want {
			if got[pod] != node && r.nodeExists(ctx, node) {
				missing++
			}
		}
		if missing == 0 {
			return got, nil
		}
	}
	r.out.Notes = append(r.out.Notes, "not every planned pod was nominated before its node turned Ready")
	return got, nil
}

func (r *run) podNominations(ctx context.Context) (map[string]string, error) {
	pods, err := r.h.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.NominatedNodeName != "" {
			out[p.Name] = p.Status.NominatedNodeName
		}
	}
	return out, nil
}

func (r *run) nodeExists(ctx context.Context, name string) bool {
	_, err := r.h.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	return err == nil
}

// waitRegistered waits until every launched instance has registered its Node.
func (r *run) waitRegistered(ctx context.Context, nodes []string) error {
	return poll(ctx, r.h.timing.Register, func() (bool, error) {
		for _, n := range nodes {
			if !r.nodeExists(ctx, n) {
				return false, nil
			}
		}
		return true, nil
	}, func() error {
		return fmt.Errorf("the launched nodes %v did not all register in %s", nodes, r.h.timing.Register)
	})
}

// stallAfter is how long, once the nodes are up, the harness waits without any new binding before
// it takes the unbound planned pods as stuck: longer than kube-scheduler's maximum pod backoff
// (podMaxBackoffSeconds, 10 s), so a pod that failed many times during the boot is retried first.
const stallAfter = 12 * time.Second

// waitBound waits until the launched nodes are Ready with their devices and the planned pods are
// bound — or, once the nodes are up, no pod has been bound for stallAfter, or Timing.Bind has
// passed — then Timing.Settle more (until stallAfter after the nodes came up when the plan left
// pods without a place that more capacity could help), and returns pod → node of the bound
// pending pods and pod → scheduler message of the others.
func (r *run) waitBound(ctx context.Context, launched []string) (bound, messages map[string]string, err error) {
	// Wait for the pods planned on the nodes that launched and on existing nodes; those planned
	// on a node whose launch failed cannot bind there.
	up := map[string]bool{}
	for _, n := range launched {
		up[n] = true
	}
	planned := map[string]bool{}
	if r.out.Plan != nil {
		for _, n := range r.out.Plan.NewNodes {
			for _, k := range n.Pods {
				planned[podName(k)] = up[n.Name]
			}
		}
		for _, n := range r.out.Plan.ExistingNodes {
			for _, k := range n.Pods {
				planned[podName(k)] = true
			}
		}
	}
	deadline := time.Now().Add(r.h.timing.Bind)
	var upSince, lastChange time.Time
	lastBound := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if bound, messages, err = r.bindings(ctx); err != nil {
			return nil, nil, err
		}
		up := r.nodesUp(ctx, launched)
		if up && upSince.IsZero() {
			upSince = time.Now()
		}
		if len(bound) != lastBound {
			lastBound, lastChange = len(bound), time.Now()
		}
		done := up
		for p, wait := range planned {
			if wait && bound[p] == "" {
				done = false
			}
		}
		// Once the nodes are up, a planned pod still unbound when no pod has been bound for
		// longer than the scheduler's longest backoff is stuck.
		stuck := up && time.Since(upSince) > stallAfter && time.Since(lastChange) > stallAfter
		if done || stuck {
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}
	// Pods the plan had no place for but that more capacity could help may be in the scheduler's
	// backoff when the nodes come up: watch them until stallAfter has passed since then.
	var open []string
	if p := r.out.Plan; p != nil {
		for _, u := range p.Unschedulable {
			if u.Code != api.NeverFits && u.Code != api.InvalidRequest {
				open = append(open, podName(u.Pod))
			}
		}
	}
	settled := time.Now().Add(r.h.timing.Settle)
	end := settled
	if len(open) > 0 && !upSince.IsZero() {
		end = later(settled, upSince.Add(stallAfter))
	}
	for time.Now().Before(end) && ctx.Err() == nil {
		sleep(ctx, 200*time.Millisecond)
		if bound, messages, err = r.bindings(ctx); err != nil {
			return nil, nil, err
		}
		all := true
		for _, p := range open {
			all = all && bound[p] != ""
		}
		if all && time.Now().After(settled) {
			break
		}
	}
	bound, messages, err = r.bindings(ctx)
	return bound, messages, err
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// nodesUp reports whether every launched node is Ready and advertises the devices it was bought
// for.
func (r *run) nodesUp(ctx context.Context, launched []string) bool {
	for _, name := range launched {
		n, err := r.h.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || !snapshot.IsNodeReady(n) {
			return false
		}
		if n.Labels[api.LabelGPUCount] != "" && !hasGPUResources(n) && !r.hasSlices(ctx, name) {
			return false
		}
	}
	return true
}

// hasSlices reports whether a ResourceSlice of the node is published: the GPUs of a node the DRA
// driver serves are its slices, with no nvidia.com resource in the node's allocatable. (Before,
// such a node was never up: the harness waited Timing.Bind for it in every DRA scenario, and
// stallAfter and the watch of pods left without a place never started.)
func (r *run) hasSlices(ctx context.Context, node string) bool {
	slices, err := r.h.kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: resourcev1.ResourceSliceSelectorNodeName + "=" + node, Limit: 1})
	return err == nil && len(slices.Items) > 0
}

func (r *run) bindings(ctx context.Context) (bound, messages map[string]string, err error) {
	pods, err := r.h.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	bound, messages = map[string]string{}, map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			bound[p.Name] = p.Spec.NodeName
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				messages[p.Name] = c.Message
			}
		}
	}
	return bound, messages, nil
}

// classify fills the outcome's pods.
func (r *run) classify(pol *policy.CostPolicy, preBound map[string]string, nominated, bound, messages, shapes map[string]string) {
	planned, types, reasons := map[string]string{}, map[string]string{}, map[string]string{}
	bought := map[string]bool{}
	if p := r.out.Plan; p != nil {
		for _, n := range p.NewNodes {
			bought[n.Name] = true
			for _, k := range n.Pods {
				planned[podName(k)], types[podName(k)] = n.Name, string(n.InstanceType)
			}
		}
		for _, n := range p.ExistingNodes {
			for _, k := range n.Pods {
				planned[podName(k)] = n.Name
			}
		}
		for _, u := range p.Unschedulable {
			reasons[podName(u.Pod)] = string(u.Code) + ": " + u.Reason
		}
	}
	var preempts map[string]string
	if r.pre != nil {
		preempts = r.preemptionOutcome()
	}
	for _, p := range r.pending {
		name := p.Name
		o := PodOutcome{Pod: name, Kinds: Kinds(p, pol), Planned: planned[name], PlannedType: types[name],
			Reason: reasons[name], Nominated: nominated[name], Bound: bound[name], Message: messages[name]}
		_, pre := preBound[name]
		switch {
		case preempts[name] != "":
			// Planned by the simulation of the scenario as created: the scheduler binds it
			// before the controller plans.
			o.Kinds = append(o.Kinds, KindPreemption)
			o.Planned, o.Reason, pre = preempts[name], "", false
		case r.pre != nil && r.pre.isBack(name):
			o.Kinds = append(o.Kinds, KindPreempted)
		}
		sort.Slice(o.Kinds, func(i, j int) bool { return o.Kinds[i] < o.Kinds[j] })
		if pre {
			o.Bound = preBound[name]
		}
		o.BoundNew = o.Bound != "" && !r.existing[o.Bound]
		if !pre && o.Planned == "" && o.Reason == "" {
			o.Reason = "not in the plan"
		}
		o.Verdict = verdict(o.Planned, o.Bound, o.BoundNew, pre)
		o.SameShape = o.Verdict == VerdictMoved && shapes[o.Bound] != "" && shapes[o.Bound] == shapes[o.Planned]
		r.out.Pods = append(r.out.Pods, o)
	}
	sort.Slice(r.out.Pods, func(i, j int) bool { return r.out.Pods[i].Pod < r.out.Pods[j].Pod })
}

// shapes returns node → "instance type/zone" of every node.
func (r *run) shapes(ctx context.Context) (map[string]string, error) {
	nodes, err := r.h.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		out[n.Name] = n.Labels[corev1.LabelInstanceTypeStable] + "/" + n.Labels[corev1.LabelTopologyZone]
	}
	return out, nil
}

// podName strips the namespace of a namespace/name key.
func podName(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

func hasGPUResources(n *corev1.Node) bool {
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), "nvidia.com/") && !q.IsZero() {
			return true
		}
	}
	return false
}

// poll calls cond every 100 ms until it reports done, fails, or timeout passes (then it returns
// timeoutErr()).
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error), timeoutErr func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := cond()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return timeoutErr()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ignoreNotFound returns nil for a NotFound error.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ErrCleanup is wrapped by the error of a run that could not delete everything it created; the
// cluster should not be used for further runs.
var ErrCleanup = errors.New("cleanup incomplete")
