//go:build linux && chaos

package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
)

const (
	clusterName = "chaos"
	tilerNS     = "tiler-system"
	appNS       = "chaos"
	app         = "web"
	// podsPerNode is how many app pods (1500m, 2Gi) an m7i.2xlarge holds.
	podsPerNode = 5
)

// policyDoc is one pool of one instance type, so that the right fleet for n pods is exactly
// nodesFor(n) nodes, consolidated 2s after a node is underused.
const policyDoc = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceTypes: [m7i.2xlarge]
  capacityTypes: [on-demand]
  disruption:
    consolidateAfter: 2s
`

func nodesFor(pods int) int { return (pods + podsPerNode - 1) / podsPerNode }

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// tilerBinary builds cmd/tiler once per test binary: the controller under test is the product
// binary, run as its own process.
func tilerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "tiler-chaos-bin-"); buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "tiler")
		start := time.Now()
		defer func() { t.Logf("go build ./cmd/tiler: %.1fs", time.Since(start).Seconds()) }()
		cmd := exec.Command("go", "build", "-o", binary, "github.com/tiler-dev/tiler/cmd/tiler")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/tiler: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// seed is CHAOS_SEED, or the time when unset; tests log it so that a failure can be replayed.
func seed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED %q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// harness is a control plane, the simulated cloud's state file, informers over what the tests
// judge (managed Nodes, the app's pods, the launch records) and the controller processes.
type harness struct {
	t       *testing.T
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	bin     string
	dir     string
	cloud   *sim.Provider // the test's own client of the cloud: List, LoseCapacity and the event log, never Run
	nodeInf cache.SharedIndexInformer
	podInf  cache.SharedIndexInformer
	recInf  cache.SharedIndexInformer
	stop    chan struct{}
	procs   int
	// capacityLost counts the instances the test had the cloud end for want of capacity.
	capacityLost int
	// image is the image the controllers the harness starts launch nodes from (--sim-image); ""
	// leaves images untracked.
	image string
	rng   *rand.Rand
	seed  uint64

	avail availability

	failMu   sync.Mutex
	failures []string // what errorf and fatalf reported, repeated as the test's last lines
}

// errorf reports a failure and keeps its message, which the harness's last cleanup repeats after
// the control-plane and controller log tails: a CI log that shows only the end still names it.
func (h *harness) errorf(format string, args ...any) {
	h.t.Helper()
	h.note(format, args...)
	h.t.Errorf(format, args...)
}

// fatalf is errorf that stops the test.
func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.note(format, args...)
	h.t.Fatalf(format, args...)
}

// waitFor polls ok (testwait.Fast) until it holds, failing the test (fatalf) after timeout.
func (h *harness) waitFor(what string, timeout time.Duration, ok func() bool) {
	h.t.Helper()
	if err := testwait.Poll(testwait.Fast, timeout, ok); err != nil {
		h.fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func (h *harness) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	// Long enough for describe's view of a small cluster, which a CI log that keeps only its
	// end must show whole.
	if len(msg) > 1500 {
		msg = msg[:1500] + "…"
	}
	h.failMu.Lock()
	defer h.failMu.Unlock()
	h.failures = append(h.failures, msg)
}

func newHarness(t *testing.T, rngSeed uint64) *harness {
	t.Helper()
	bin := tilerBinary(t)
	h := &harness{t: t, bin: bin, seed: rngSeed, rng: rand.New(rand.NewPCG(rngSeed, 19)), stop: make(chan struct{})}
	// Registered first, so it runs last: after the log tails the other cleanups print.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		h.failMu.Lock()
		defer h.failMu.Unlock()
		t.Logf("CHAOS_SEED=%d failed (reproduce: make chaos SEED=%d); failures: %d\n- %s",
			h.seed, h.seed, len(h.failures), strings.Join(h.failures, "\n- "))
	})
	h.cp = cptest.Start(t, controlplane.Options{})
	cp := h.cp
	h.dir, h.kube, h.dyn = t.TempDir(), kubernetes.NewForConfigOrDie(cp.RESTConfig()), dynamic.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()
	if err := crds.Install(ctx, h.dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{tilerNS, appNS} {
		if _, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy", Namespace: tilerNS,
		Labels: map[string]string{"tiler.dev/cost-policy": "true"}}, Data: map[string]string{"policy.yaml": policyDoc}}
	if _, err := h.kube.CoreV1().ConfigMaps(tilerNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if h.cloud, err = sim.New(sim.DefaultConfig(cat, clusterName, h.statePath()), h.kube, clock.RealClock{}); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(h.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {}))
	h.nodeInf = f.Core().V1().Nodes().Informer()
	pf := informers.NewSharedInformerFactoryWithOptions(h.kube, 0, informers.WithNamespace(appNS))
	h.podInf = pf.Core().V1().Pods().Informer()
	h.avail.lister = pf.Core().V1().Pods().Lister()
	if _, err := h.podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { h.avail.observe() }, UpdateFunc: func(any, any) { h.avail.observe() }, DeleteFunc: func(any) { h.avail.observe() },
	}); err != nil {
		t.Fatal(err)
	}
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(h.dyn, 0, tilerNS, nil)
	h.recInf = df.ForResource(provisioner.LaunchRecordsResource).Informer()
	f.Start(h.stop)
	pf.Start(h.stop)
	df.Start(h.stop)
	t.Cleanup(func() { close(h.stop) })
	if !cache.WaitForCacheSync(h.stop, h.nodeInf.HasSynced, h.podInf.HasSynced, h.recInf.HasSynced) {
		t.Fatal("the test's informers did not sync")
	}
	h.deployment()
	return h
}

func (h *harness) statePath() string { return filepath.Join(h.dir, "cloud.json") }

// args are the flags of every controller: the simulated cloud on the harness's state file, with
// nodes Ready a second after launch and pods run by its kubelet loop, short batches and a
// disruption pass every second, and an instance sweep every two seconds. An offering is
// unavailable for 20 s after a capacity loss: the pool's one type has three zones, and the
// purchases that lose capacity come faster than the default three minutes. With h.image, nodes
// boot from it.
func (h *harness) args(extra ...string) []string {
	if h.image != "" {
		extra = append([]string{"--sim-image", h.image}, extra...)
	}
	return append([]string{"run",
		"--kubeconfig", h.cp.Kubeconfig(), "--cloud", "sim", "--sim-state", h.statePath(),
		"--sim-boot-delay", "1s", "--sim-device-delay", "1s", "--sim-step-interval", "200ms", "--sim-run-pods",
		"--metrics-addr", "127.0.0.1:0", "--cluster-name", clusterName, "--namespace", tilerNS, "--catalog", "aws-us-east-1",
		"--batch-idle", "300ms", "--batch-max", "2s", "--resync-period", "500ms", "--registration-timeout", "60s",
		"--empty-node-ttl", "1h", "--disruption-interval", "1s", "--disruption-step-interval", "200ms",
		"--disruption-reschedule-grace", "30s", "--instance-sweep-period", "2s", "--unavailable-ttl", "20s", "--log-level", "info",
	}, extra...)
}

// proc is one controller process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{}
	err     error
	killed  bool
}

// start runs a controller process, its output in a log file of the harness's directory; it is
// killed when the test ends, and dies with the test process (Pdeathsig).
func (h *harness) start(extra ...string) *proc {
	h.t.Helper()
	h.procs++
	p := &proc{name: fmt.Sprintf("tiler-%d", h.procs), logPath: filepath.Join(h.dir, fmt.Sprintf("tiler-%d.log", h.procs)), done: make(chan struct{})}
	f, err := os.Create(p.logPath)
	if err != nil {
		h.t.Fatal(err)
	}
	p.cmd = exec.Command(h.bin, h.args(extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		h.t.Fatalf("starting %s: %v", h.bin, err)
	}
	p.started = time.Now()
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	h.t.Cleanup(func() {
		p.kill()
		if h.t.Failed() {
			h.t.Logf("==> %s (%s) <==\n%s", p.name, p.logPath, tail(p.logPath, 30))
		}
	})
	return p
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.killed = true
	_ = p.cmd.Process.Kill()
	<-p.done
}

// goroutines ends a running process with SIGQUIT, which makes the Go runtime write every
// goroutine's stack to its log, and returns the stacks that run Tiler's code, the binary's main
// package included (at most 150
// lines): what a controller that stopped making progress was waiting on. "" when the process
// had already ended.
func (p *proc) goroutines() string {
	select {
	case <-p.done:
		return ""
	default:
	}
	before, _ := os.Stat(p.logPath)
	p.killed = true
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return ""
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if before != nil && before.Size() <= int64(len(b)) {
		b = b[before.Size():]
	}
	var out []string
	for _, g := range strings.Split(string(b), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && (strings.Contains(g, "github.com/tiler-dev/tiler/") || strings.Contains(g, "\nmain.")) {
			out = append(out, strings.Split(g, "\n")...)
			out = append(out, "")
		}
	}
	if len(out) > 150 {
		out = append(out[:150], fmt.Sprintf("… (the whole dump is in %s)", p.logPath))
	}
	return strings.Join(out, "\n")
}

// exited reports whether the process ended without being killed (a crash or a clean exit).
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return !p.killed
	default:
		return false
	}
}

// logged reports whether the process's log holds text.
// lostLease says ", after losing the leader lease" when the process logged that it lost its
// Lease (it could not renew within the renew deadline: an API server or etcd too slow).
func (p *proc) lostLease() string {
	if p.logged("lost the leader lease") {
		return ", after losing the leader lease"
	}
	return ""
}

// identities are the Lease identities the replica logged (JSON logs: "identity":"…").
func (p *proc) identities() []string {
	b, _ := os.ReadFile(p.logPath)
	var ids []string
	for _, m := range identityRE.FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

var identityRE = regexp.MustCompile(`"identity":"([^"]*)"`)

