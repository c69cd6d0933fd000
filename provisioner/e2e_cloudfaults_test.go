package provisioner_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// testCloudAPIFailuresRetried: the cloud API throttles the first launch call and loses the answer
// of the second after launching the instance. The record stays through both, so no batch buys
// for the pod again; the third call, with the same launch ID, returns the instance launched by
// the second. One launch, one instance, the pod bound, and its Warning Events name both errors
// and the retry.
func testCloudAPIFailuresRetried(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.LaunchRetry, cfg.LaunchRetryMax = 300*time.Millisecond, time.Second
	e := newEnv(t, cp, cfg, nil)
	e.cloud.InjectAPIFailures(
		sim.APIFailure{Call: sim.CallCreate, Code: sim.CodeThrottled, Message: "request rate exceeded"},
		sim.APIFailure{Call: sim.CallCreate, Code: sim.CodeInternal, Message: "answer lost after the launch", AfterLaunch: true},
	)
	pod := simtest.Pod("apifail-a").Label("app", "apifail").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	bound := e.waitBound(2*time.Minute, pod)
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches, want 1", got)
	}
	insts, err := e.cloud.List(context.Background())
	if err != nil || len(insts) != 1 {
		t.Errorf("%d instances (%v), want 1", len(insts), err)
	}
	rec := launchRecord(t, e.dyn, e.cfg.Namespace, bound["default/apifail-a"])
	if rec.LaunchAttempts != 2 || rec.InstanceID == "" || !strings.Contains(rec.LastError, sim.CodeInternal) {
		t.Errorf("record: %d failed attempts, instance %q, last error %q; want 2, the instance, the %s", rec.LaunchAttempts, rec.InstanceID, rec.LastError, sim.CodeInternal)
	}
	if n := collectorSeries(e.metrics.LaunchFailures); n != 1 {
		t.Errorf("%d launch failure series, want 1 (kind other)", n)
	}
	testwait.Until(t, testwait.Slow, "FailedScaleUp Events naming both errors and the retry", 30*time.Second, func() bool {
		evs, err := e.kube.CoreV1().Events(pod.Namespace).List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=FailedScaleUp"})
		if err != nil {
			return false
		}
		var all string
		for _, ev := range evs.Items {
			if ev.Type == corev1.EventTypeWarning {
				all += ev.Message + "\n"
			}
		}
		return strings.Contains(all, sim.CodeThrottled) && strings.Contains(all, sim.CodeInternal) &&
			strings.Contains(all, "retrying with the same launch ID")
	})
	e.cleanup([]*corev1.Pod{pod})
}

// testLostLaunchAnswerAcrossRestart: the cloud launches the instance but its answer is lost, and
// the controller restarts before the retry (an hour away). The restarted controller finds the
// instance under the record's launch ID and links it: one launch, one instance, the pod bound.
func testLostLaunchAnswerAcrossRestart(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.LaunchRetry, cfg.LaunchRetryMax = time.Hour, time.Hour
	e := newEnv(t, cp, cfg, nil)
	e.cloud.InjectAPIFailures(sim.APIFailure{Call: sim.CallCreate, Code: sim.CodeInternal, Message: "answer lost", AfterLaunch: true})
	pod := simtest.Pod("lost-a").Label("app", "lost").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	var failed provisioner.LaunchRecord
	testwait.Until(t, testwait.Slow, "a launch record with one failed attempt", time.Minute, func() bool {
		recs := launchRecords(t, e)
		if len(recs) == 1 && recs[0].LaunchAttempts == 1 {
			failed = recs[0]
			return true
		}
		return false
	})
	if failed.InstanceID != "" || !failed.RetryAt.After(time.Now().Add(30*time.Minute)) {
		t.Fatalf("record after the lost answer: instance %q, retry at %s; want none and an hour away", failed.InstanceID, failed.RetryAt)
	}
	e.stop()
	e.start() // a new process: new cloud client on the same inventory, new controller
	e.waitBound(2*time.Minute, pod)
	testwait.Until(t, testwait.Slow, "the record linked to the instance", time.Minute, func() bool {
		recs := launchRecords(t, e)
		return len(recs) == 1 && recs[0].InstanceID != ""
	})
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches, want 1", got)
	}
	insts, err := e.cloud.List(context.Background())
	if err != nil || len(insts) != 1 || insts[0].LaunchID != failed.LaunchID {
		t.Errorf("instances %v (%v), want the one of launch %s", insts, err, failed.LaunchID)
	}
	e.cleanup([]*corev1.Pod{pod})
}

