package provisioner_test

import (
	"context"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestE2ECloudTrouble puts the simulated cloud in trouble for sustained windows (real time: the
// controller and the cloud run on the real clock against a real control plane, so the windows
// are kept to seconds) and checks the controller through them: batches go on while launch calls
// hang, failed launches back off, nothing is bought twice or leaked, and every goroutine the
// controller started ends with its context.
func TestE2ECloudTrouble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp := cptest.Start(t, controlplane.Options{})
	t.Run("BatchesGoOnWhileLaunchesHang", func(t *testing.T) { testBatchesGoOnWhileLaunchesHang(t, cp) })
	t.Run("ThrottledWindowBacksOff", func(t *testing.T) { testThrottledWindowBacksOff(t, cp) })
	t.Run("BatchesGoOnWhileRemovalsHang", func(t *testing.T) { testBatchesGoOnWhileRemovalsHang(t, cp) })
}

// troubleConfig is testConfig with launch retries of 1 s doubling to 4 s and a registration
// timeout well beyond the windows.
func troubleConfig() provisioner.Config {
	cfg := testConfig()
	cfg.LaunchRetry, cfg.LaunchRetryMax = time.Second, 4*time.Second
	cfg.RegistrationTimeout = 2 * time.Minute
	return cfg
}

// testBatchesGoOnWhileLaunchesHang: for a window every Create call hangs for 15 s. Pod a's batch
// launches and its call hangs; pod b, created after, needs another node: its batch must plan and
// launch it while a's call still hangs (before, the batch loop waited for a's call). The
// controller is then stopped while both calls hang: every goroutine it started ends (the hung
// calls return with the context), and a new controller on a cloud out of trouble finishes both
// launches once: both pods bound, two launches, instances = records = managed Nodes.
func testBatchesGoOnWhileLaunchesHang(t *testing.T, cp *controlplane.ControlPlane) {
	const hang = 15 * time.Second
	before := controllerGoroutines()
	e := newEnv(t, cp, troubleConfig(), nil)
	a := simtest.Pod("hang-a").Label("app", "hang").AntiAffinity(corev1.LabelHostname, "hang").CPU("2").Mem("4Gi").Obj()
	b := simtest.Pod("hang-b").Label("app", "hang").AntiAffinity(corev1.LabelHostname, "hang").CPU("2").Mem("4Gi").Obj()
	t.Cleanup(func() { e.cleanup([]*corev1.Pod{a, b}) })
	testwait.Until(t, testwait.Slow, "the controller's first batch", 30*time.Second, func() bool { return e.batches.count() > 0 })
	if err := e.cloud.InjectTrouble(sim.Trouble{Until: time.Now().Add(time.Minute), Calls: []string{sim.CallCreate}, Latency: hang}); err != nil {
		t.Fatal(err)
	}
	e.create(a)
	launchedA := e.waitBatch("the batch launching a", 30*time.Second, func(b batch) bool { return launchesPod(b, "default/hang-a") })
	e.create(b)
	createdB := time.Now()
	launchedB := e.waitBatch("the batch launching b", 2*hang, func(b batch) bool { return launchesPod(b, "default/hang-b") })
	latency := launchedB.at.Sub(createdB)
	t.Logf("b created %s after a's batch; b's batch ended %s after b was created (a's call hangs %s)", createdB.Sub(launchedA.at), latency, hang)
	var calls []sim.TroubleCall
	testwait.Until(t, testwait.Slow, "a's and b's Create calls", 2*hang, func() bool {
		calls = e.cloud.TroubleCalls()
		return len(calls) >= 2
	})
	if gap := calls[1].At.Sub(calls[0].At); gap >= hang {
		t.Errorf("b's Create came %s after a's, which hangs %s: the batch loop waited for a's call", gap, hang)
	} else {
		t.Logf("b's Create came %s after a's, while a's still hung", gap)
	}
	if latency >= hang/2 {
		t.Errorf("b's batch ended %s after b was created, want well under a's hang of %s: the batch loop is blocked", latency, hang)
	}
	// Stop while both calls hang: everything the controller started must end with its context.
	e.stopAndWait()
	checkNoLeftGoroutines(t, before)
	e.start() // a new controller, and a new cloud client without the trouble
	e.waitBound(time.Minute, a, b)
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2", got)
	}
	e.noLeak()
}

