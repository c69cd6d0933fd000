package provisioner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
)

// env is a real control plane, the simulated cloud playing kubelet and device plugin, and a
// controller, all on loopback.
type env struct {
	t       testing.TB
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	dyn     dynamic.Interface // the launch records, as the admin
	cat     *catalog.Catalog
	simCfg  sim.Config
	cloud   *sim.Provider
	ctrl    *provisioner.Controller
	metrics *provisioner.Metrics
	// reg is the registry of metrics (the current controller's).
	reg    *prometheus.Registry
	cancel context.CancelFunc
	// runDone is closed when the current controller's Run has returned.
	runDone chan struct{}
	cfg     provisioner.Config
	started time.Time
	// setup, when set, adds to the options of each controller (e.g. its pre-scaler).
	setup func(*provisioner.Options)
	// batches are the batches the env's controllers ran.
	batches *batchLog
}

// batchLog records the batches a controller runs (Options.OnBatch), so that tests wait on what
// the controller observed and decided rather than on the clock.
type batchLog struct {
	mu   sync.Mutex
	seen []batch
}

// batch is one batch as the controller saw it and what it decided and did.
type batch struct {
	state provisioner.State
	res   *provisioner.Result
	// at is when the batch ended (OnBatch ran).
	at time.Time
}

func (l *batchLog) observe(s provisioner.State, r *provisioner.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, batch{state: s, res: r, at: time.Now()})
}

// count is the number of batches seen so far.
func (l *batchLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// since returns the batches from the n-th on.
func (l *batchLog) since(n int) []batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]batch(nil), l.seen[min(n, len(l.seen)):]...)
}

// waitBatch waits until a batch that ends after the call satisfies ok, and returns it.
func (e *env) waitBatch(what string, timeout time.Duration, ok func(batch) bool) batch {
	e.t.Helper()
	from := e.batches.count()
	var found batch
	testwait.Until(e.t, testwait.Slow, what, timeout, func() bool {
		for _, b := range e.batches.since(from) {
			if ok(b) {
				found = b
				return true
			}
		}
		return false
	})
	return found
}