// testRetryAnsweredWithEndedInstance: the cloud launches the instance but its answer is lost, and
// before the retry the cloud ends the instance for want of capacity, with no notice. The retry,
// under the same launch ID, is answered with that ended instance (as EC2 answers a client token it
// has seen). The launch is removed at once and its offering marked unavailable, and the pod is
// bought for on another offering within seconds, not at the next instance sweep (10 min here).
// Two launches, one instance running, one record.
func testRetryAnsweredWithEndedInstance(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.LaunchRetry, cfg.LaunchRetryMax = 2*time.Second, 2*time.Second
	cfg.InstanceSweepPeriod, cfg.RegistrationTimeout = 10*time.Minute, 10*time.Minute
	e := newEnv(t, cp, cfg, nil)
	ctx := context.Background()
	e.cloud.InjectAPIFailures(sim.APIFailure{Call: sim.CallCreate, Code: sim.CodeInternal, Message: "answer lost", AfterLaunch: true})
	pod := simtest.Pod("retry-ended-a").Label("app", "retry-ended").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	var first *cloudprovider.Instance
	testwait.Until(t, 50*time.Millisecond, "the instance of the launch whose answer was lost", time.Minute, func() bool {
		recs := launchRecords(t, e)
		insts, err := e.cloud.List(ctx)
		if err == nil && len(recs) == 1 && recs[0].LaunchAttempts == 1 && len(insts) == 1 {
			first = insts[0]
		}
		return first != nil
	})
	if err := e.cloud.LoseCapacity(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	node := e.waitBound(time.Minute, pod)["default/"+pod.Name]
	t.Logf("the pod bound on %s %.1fs after its first instance lost its capacity (retry after %s)", node, time.Since(lost).Seconds(), cfg.LaunchRetry)
	if next := instanceOfNode(t, e, node); next == nil || next.Offering == first.Offering {
		t.Errorf("the successor is %+v, want one on another offering than %s (marked unavailable)", next, first.Offering)
	}
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2 (the lost one and its successor)", got)
	}
	if recs := launchRecords(t, e); len(recs) != 1 || recs[0].InstanceID == first.ID {
		t.Errorf("records %+v, want only the successor's", recs)
	}
	e.waitPodEvent(pod.Name, "FailedScaleUp", "the cloud answers with instance "+first.ID+", terminated", 10*time.Second)
	e.cleanup([]*corev1.Pod{pod})
}

// testRestartAfterInstanceDeleted: a controller killed in the middle of a removal, after the
// cloud deleted the instance and before the launch record was deleted (found by the kill tests of
// internal/chaos). The next controller's Recover found a record whose instance was gone, younger
// than the registration timeout, and relaunched it under the same launch ID: the node was bought a
// second time. It must remove the record (and the Node) instead, and buy nothing.
func testRestartAfterInstanceDeleted(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	pod := simtest.Pod("gone-a").Label("app", "gone").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	e.waitBound(time.Minute, pod)
	rec := emptiedAndStopped(t, e, pod)
	// What the killed removal did: the instance deleted (the simulated cloud deletes its Node too),
	// the record left behind.
	if err := e.cloud.Delete(context.Background(), rec.InstanceID); err != nil {
		t.Fatal(err)
	}
	e.start()
	testwait.Until(t, testwait.Slow, "the record of the deleted instance to be removed", 30*time.Second, func() bool {
		return len(launchRecords(t, e)) == 0
	})
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches, want 1: the launch of a deleted instance was bought again", got)
	}
	e.instancesMatchNodes()
}