// testBatchesGoOnWhileRemovalsHang: every Delete call hangs for 15 s. Pod x's node turns empty
// and its removal starts (its Delete hangs); pod y, created then, needs a node of its own: its
// batch must launch it while the Delete hangs. Once the Delete returns, x's node is gone, y is
// bound, two launches, instances = records = managed Nodes; stopping the controller leaves no
// goroutine of it.
func testBatchesGoOnWhileRemovalsHang(t *testing.T, cp *controlplane.ControlPlane) {
	const hang = 15 * time.Second
	cfg := troubleConfig()
	// Short, but not so short that y's new node, empty until y binds, is removed as empty first
	// (a 2 s TTL did that once under load, and y's node was bought again).
	cfg.EmptyNodeTTL = 5 * time.Second
	before := controllerGoroutines()
	e := newEnv(t, cp, cfg, nil)
	x := simtest.Pod("rmhang-x").Label("app", "rmhang").AntiAffinity(corev1.LabelHostname, "rmhang").CPU("2").Mem("4Gi").Obj()
	y := simtest.Pod("rmhang-y").Label("app", "rmhang").AntiAffinity(corev1.LabelHostname, "rmhang").CPU("2").Mem("4Gi").Obj()
	t.Cleanup(func() { e.cleanup([]*corev1.Pod{x, y}) })
	e.create(x)
	e.waitBound(time.Minute, x)
	if err := e.cloud.InjectTrouble(sim.Trouble{Until: time.Now().Add(time.Minute), Calls: []string{sim.CallDelete}, Latency: hang}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := e.kube.CoreV1().Pods(x.Namespace).Delete(context.Background(), x.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the empty node's Delete call", time.Minute, func() bool { return len(e.cloud.TroubleCalls()) > 0 })
	deleting := e.cloud.TroubleCalls()[0].At
	e.create(y)
	createdY := time.Now()
	launchedY := e.waitBatch("the batch launching y", 2*hang, func(b batch) bool { return launchesPod(b, "default/rmhang-y") })
	latency := launchedY.at.Sub(createdY)
	t.Logf("y created %s after the Delete started; y's batch ended %s after y was created (the Delete hangs %s)",
		createdY.Sub(deleting).Round(time.Millisecond), latency.Round(time.Millisecond), hang)
	if latency >= hang/2 {
		t.Errorf("y's batch ended %s after y was created, want well under the Delete's hang of %s: the batch loop is blocked", latency, hang)
	}
	e.waitBound(time.Minute, y)
	testwait.Until(t, testwait.Slow, "x's node removed", 2*hang, func() bool { return len(e.managedNodes()) == 1 })
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2", got)
	}
	e.noLeak()
	e.stopAndWait()
	checkNoLeftGoroutines(t, before)
}

// testThrottledWindowBacksOff: for 20 s every cloud call is throttled (RequestLimitExceeded);
// one failing Create in six launched the instance before failing (a lost answer). Three pods
// that each need their own node are created in the window. Each launch is retried with the same
// launch ID, the waits between its calls doubling from 1 s to 4 s: a bounded number of calls, no
// hot loop. Once the window ends, every pod is bound, each launch ID was bought once, and
// instances = records = managed Nodes.
func testThrottledWindowBacksOff(t *testing.T, cp *controlplane.ControlPlane) {
	const window = 20 * time.Second
	cfg := troubleConfig()
	before := controllerGoroutines()
	e := newEnv(t, cp, cfg, nil)
	testwait.Until(t, testwait.Slow, "the controller's first batch", 30*time.Second, func() bool { return e.batches.count() > 0 })
	until := time.Now().Add(window)
	if err := e.cloud.InjectTrouble(sim.Trouble{Until: until, FailShare: 1, AfterLaunchShare: 1.0 / 6,
		Code: sim.CodeThrottled, Message: "Request limit exceeded."}); err != nil {
		t.Fatal(err)
	}
	batchesBefore := e.batches.count()
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, simtest.Pod(named("storm", i)).Label("app", "storm").AntiAffinity(corev1.LabelHostname, "storm").CPU("2").Mem("4Gi").Obj())
	}
	t.Cleanup(func() { e.cleanup(pods) })
	e.create(pods...)
	e.waitBound(window+time.Minute, pods...)
	recovered := time.Since(until)
	batchesInWindow := 0
	for _, b := range e.batches.since(batchesBefore) {
		if b.at.Before(until) {
			batchesInWindow++
		}
	}
	calls := e.cloud.TroubleCalls()
	byLaunch := map[string][]time.Time{}
	kinds := map[string]int{}
	for _, c := range calls {
		kinds[c.Call]++
		if c.Call == sim.CallCreate {
			byLaunch[c.LaunchID] = append(byLaunch[c.LaunchID], c.At)
		}
	}
	t.Logf("window %s: %d cloud calls %v, %d batches; every pod bound %s after the window ended", window, len(calls), kinds, batchesInWindow, recovered)
	// The most calls a launch can make in the window: its first, then one after each wait
	// (1, 2, 4, 4, ... s) that ends in the window.
	most := 1
	for waited, attempts := time.Duration(0), 1; ; attempts++ {
		waited += retryDelay(cfg, attempts)
		if waited > window {
			break
		}
		most++
	}
	if len(byLaunch) != 3 {
		t.Errorf("Creates for %d launch IDs in the window, want 3", len(byLaunch))
	}
	for id, at := range byLaunch {
		var gaps []string
		for i := 1; i < len(at); i++ {
			gap, want := at[i].Sub(at[i-1]), retryDelay(cfg, i)
			gaps = append(gaps, gap.Round(10*time.Millisecond).String())
			if gap < want {
				t.Errorf("launch %s: call %d came %s after the one before, want at least %s (back-off)", id, i+1, gap, want)
			}
		}
		t.Logf("launch %s: %d Creates in the window, spaced %s", id, len(at), strings.Join(gaps, ", "))
		if len(at) > most {
			t.Errorf("launch %s: %d Creates in the window, want at most %d", id, len(at), most)
		}
	}
	if n := kinds[sim.CallList] + kinds[sim.CallDelete]; n > 0 {
		t.Errorf("%d List and Delete calls in the window, want none (nothing to remove)", n)
	}
	recs := launchRecords(t, e)
	if got := e.launches(); got != len(recs) || got != 3 {
		t.Errorf("%d launches for %d launch records, want 3 and 3: a launch was bought twice", got, len(recs))
	}
	e.noLeak()
	e.stopAndWait()
	checkNoLeftGoroutines(t, before)
}