func (p *proc) logged(text string) bool {
	b, err := os.ReadFile(p.logPath)
	return err == nil && strings.Contains(string(b), text)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// view is what the test sees at one moment: the managed Nodes, the app's pods, the launch
// records and the cloud's event log.
type view struct {
	nodes   []*corev1.Node
	pods    []*corev1.Pod
	records []provisioner.LaunchRecord
	events  []sim.Event
}

func (h *harness) look() view {
	h.t.Helper()
	var v view
	for _, o := range h.nodeInf.GetStore().List() {
		if n := o.(*corev1.Node); n.Labels[api.LabelPool] != "" {
			v.nodes = append(v.nodes, n)
		}
	}
	for _, o := range h.podInf.GetStore().List() {
		v.pods = append(v.pods, o.(*corev1.Pod))
	}
	for _, o := range h.recInf.GetStore().List() {
		r, err := provisioner.RecordFromObject(o.(*unstructured.Unstructured))
		if err != nil {
			h.t.Fatal(err)
		}
		v.records = append(v.records, r)
	}
	var err error
	if v.events, err = sim.ReadEvents(h.cloud.EventLogPath()); err != nil {
		h.t.Fatal(err)
	}
	return v
}

func (v view) count(kind sim.EventKind) int { return sim.CountEvents(v.events, kind) }

// livePods are the app's pods that are not terminating.
func (v view) livePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// settled reports whether the app has exactly n pods, all bound and Ready, on exactly
// nodesFor(n) managed Nodes, none of them cordoned, with one launch record per Node.
func (v view) settled(n int) bool {
	live := v.livePods()
	if len(live) != n || len(v.nodes) != nodesFor(n) || len(v.records) != len(v.nodes) {
		return false
	}
	for _, p := range live {
		if p.Spec.NodeName == "" || !podReady(p) {
			return false
		}
	}
	for _, nd := range v.nodes {
		if nd.Spec.Unschedulable || !snapshot.IsNodeReady(nd) {
			return false
		}
	}
	return true
}

// onImage reports whether every launch record names image, the image its node booted from.
func (v view) onImage(image string) bool {
	for _, r := range v.records {
		if r.Image != image {
			return false
		}
	}
	return true
}

// deployment creates the app: a Deployment of 1500m/2Gi pods (none yet) and its
// PodDisruptionBudget, maxUnavailable 1.
func (h *harness) deployment() {
	h.t.Helper()
	zero, replicas := int64(0), int32(0)
	lbl := map[string]string{"app": app}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: appNS},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &zero,
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}}}}}}
	ctx := context.Background()
	if _, err := h.kube.AppsV1().Deployments(appNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: appNS},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: lbl}}}
	if _, err := h.kube.PolicyV1().PodDisruptionBudgets(appNS).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// spreadKeepers marks n of the app's pods, taken from the nodes in turn, with a high