// testRestartDuringInstanceDeletion: a controller killed in the middle of a removal, after the
// cloud began deleting the instance and deleted its Node, before the instance was gone and the
// launch record deleted (found by the kill tests of internal/chaos: a consolidated node's record
// stayed a minute, its capacity counted in flight). The next controller's Recover finds the
// record's instance terminating and no Node: it must remove the record at once, not wait for the
// registration timeout as for a Node still to come, and buy nothing.
func testRestartDuringInstanceDeletion(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.RegistrationTimeout = 10 * time.Minute
	// A slow sim kubelet loop, so that the restarted controller's Recover, not the loop, is the
	// first to see the terminating instance.
	e := newEnv(t, cp, cfg, func(c *sim.Config) { c.StepInterval = 3 * time.Second })
	pod := simtest.Pod("ending-a").Label("app", "ending").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	bound := e.waitBound(time.Minute, pod)
	rec := emptiedAndStopped(t, e, pod)
	// What the killed removal did: the cloud's deletion begun (a client of the cloud whose
	// kubelet calls fail leaves the instance terminating), the Node deleted, the record left.
	dead := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second})
	ending, err := sim.New(e.simCfg, dead, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ending.Delete(context.Background(), rec.InstanceID); err == nil {
		t.Fatal("the deletion through a dead API server succeeded; want it left terminating")
	}
	if insts, err := e.cloud.List(context.Background()); err != nil || len(insts) != 1 || insts[0].State != sim.StateTerminating {
		t.Fatalf("instances %v (%v), want the one, terminating", insts, err)
	}
	if err := e.kube.CoreV1().Nodes().Delete(context.Background(), bound["default/ending-a"], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.start()
	testwait.Until(t, testwait.Fast, "the record of the terminating instance to be removed", 20*time.Second, func() bool {
		return len(launchRecords(t, e)) == 0
	})
	testwait.Until(t, testwait.Slow, "the instance to be gone", 30*time.Second, func() bool {
		insts, err := e.cloud.List(context.Background())
		return err == nil && len(insts) == 0
	})
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches, want 1", got)
	}
}

// emptiedAndStopped deletes the pod, alone on its node, and stops the controller before it
// removes the node; it returns the node's launch record, which must name its instance.
func emptiedAndStopped(t *testing.T, e *env, pod *corev1.Pod) provisioner.LaunchRecord {
	t.Helper()
	if err := e.kube.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.stopAndWait()
	recs := launchRecords(t, e)
	if len(recs) != 1 || recs[0].InstanceID == "" {
		t.Fatalf("records %+v, want one with its instance", recs)
	}
	return recs[0]
}