// retryDelay mirrors the controller's back-off: LaunchRetry doubled per earlier failure, at most
// LaunchRetryMax.
func retryDelay(cfg provisioner.Config, attempts int) time.Duration {
	d := cfg.LaunchRetry
	for i := 1; i < attempts && d < cfg.LaunchRetryMax; i++ {
		d *= 2
	}
	return min(d, cfg.LaunchRetryMax)
}

// launchesPod reports whether the batch decided a launch for the pod (namespace/name).
func launchesPod(b batch, key string) bool {
	if b.res == nil || b.res.Decision == nil {
		return false
	}
	for _, r := range b.res.Decision.Launch {
		if slices.Contains(r.Pods, key) {
			return true
		}
	}
	return false
}

// noLeak waits until the cloud's instances, the launch records (each with its instance) and
// the managed Nodes are the same set of nodes.
func (e *env) noLeak() {
	e.t.Helper()
	var insts, recs, nodes []string
	testwait.Until(e.t, testwait.Slow, "instances = launch records = managed Nodes", 30*time.Second, func() bool {
		all, err := e.cloud.List(context.Background())
		if err != nil {
			return false
		}
		insts, recs, nodes = nil, nil, nil
		for _, i := range all {
			insts = append(insts, i.ID)
		}
		rs, err := provisioner.ListRecords(context.Background(), e.dyn, e.cfg.Namespace)
		if err != nil {
			return false
		}
		for _, r := range rs {
			recs = append(recs, r.InstanceID)
		}
		for _, n := range e.managedNodes() {
			id := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]
			nodes = append(nodes, id)
		}
		return sameSet(insts, recs) && sameSet(insts, nodes)
	})
}

// controllerGoroutines returns the stacks of the goroutines that run Tiler's code (its non-test,
// non-internal packages) or were started by it, and of client-go's informers and event
// broadcasters, by goroutine ID.
func controllerGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		f := strings.Fields(header) // goroutine <id> [<state>]:
		if len(f) < 2 || !controllerStack(g) {
			continue
		}
		out[f[1]] = g
	}
	return out
}

// controllerStack reports whether a goroutine's stack has a frame (or its creator) in Tiler's
// product packages, client-go's informer machinery or apimachinery's watch broadcaster.
func controllerStack(stack string) bool {
	for _, l := range strings.Split(stack, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "created by ")
		switch {
		case strings.HasPrefix(l, "github.com/tiler-dev/tiler/internal/"), strings.Contains(l, "_test."):
		case strings.HasPrefix(l, "github.com/tiler-dev/tiler/"),
			strings.HasPrefix(l, "k8s.io/client-go/tools/cache."),
			strings.HasPrefix(l, "k8s.io/client-go/tools/record."),
			strings.HasPrefix(l, "k8s.io/apimachinery/pkg/watch."):
			return true
		}
	}
	return false
}

// checkNoLeftGoroutines waits until no goroutine of controllerGoroutines is left but those of
// before, and fails with their stacks otherwise.
func checkNoLeftGoroutines(t *testing.T, before map[string]string) {
	t.Helper()
	var left []string
	err := testwait.Poll(testwait.Slow, 20*time.Second, func() bool {
		left = left[:0]
		for id, g := range controllerGoroutines() {
			if _, ok := before[id]; !ok {
				left = append(left, g)
			}
		}
		return len(left) == 0
	})
	if err != nil {
		sort.Strings(left)
		t.Errorf("%d goroutines the stopped controller started are left:\n%s", len(left), strings.Join(left, "\n\n"))
		return
	}
	t.Logf("no goroutine of the stopped controller left (%d from before)", len(before))
}