// controller.kubernetes.io/pod-deletion-cost, so that a scale-down to n keeps them: one or more
// on every node, which consolidation then has to drain.
func (h *harness) spreadKeepers(n int) {
	h.t.Helper()
	byNode := map[string][]*corev1.Pod{}
	var nodes []string
	for _, p := range h.look().livePods() {
		if byNode[p.Spec.NodeName] == nil {
			nodes = append(nodes, p.Spec.NodeName)
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	sort.Strings(nodes)
	for i := 0; n > 0 && len(nodes) > 0; i++ {
		node := nodes[i%len(nodes)]
		if len(byNode[node]) == 0 {
			nodes = append(nodes[:i%len(nodes)], nodes[i%len(nodes)+1:]...)
			continue
		}
		p := byNode[node][0]
		byNode[node] = byNode[node][1:]
		patch := []byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"100"}}}`)
		if _, err := h.kube.CoreV1().Pods(appNS).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			h.t.Fatal(err)
		}
		n--
	}
}

func (h *harness) scale(n int) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := h.kube.AppsV1().Deployments(appNS).Patch(context.Background(), app, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// until waits for ok on the harness's view, failing at once when a controller process of procs
// ended on its own (a crash), with its log.
func (h *harness) until(what string, timeout time.Duration, ok func(view) bool, procs ...*proc) view {
	h.t.Helper()
	return h.untilEvery(testwait.Slow, what, timeout, ok, procs...)
}

// untilEvery is until looking every interval.
func (h *harness) untilEvery(every time.Duration, what string, timeout time.Duration, ok func(view) bool, procs ...*proc) view {
	h.t.Helper()
	var v view
	var crashed *proc
	err := testwait.Poll(every, timeout, func() bool {
		for _, p := range procs {
			if p.exited() {
				crashed = p
				return true
			}
		}
		v = h.look()
		return ok(v)
	})
	if crashed != nil {
		h.fatalf("%s exited (%v%s) while waiting for %s; its log:\n%s", crashed.name, crashed.err, crashed.lostLease(), what, tail(crashed.logPath, 40))
	}
	if err != nil {
		// The processes' last log lines come before the stacks: the failure's note (errorf) keeps
		// only the message's start.
		var last, stacks strings.Builder
		for _, p := range procs {
			fmt.Fprintf(&last, "; %s's last log lines: %s", p.name, strings.ReplaceAll(tail(p.logPath, 2), "\n", " | "))
		}
		for _, p := range procs {
			if g := p.goroutines(); g != "" {
				fmt.Fprintf(&stacks, "\n==> %s: Tiler's goroutines (SIGQUIT) <==\n%s", p.name, g)
			}
		}
		h.fatalf("timed out after %s waiting for %s; %s%s%s", timeout, what, describe(v), last.String(), stacks.String())
	}
	return v
}

// describe summarises a view for failure messages.
func describe(v view) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d live pods (", len(v.livePods()))
	ready := 0
	for _, p := range v.livePods() {
		if podReady(p) {
			ready++
		}
	}
	fmt.Fprintf(&b, "%d Ready, %d terminating), nodes:", ready, len(v.pods)-len(v.livePods()))
	on := map[string]int{}
	for _, p := range v.pods {
		on[p.Spec.NodeName]++
	}
	for _, n := range v.nodes {
		fmt.Fprintf(&b, " %s(ready=%v cordoned=%v pods=%d", n.Name, snapshot.IsNodeReady(n), n.Spec.Unschedulable, on[n.Name])
		if a := n.Annotations[api.AnnotationDisruptionAction]; a != "" {
			fmt.Fprintf(&b, " action=%s step=%s", a, n.Annotations[api.AnnotationDisruptionStep])
		}
		b.WriteString(")")
	}
	b.WriteString("; records:")
	for _, r := range v.records {
		fmt.Fprintf(&b, " %s(instance=%q action=%q)", r.LaunchID, r.InstanceID, r.DisruptionAction)
	}
	fmt.Fprintf(&b, "; cloud log: %d launched, %d deleted", v.count(sim.EventLaunched), v.count(sim.EventDeleted))
	return b.String()
}

// checkInvariants checks, once the cluster has settled, what no fault may break: the cloud's
// instances are exactly the managed Nodes and the launch records (nothing leaked, nothing
// lost), and no launch ID was ever bought twice.
func (h *harness) checkInvariants(what string) {
	h.t.Helper()
	insts, err := h.cloud.List(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	v := h.look()
	var instNodes, nodeNames, recNodes []string
	for _, i := range insts {
		instNodes = append(instNodes, i.NodeName)
	}
	for _, n := range v.nodes {
		nodeNames = append(nodeNames, n.Name)
	}
	for _, r := range v.records {
		recNodes = append(recNodes, r.NodeName)
	}
	sort.Strings(instNodes)
	sort.Strings(nodeNames)
	sort.Strings(recNodes)
	if strings.Join(instNodes, ",") != strings.Join(nodeNames, ",") || strings.Join(recNodes, ",") != strings.Join(nodeNames, ",") {
		h.errorf("%s: instances %v, managed Nodes %v, launch records %v: want the same", what, instNodes, nodeNames, recNodes)
	}
	if dup := boughtTwice(v.events); len(dup) > 0 {
		h.errorf("%s: launch IDs bought more than once: %v", what, dup)
	}
}

// boughtTwice returns the launch IDs the cloud's log has more than one purchase of, with counts.
func boughtTwice(events []sim.Event) map[string]int {
	per := map[string]int{}
	for _, e := range events {
		if e.Kind == sim.EventLaunched {
			per[e.LaunchID]++
		}
	}
	out := map[string]int{}
	for id, n := range per {
		if n > 1 {
			out[id] = n
		}
	}
	return out
}

// availability follows the app's pods through the pod informer and records, while armed, the
// most that were unavailable at once (not Ready, or terminating, or missing) against want: a
// PodDisruptionBudget of maxUnavailable 1 allows one.
type availability struct {
	lister interface {
		List(labels.Selector) ([]*corev1.Pod, error)
	}
	mu         sync.Mutex
	want       int
	armed      bool
	maxMissing int
}

func (a *availability) arm(want int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want, a.armed, a.maxMissing = want, true, 0
	a.observeLocked()
}

// disarm stops recording and returns the most pods unavailable at once since arm.
func (a *availability) disarm() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = false
	return a.maxMissing
}

func (a *availability) observe() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.observeLocked()
}

func (a *availability) observeLocked() {
	if !a.armed || a.lister == nil {
		return
	}
	pods, err := a.lister.List(labels.Everything())
	if err != nil {
		return
	}
	ok := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && podReady(p) {
			ok++
		}
	}
	a.maxMissing = max(a.maxMissing, a.want-ok)
}