// launchRecords reads every launch record.
func launchRecords(t *testing.T, e *env) []provisioner.LaunchRecord {
	t.Helper()
	recs, err := provisioner.ListRecords(context.Background(), e.dyn, e.cfg.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// testNoLeakWhenListFails: the cloud launches the instance but loses the answer, and the instance
// never registers. At RegistrationTimeout the record is removed with the instance under its launch
// ID; the first attempt to find that instance fails (List), so the removal waits for the next
// batch instead of dropping the record and leaking the instance. The pod is then bought for on
// another offering: two launches, one instance left, the first one deleted.
func testNoLeakWhenListFails(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.LaunchRetry, cfg.LaunchRetryMax = time.Hour, time.Hour
	cfg.RegistrationTimeout = 5 * time.Second
	pod := simtest.Pod("listfail-a").Label("app", "listfail").CPU("3").Mem("6Gi").Obj()
	first := planned(t, e2eCatalog(t), pendingPod(pod.DeepCopy()))
	e := newEnv(t, cp, cfg, nil)
	// After Recover, which lists the instances at the start: the List failure is the removal's.
	testwait.Until(t, testwait.Slow, "the controller's first batch", 30*time.Second, func() bool { return e.batches.count() > 0 })
	e.cloud.SetNeverRegisters(first)
	e.cloud.InjectAPIFailures(
		sim.APIFailure{Call: sim.CallCreate, Code: sim.CodeInternal, Message: "answer lost", AfterLaunch: true},
		sim.APIFailure{Call: sim.CallList, Code: sim.CodeThrottled, Message: "request rate exceeded"},
	)
	e.create(pod)
	bound := e.waitBound(2*time.Minute, pod)
	node, err := e.kube.CoreV1().Nodes().Get(context.Background(), bound["default/listfail-a"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := (api.Offering{InstanceType: api.InstanceTypeName(node.Labels[corev1.LabelInstanceTypeStable]), Zone: node.Labels[corev1.LabelTopologyZone],
		CapacityType: api.CapacityType(node.Labels[api.LabelCapacityType])}); got == first {
		t.Fatalf("bound on %v, which never registers", got)
	}
	testwait.Until(t, testwait.Slow, "the first launch's instance deleted", time.Minute, func() bool {
		insts, err := e.cloud.List(context.Background())
		return err == nil && len(insts) == 1 && insts[0].Offering != first
	})
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2 (the lost one, then another offering)", got)
	}
	e.cleanup([]*corev1.Pod{pod})
}

// testProbeWhenNodesDoNotJoin: the cloud boots an image whose instances never register (a broken
// bootstrap), and four pods, one per node, wait. The first batch launches four nodes; once they
// time out (3 s), the pool launches one node at a time (tiler_provisioner_launches_held 3), so
// over four more timeouts it buys four nodes, not sixteen; the pods held back get a LaunchHeld
// Event saying why. The controller restarts while it probes: the new process reads the pool's
// failed boots back (FailedBootsConfigMap) and goes on one node at a time, where it used to launch
// one node per pod again. Once the image boots again, the probe
// registers and the pods are bought for and bound.
func testProbeWhenNodesDoNotJoin(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.RegistrationTimeout = 3 * time.Second
	e := newEnv(t, cp, cfg, func(c *sim.Config) { c.Image = "img-broken"; c.ImagesNeverRegister = []string{"img-broken"} })
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, simtest.Pod(named("join", i)).Label("app", "join").CPU("1").Mem("2Gi").AntiAffinity(corev1.LabelHostname, "join").Obj())
	}
	e.create(pods...)
	testwait.Until(t, testwait.Slow, "four launches, then one at a time (tiler_provisioner_launches_held = 3)", time.Minute, func() bool {
		return gaugeValue(t, e.metrics.LaunchesHeld) == 3
	})
	// The pods held back say why (kubectl describe pod).
	testwait.Until(t, testwait.Slow, "a LaunchHeld Event on three of the pods", 30*time.Second, func() bool {
		told := 0
		for _, p := range pods {
			for _, ev := range e.podEvents(p.Name, "LaunchHeld") {
				if strings.Contains(ev.Message, "launches in a row did not register; one node at a time") {
					told++
					break
				}
			}
		}
		return told >= 3
	})
	testwait.Until(t, testwait.Slow, "the first four launches removed", 30*time.Second, func() bool { return len(e.records()) <= 1 })
	testwait.Until(t, testwait.Slow, "the failed boots written to their ConfigMap", 30*time.Second, func() bool {
		cm, err := e.kube.CoreV1().ConfigMaps(cfg.Namespace).Get(context.Background(), provisioner.FailedBootsConfigMap, metav1.GetOptions{})
		var byPool map[string][]string
		return err == nil && json.Unmarshal([]byte(cm.Data["failures.json"]), &byPool) == nil && len(byPool["default"]) >= provisioner.ProbeAfterFailedBoots
	})
	e.stopAndWait()
	e.start()
	start := e.launches()
	removed := func() float64 {
		return counterValue(t, e.metrics.Deletions.WithLabelValues(provisioner.RemovalRegistrationTimeout))
	}
	// In flight: launched within the timeout (a launch past it is being removed).
	gone, most := removed(), 0
	testwait.Until(t, testwait.Slow, "four probes timed out", time.Minute, func() bool {
		flying := 0
		for _, r := range e.records() {
			if time.Since(r.CreatedAt) < cfg.RegistrationTimeout {
				flying++
			}
		}
		most = max(most, flying)
		return removed() >= gone+4
	})
	if got := e.launches() - start; most > 1 || got > 5 {
		t.Errorf("%d launches over four registration timeouts, at most %d in flight at once; want one at a time", got, most)
	}
	e.cloud.SetImage("img-fixed")
	e.waitBound(2*time.Minute, pods...)
	testwait.Until(t, testwait.Slow, "no launch held", 30*time.Second, func() bool { return gaugeValue(t, e.metrics.LaunchesHeld) == 0 })
	e.cleanup(pods)
}

func e2eCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalogDefault()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// testInstanceEndedWhileBooting: the cloud ends a booting instance with no notice (deleted out of
// band). The instance sweep removes its launch within a few periods, and the pod is bought for
// again and bound, long before the registration timeout (10 min here) that ended such a launch
// before the sweep. Then an instance no launch record names (what a launch call that created it
// after its record was removed leaves) is deleted on the second sweep that finds it.
func testInstanceEndedWhileBooting(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.RegistrationTimeout = 10 * time.Minute
	cfg.InstanceSweepPeriod = time.Second
	e := newEnv(t, cp, cfg, func(c *sim.Config) { c.BootDelay = 8 * time.Second })
	ctx := context.Background()
	pod := simtest.Pod("ended-a").Label("app", "ended").CPU("2").Mem("4Gi").Obj()
	e.create(pod)
	var first *cloudprovider.Instance
	testwait.Until(t, 50*time.Millisecond, "an instance launched for the pod", time.Minute, func() bool {
		insts, err := e.cloud.List(ctx)
		if err == nil && len(insts) == 1 {
			first = insts[0]
		}
		return first != nil
	})
	if _, err := e.kube.CoreV1().Nodes().Get(ctx, first.NodeName, metav1.GetOptions{}); err == nil {
		t.Fatalf("instance %s registered its node before it was ended; the scenario needs it booting", first.ID)
	}
	ended := time.Now()
	if err := e.cloud.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	node := e.waitBound(time.Minute, pod)["default/"+pod.Name]
	t.Logf("the pod bound on %s %.1fs after its first instance was ended", node, time.Since(ended).Seconds())
	if node == first.NodeName {
		t.Errorf("bound on %s, the ended instance's node", node)
	}
	// A person's deletion says nothing about capacity: the same offering is bought again.
	if next := instanceOfNode(t, e, node); next == nil || next.Offering != first.Offering {
		t.Errorf("the successor is %+v, want one on %s (the offering is not marked unavailable)", next, first.Offering)
	}
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2 (the ended one and its successor)", got)
	}
	if recs := launchRecords(t, e); len(recs) != 1 || recs[0].InstanceID == first.ID {
		t.Errorf("records %+v, want only the successor's", recs)
	}

	orphan, err := e.cloud.Create(ctx, cloudprovider.LaunchRequest{LaunchID: "orphan-a", NodeName: "orphan-a", Cluster: cfg.ClusterName,
		Pool: "default", Offering: planned(t, e2eCatalog(t), pendingPod(pod.DeepCopy()))})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Fast, "the orphan instance deleted", 30*time.Second, func() bool {
		_, err := e.cloud.Get(ctx, orphan.ID)
		return cloudprovider.IsNotFound(err)
	})
	if insts, err := e.cloud.List(ctx); err != nil || len(insts) != 1 || insts[0].NodeName != node {
		t.Errorf("instances %v (%v), want the bound pod's only", insts, err)
	}

	// The cloud ends a booting instance for want of capacity, with no notice (EC2's
	// Server.InsufficientInstanceCapacity after the launch): the sweep asks the cloud why it
	// ended, marks its offering unavailable, and the pod is bought for on another offering.
	other := simtest.Pod("ended-b").Label("app", "ended").AntiAffinity(corev1.LabelHostname, "ended").CPU("2").Mem("4Gi").Obj()
	e.create(other)
	var lost *cloudprovider.Instance
	testwait.Until(t, 50*time.Millisecond, "an instance launched for the second pod", time.Minute, func() bool {
		insts, err := e.cloud.List(ctx)
		for _, i := range insts {
			if err == nil && i.NodeName != node {
				lost = i
			}
		}
		return lost != nil
	})
	if lost.Offering != first.Offering {
		t.Fatalf("the second pod's instance is on %s, want %s as the first's (the test compares the offerings)", lost.Offering, first.Offering)
	}
	ended = time.Now()
	if err := e.cloud.LoseCapacity(ctx, lost.ID); err != nil {
		t.Fatal(err)
	}
	otherNode := e.waitBound(time.Minute, other)["default/"+other.Name]
	t.Logf("the second pod bound on %s %.1fs after its first instance lost its capacity", otherNode, time.Since(ended).Seconds())
	if next := instanceOfNode(t, e, otherNode); next == nil || next.Offering == lost.Offering {
		t.Errorf("the second pod's successor is %+v, want one on another offering than %s", next, lost.Offering)
	}
	testwait.Until(t, testwait.Fast, "an InstanceGone event naming the capacity loss", 30*time.Second, func() bool {
		evs, err := e.kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + lost.NodeName})
		return err == nil && slices.ContainsFunc(evs.Items, func(ev corev1.Event) bool {
			return ev.Reason == "InstanceGone" && strings.Contains(ev.Message, sim.ReasonCapacityLost)
		})
	})
	e.cleanup([]*corev1.Pod{pod, other})
}

// instanceOfNode returns the cloud's instance of the node, nil for none.
func instanceOfNode(t *testing.T, e *env, node string) *cloudprovider.Instance {
	t.Helper()
	insts, err := e.cloud.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range insts {
		if i.NodeName == node {
			return i
		}
	}
	return nil
}