// boundPods counts the batch's pods in the namespace, matching the label selector (k=v), that
// are bound.
func (b batch) boundPods(namespace, selector string) int {
	k, v, _ := strings.Cut(selector, "=")
	n := 0
	for _, p := range b.state.Pods {
		if p.Namespace == namespace && p.Labels[k] == v && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// hasPod reports whether the batch's pods include namespace/name.
func (b batch) hasPod(key string) bool {
	for _, p := range b.state.Pods {
		if p.Namespace+"/"+p.Name == key {
			return true
		}
	}
	return false
}

func testConfig() provisioner.Config {
	cfg := provisioner.DefaultConfig()
	cfg.ClusterName = "e2e"
	cfg.BatchIdle = 300 * time.Millisecond
	cfg.BatchMax = 2 * time.Second
	cfg.ResyncPeriod = 500 * time.Millisecond
	cfg.RegistrationTimeout = 30 * time.Second
	cfg.EmptyNodeTTL = time.Hour
	// Consolidation is off but in the disruption scenarios (e2e_disruption_test.go).
	cfg.DisruptionInterval = 0
	return cfg
}

func newEnv(t testing.TB, cp *controlplane.ControlPlane, cfg provisioner.Config, tweak func(*sim.Config)) *env {
	t.Helper()
	return newEnvSetup(t, cp, cfg, tweak, nil)
}

// newEnvSetup is newEnv with setup adding to the options of the controller.
func newEnvSetup(t testing.TB, cp *controlplane.ControlPlane, cfg provisioner.Config, tweak func(*sim.Config), setup func(*provisioner.Options)) *env {
	t.Helper()
	kubeCfg := provisioner.ProtobufConfig(cp.RESTConfig())
	kubeCfg.UserAgent = "tiler-controller"
	kube := kubernetes.NewForConfigOrDie(kubeCfg)
	dyn := installCRDs(t, cp)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	simCfg := sim.DefaultConfig(cat, cfg.ClusterName, filepath.Join(t.TempDir(), "cloud.json"))
	simCfg.BootDelay = time.Second
	simCfg.DeviceDelay = time.Second
	simCfg.StepInterval = 200 * time.Millisecond
	if tweak != nil {
		tweak(&simCfg)
	}
	e := &env{t: t, cp: cp, kube: kube, dyn: dyn, cat: cat, simCfg: simCfg, cfg: cfg, setup: setup, batches: &batchLog{}}
	// A scenario that fails stops before its own cleanup: clean up after it here, so that its
	// instances, records and policies do not fail the next scenario on the shared control plane.
	t.Cleanup(func() {
		if t.Failed() {
			e.cleanup(nil)
		}
	})
	e.start()
	return e
}

// start (re)creates the cloud client and the controller, as a process restart would.
func (e *env) start() {
	e.t.Helper()
	// The simulated cloud plays the kubelets with a client of its own, as kubelets have their
	// own rate limits: sharing the controller's would make the controller wait on the cloud. It
	// has no client-side rate limit: it plays every node's kubelet, and each kubelet has a limit
	// of its own (50 QPS); one limit for them all (200 QPS) had 146 nodes registering one after
	// another for 14 s in a 1,000-pod burst.
	kubeletCfg := provisioner.ProtobufConfig(e.cp.RESTConfig())
	kubeletCfg.QPS = -1
	kubeletCfg.UserAgent = "sim-kubelets"
	cloud, err := sim.New(e.simCfg, kubernetes.NewForConfigOrDie(kubeletCfg), clock.RealClock{})
	if err != nil {
		e.t.Fatal(err)
	}
	ctrl := e.newController(cloud, cloud.Interruptions())
	ctx, cancel := context.WithCancel(context.Background())
	e.cloud, e.ctrl, e.cancel = cloud, ctrl, cancel
	done := make(chan struct{})
	go func() { _ = cloud.Run(ctx) }()
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	e.runDone = done
	e.t.Cleanup(cancel)
	e.started = time.Now()
}

func (e *env) stop() { e.cancel() }

// stopAndWait stops the controller and waits until its Run has returned, as a killed process
// is gone before a new one starts.
func (e *env) stopAndWait() {
	e.t.Helper()
	e.cancel()
	select {
	case <-e.runDone:
	case <-time.After(30 * time.Second):
		e.t.Fatal("the stopped controller's Run did not return")
	}
}

// launches counts launch events in the cloud's append-only log.
func (e *env) launches() int {
	events, err := sim.ReadEvents(e.cloud.EventLogPath())
	if err != nil {
		e.t.Fatal(err)
	}
	return sim.CountEvents(events, sim.EventLaunched)
}

func (e *env) create(pods ...*corev1.Pod) {
	e.t.Helper()
	for _, p := range pods {
		p = p.DeepCopy()
		p.Status = corev1.PodStatus{}
		if p.Spec.SchedulerName == "" {
			p.Spec.SchedulerName = corev1.DefaultSchedulerName
		}
		if _, err := e.kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// waitBound waits until every listed pod is bound by the real scheduler and returns pod → node.
func (e *env) waitBound(timeout time.Duration, pods ...*corev1.Pod) map[string]string {
	e.t.Helper()
	var bound map[string]string
	err := testwait.Poll(testwait.Slow, timeout, func() bool {
		bound = map[string]string{}
		for _, p := range pods {
			got, err := e.kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err == nil && got.Spec.NodeName != "" {
				bound[p.Namespace+"/"+p.Name] = got.Spec.NodeName
			}
		}
		return len(bound) == len(pods)
	})
	if err != nil {
		e.t.Fatalf("%d of %d pods bound after %s: %v", len(bound), len(pods), timeout, bound)
	}
	return bound
}

func (e *env) managedNodes() []corev1.Node {
	nodes, err := e.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "tiler.dev/pool"})
	if err != nil {
		e.t.Fatal(err)
	}
	return nodes.Items
}

func named(prefix string, i int) string { return fmt.Sprintf("%s-%d", prefix, i) }

// newController builds a controller over cloud and its interruptions (nil: none), with the env's
// setup.
func (e *env) newController(cloud cloudprovider.Provider, interruptions cloudprovider.InterruptionSource) *provisioner.Controller {
	e.t.Helper()
	e.reg = prometheus.NewRegistry()
	e.metrics = provisioner.NewMetrics(e.reg)
	// Events through a clientset of their own, as tiler run writes them.
	events := kubernetes.NewForConfigOrDie(provisioner.ProtobufConfig(e.cp.RESTConfig()))
	opts := provisioner.Options{Config: e.cfg, Kube: e.kube, Events: events, Dynamic: e.dyn, Provider: cloud, Catalog: e.cat, Clock: clock.RealClock{},
		Logger: zaptest.NewLogger(e.t), Metrics: e.metrics, Interruptions: interruptions, OnBatch: e.batches.observe}
	if e.setup != nil {
		e.setup(&opts)
	}
	ctrl, err := provisioner.New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return ctrl
}

// waitLaunches waits until the cloud logged n launches.
func (e *env) waitLaunches(n int, timeout time.Duration) {
	e.t.Helper()
	if err := testwait.Poll(testwait.Slow, timeout, func() bool { return e.launches() >= n }); err != nil {
		e.t.Fatalf("%d launches after %s, want %d", e.launches(), timeout, n)
	}
}

// waitNode waits until some node satisfies ok.
func (e *env) waitNode(ok func(*corev1.Node) bool, timeout time.Duration) {
	e.t.Helper()
	testwait.Until(e.t, testwait.Slow, "a node in the awaited state", timeout, func() bool {
		nodes, _ := e.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		for i := range nodes.Items {
			if ok(&nodes.Items[i]) {
				return true
			}
		}
		return false
	})
}

func clockReal() clock.Clock { return clock.RealClock{} }

type simulatorType = api.InstanceTypeName

func catalogDefault() (*catalog.Catalog, error) { return catalog.Embedded("aws-us-east-1") }

// explainPurchases logs, for every batch that launched, what it saw and bought: the pending pods
// with their tolerations and nomination, the Nodes with their readiness and taints, the launch
// records counted in flight, and the pods each new node was for. Tests call it when more nodes
// were bought than a plan needed, so that a failure says why.
func (e *env) explainPurchases() {
	e.t.Helper()
	for i, b := range e.batches.since(0) {
		if b.res == nil || b.res.Decision == nil || len(b.res.Decision.Launch) == 0 {
			continue
		}
		e.t.Logf("batch %d (%s) launched %d nodes; %d launch records before it", i, b.res.Decision.Batch, len(b.res.Decision.Launch), len(b.state.Records))
		for _, r := range b.res.Decision.Launch {
			e.t.Logf("  new %s %s %s for %v", r.NodeName, r.InstanceType, r.Zone, r.Pods)
		}
		for _, r := range b.state.Records {
			e.t.Logf("  record %s (%s %s) for %v", r.NodeName, r.InstanceType, r.Zone, r.Pods)
		}
		for _, n := range b.state.Nodes {
			e.t.Logf("  node %s ready=%v unschedulable=%v taints=%v", n.Name, snapshot.IsNodeReady(n), n.Spec.Unschedulable, n.Spec.Taints)
		}
		for _, p := range b.state.Pods {
			if p.Spec.NodeName == "" {
				e.t.Logf("  pending %s/%s nominated=%q tolerations=%v", p.Namespace, p.Name, p.Status.NominatedNodeName, p.Spec.Tolerations)
			}
		}
		if b.res.Plan != nil {
			for _, n := range b.res.Plan.ExistingNodes {
				e.t.Logf("  plan puts on existing %s: %v", n.Name, n.Pods)
			}
		}
	}
}
