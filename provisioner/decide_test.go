package provisioner_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// These tests drive Decide as a replay would: a hand-built State at the time of a fake clock,
// the Memory carried from batch to batch, no API server and no cloud.

func decideCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// firstLaunch is the first batch of one pending pod at a fake clock's time: it launches one node.
func firstLaunch(t *testing.T) (*clocktesting.FakeClock, provisioner.DecideConfig, *provisioner.Memory, provisioner.State, *provisioner.Decision) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	mem := provisioner.NewMemory()
	pod := pendingPod(simtest.Pod("web-0").Namespace("web").Label("app", "web").CPU("3").Mem("6Gi").Obj())
	s := provisioner.State{Now: clk.Now(), Pods: []*corev1.Pod{pod}, Catalog: decideCatalog(t)}
	d := provisioner.Decide(s, cfg, mem)
	if len(d.Launch) != 1 {
		t.Fatalf("first batch: launches %+v, want one", d.Launch)
	}
	return clk, cfg, mem, s, d
}

// TestDecideRegistrationTimeout: a launch whose Node never registers carries its pod while it is
// in flight; one second past RegistrationTimeout it is removed, its offering is marked unavailable,
// and the same batch plans the pod onto a new node of another offering.
func TestDecideRegistrationTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	mem := provisioner.NewMemory()
	pod := pendingPod(simtest.Pod("web-0").Namespace("web").Label("app", "web").CPU("3").Mem("6Gi").Obj())
	s := provisioner.State{Now: clk.Now(), Pods: []*corev1.Pod{pod}, Catalog: decideCatalog(t)}

	d := provisioner.Decide(s, cfg, mem)
	if d.Pending != 1 || len(d.Launch) != 1 || len(d.Remove) != 0 {
		t.Fatalf("first batch: %d pending, launches %+v, removals %+v; want one launch for the pod", d.Pending, d.Launch, d.Remove)
	}
	// What act would have written: the record, with the instance the cloud accepted.
	rec := d.Launch[0]
	rec.InstanceID = "i-1"
	s.Records = []provisioner.LaunchRecord{rec}

	clk.Step(cfg.RegistrationTimeout)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 0 || len(d.Launch) != 0 || len(d.Plan.ExistingNodes) != 1 || d.Plan.ExistingNodes[0].Name != rec.NodeName {
		t.Fatalf("at the timeout: removals %+v, launches %+v, existing %+v; want the pod on the launch in flight",
			d.Remove, d.Launch, d.Plan.ExistingNodes)
	}

	clk.Step(time.Second)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 1 || d.Remove[0].Reason != provisioner.RemovalRegistrationTimeout || d.Remove[0].Record.LaunchID != rec.LaunchID ||
		d.Remove[0].Node != rec.NodeName {
		t.Fatalf("past the timeout: removals %+v; want %s removed for %s, with its Node name", d.Remove, rec.LaunchID, provisioner.RemovalRegistrationTimeout)
	}
	if len(d.MarkUnavailable) != 1 || d.MarkUnavailable[0] != rec.Offering || d.UnavailableOfferings != 1 {
		t.Errorf("unavailable: marked %+v, %d in the catalog; want %+v", d.MarkUnavailable, d.UnavailableOfferings, rec.Offering)
	}
	if len(d.Launch) != 1 || d.Launch[0].Offering == rec.Offering || d.Fleet.Nodes != 0 {
		t.Errorf("launches %+v, fleet %+v; want the pod re-planned on another offering, no managed node left", d.Launch, d.Fleet)
	}
	if len(d.FailedImages) != 0 {
		t.Errorf("a launch without an image: failed images %+v, want none", d.FailedImages)
	}
}

// TestDecideRegistrationTimeoutFailsImage: a launch that did not register fails the image it
// booted from, unless a Ready node booted from that image shows the image boots.
func TestDecideRegistrationTimeoutFailsImage(t *testing.T) {
	clk, cfg, mem, s, d := firstLaunch(t)
	rec := d.Launch[0]
	rec.InstanceID, rec.Image = "i-1", "img-2"
	s.Records = []provisioner.LaunchRecord{rec}
	clk.Step(cfg.RegistrationTimeout + time.Second)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 1 || len(d.FailedImages) != 1 || d.FailedImages[0].Image != "img-2" || d.FailedImages[0].Node != rec.NodeName ||
		!d.FailedImages[0].At.Equal(s.Now) || !strings.Contains(d.FailedImages[0].Why, "did not register within 10m0s") {
		t.Fatalf("removals %+v, failed images %+v; want img-2 failed on %s at %s", d.Remove, d.FailedImages, rec.NodeName, s.Now)
	}
	// A Ready node booted from img-2: the image boots, the instance did not.
	node := simtest.Node("tiler-ready", "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "3920m", "memory", "14Gi", "pods", "58"))
	ready := provisioner.LaunchRecord{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a",
		CapacityType: api.OnDemand}, PricePerHour: 0.2}, LaunchID: node.Name, NodeName: node.Name, Pool: "default", InstanceID: "i-2",
		CreatedAt: s.Now.Add(-time.Hour), Image: "img-2"}
	s.Nodes, s.Records = []*corev1.Node{node}, []provisioner.LaunchRecord{rec, ready}
	d = provisioner.Decide(s, cfg, provisioner.NewMemory())
	if len(d.Remove) != 1 || len(d.FailedImages) != 0 {
		t.Errorf("with a Ready node on img-2: removals %+v, failed images %+v; want the launch removed, no image failed", d.Remove, d.FailedImages)
	}
	// With launch settings recorded, the boot is the image with them: a Ready node of img-2 with
	// the old settings says nothing of the new ones.
	rec.Settings, ready.Settings = "s-2", "s-1"
	s.Records = []provisioner.LaunchRecord{rec, ready}
	d = provisioner.Decide(s, cfg, provisioner.NewMemory())
	if want := simulator.BootName("img-2", "s-2"); len(d.FailedImages) != 1 || d.FailedImages[0].Image != want {
		t.Errorf("with new settings: failed images %+v, want %q", d.FailedImages, want)
	}
}

// TestDecideReadyOnceIsNoRegistrationTimeout: a node that was Ready once and then is not (its
// kubelet restarted, its network parted) is no launch in flight: it stays, with its pods and in
// the fleet, and marks nothing, whether this process saw it Ready (Memory.Announced) or only its
// record says so (ReadyAt, after a restart). Once its Node is gone, the launch is removed as
// RemovalNodeGone, marking nothing, failing no image and counting no failed boot. A node never
// seen Ready is still removed at the registration timeout.
func TestDecideReadyOnceIsNoRegistrationTimeout(t *testing.T) {
	clk, cfg, node, rec := launchedHourAgo()
	rec.Image = "img-1"
	notReady := node.DeepCopy()
	for i := range notReady.Status.Conditions {
		if notReady.Status.Conditions[i].Type == corev1.NodeReady {
			notReady.Status.Conditions[i].Status = corev1.ConditionUnknown
		}
	}
	pod := simtest.Pod("web-0").Namespace("web").CPU("1").On(node.Name).Obj()
	s := provisioner.State{Now: clk.Now(), Nodes: []*corev1.Node{node}, Records: []provisioner.LaunchRecord{rec}, Catalog: decideCatalog(t),
		Pods: []*corev1.Pod{pod}}
	decide := func(mem *provisioner.Memory, nodes ...*corev1.Node) *provisioner.Decision {
		clk.Step(time.Second)
		s.Now, s.Nodes = clk.Now(), nodes
		return provisioner.Decide(s, cfg, mem)
	}
	kept := func(what string, d *provisioner.Decision) {
		t.Helper()
		if len(d.Remove) != 0 || len(d.MarkUnavailable) != 0 || len(d.FailedImages) != 0 || d.Fleet.Nodes != 1 {
			t.Errorf("%s: removals %+v, marked %+v, failed images %+v, fleet %d; want the node kept, nothing marked",
				what, d.Remove, d.MarkUnavailable, d.FailedImages, d.Fleet.Nodes)
		}
	}
	gone := func(what string, d *provisioner.Decision, mem *provisioner.Memory) {
		t.Helper()
		if len(d.Remove) != 1 || d.Remove[0].Reason != provisioner.RemovalNodeGone || len(d.MarkUnavailable) != 0 ||
			len(d.FailedImages) != 0 || len(mem.FailedBoots) != 0 {
			t.Errorf("%s: removals %+v, marked %+v, failed images %+v, failed boots %v; want it removed as %s, nothing marked or counted",
				what, d.Remove, d.MarkUnavailable, d.FailedImages, mem.FailedBoots, provisioner.RemovalNodeGone)
		}
	}

	// Seen Ready by this process.
	mem := provisioner.NewMemory()
	if d := decide(mem, node); len(d.Announce) != 1 {
		t.Fatalf("Ready: announced %d, want 1", len(d.Announce))
	}
	kept("not Ready after it was (Announced)", decide(mem, notReady))
	kept("still not Ready", decide(mem, notReady))
	gone("its Node gone (Announced)", decide(mem), mem)

	// After a restart: only the record knows.
	rec.ReadyAt = s.Now.Add(-30 * time.Minute)
	s.Records = []provisioner.LaunchRecord{rec}
	mem = provisioner.NewMemory()
	kept("not Ready, ReadyAt recorded", decide(mem, notReady))
	gone("its Node gone (ReadyAt)", decide(mem), mem)

	// Never Ready: the registration timeout.
	rec.ReadyAt = time.Time{}
	s.Records = []provisioner.LaunchRecord{rec}
	mem = provisioner.NewMemory()
	d := decide(mem, notReady)
	if len(d.Remove) != 1 || d.Remove[0].Reason != provisioner.RemovalRegistrationTimeout || len(d.MarkUnavailable) != 1 {
		t.Errorf("never Ready: removals %+v, marked %+v; want it removed at the registration timeout, its offering marked", d.Remove, d.MarkUnavailable)
	}
}

// TestDecideProbesAPoolWhoseLaunchesDoNotRegister: three pods, one per node, are launched for;
// none of the three registers. Past the timeout, the pool has failed to boot three times in a
// row, so the batch launches one node (the probe) and holds the two others back, and so does
// the next batch while the probe is in flight. Once the probe's node registers, the pool
// launches for the pods left as usual.
func TestDecideProbesAPoolWhoseLaunchesDoNotRegister(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	mem := provisioner.NewMemory()
	var pods []*corev1.Pod
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		pods = append(pods, pendingPod(simtest.Pod(name).Namespace("web").Label("app", "web").CPU("1").Mem("2Gi").
			AntiAffinity(corev1.LabelHostname, "web").Obj()))
	}
	s := provisioner.State{Now: clk.Now(), Pods: pods, Catalog: decideCatalog(t)}
	d := provisioner.Decide(s, cfg, mem)
	if len(d.Launch) != 3 || len(d.Held) != 0 {
		t.Fatalf("first batch: %d launches, %d held; want three launches", len(d.Launch), len(d.Held))
	}
	for i := range d.Launch {
		d.Launch[i].InstanceID = fmt.Sprintf("i-%d", i)
	}
	s.Records = d.Launch

	clk.Step(cfg.RegistrationTimeout + time.Second)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 3 || len(d.Launch) != 1 || len(d.Held) != 2 {
		t.Fatalf("past the timeout: %d removed, %d launched, %d held; want 3, 1 (the probe), 2", len(d.Remove), len(d.Launch), len(d.Held))
	}
	if !strings.Contains(d.Held[0].Why, "3 launches in a row did not register") {
		t.Errorf("held because %q", d.Held[0].Why)
	}
	probe := d.Launch[0]
	probe.InstanceID = "i-probe"
	s.Records = []provisioner.LaunchRecord{probe}
	clk.Step(time.Minute)
	s.Now = clk.Now()
	if d = provisioner.Decide(s, cfg, mem); len(d.Launch) != 0 || len(d.Held) != 2 {
		t.Errorf("probe in flight: %d launched, %d held; want 0, 2", len(d.Launch), len(d.Held))
	}
	// The probe registers: the pool launches again.
	node := simtest.Node(probe.NodeName, string(probe.InstanceType), probe.Zone, simtest.Resources("cpu", "1930m", "memory", "7Gi", "pods", "29"))
	node.Labels[api.LabelPool] = probe.Pool
	s.Nodes = []*corev1.Node{node}
	pods[0].Spec.NodeName = node.Name
	pods[0].Status.Conditions = nil
	clk.Step(time.Minute)
	s.Now = clk.Now()
	if d = provisioner.Decide(s, cfg, mem); len(d.Launch) != 2 || len(d.Held) != 0 {
		t.Errorf("probe registered: %d launched, %d held; want the two pods left launched for", len(d.Launch), len(d.Held))
	}
}

// launchedHourAgo is a fake clock, the default configuration, and a Ready m7i.xlarge node with
// the launch record that bought it an hour before the clock's time.
func launchedHourAgo() (*clocktesting.FakeClock, provisioner.DecideConfig, *corev1.Node, provisioner.LaunchRecord) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	node := simtest.Node("tiler-default-1", "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "3920m", "memory", "14Gi", "pods", "58"))
	rec := provisioner.LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.2},
		LaunchID:       node.Name, NodeName: node.Name, Pool: "default", InstanceID: "i-1", CreatedAt: clk.Now().Add(-time.Hour),
	}
	return clk, provisioner.DecideConfig{Config: provisioner.DefaultConfig()}, node, rec
}

// TestDecideEmptyNodeTTL: a managed node that holds no pod is removed EmptyNodeTTL after it was
// first seen empty, as the Memory remembers; a pod arriving on it resets the count; a pool's
// minNodes keeps it.
func TestDecideEmptyNodeTTL(t *testing.T) {
	clk, cfg, node, rec := launchedHourAgo()
	s := provisioner.State{Nodes: []*corev1.Node{node}, Records: []provisioner.LaunchRecord{rec}, Catalog: decideCatalog(t)}
	decide := func(mem *provisioner.Memory) *provisioner.Decision {
		s.Now = clk.Now()
		return provisioner.Decide(s, cfg, mem)
	}

	mem := provisioner.NewMemory()
	if d := decide(mem); len(d.Remove) != 0 || d.Fleet.Nodes != 1 || len(d.Announce) != 1 {
		t.Fatalf("first seen empty: removals %+v, fleet %+v, announced %d; want the node kept and announced once", d.Remove, d.Fleet, len(d.Announce))
	}
	clk.Step(cfg.EmptyNodeTTL - time.Second)
	if d := decide(mem); len(d.Remove) != 0 || len(d.Announce) != 0 {
		t.Fatalf("a second before the TTL: removals %+v, announced %d; want none", d.Remove, len(d.Announce))
	}
	// A replay that forgot the Memory starts the count again.
	clk.Step(time.Second)
	if d := decide(provisioner.NewMemory()); len(d.Remove) != 0 {
		t.Fatalf("fresh memory: removals %+v; want the node first seen empty now", d.Remove)
	}
	d := decide(mem)
	if len(d.Remove) != 1 || d.Remove[0].Reason != provisioner.RemovalEmpty || d.Remove[0].Node != node.Name || d.Fleet.Nodes != 0 {
		t.Fatalf("at the TTL: removals %+v, fleet %+v; want %s removed as empty", d.Remove, d.Fleet, node.Name)
	}
	// The removal failed (the record is still there): the next batch tries again at once.
	if d := decide(mem); len(d.Remove) != 1 {
		t.Fatalf("after a failed removal: removals %+v; want it decided again", d.Remove)
	}

	// A pod bound there resets the count.
	s.Pods = []*corev1.Pod{simtest.Pod("web-0").Namespace("web").CPU("1").On(node.Name).Obj()}
	if d := decide(mem); len(d.Remove) != 0 {
		t.Fatalf("with a pod: removals %+v", d.Remove)
	}
	s.Pods = nil
	decide(mem)
	clk.Step(cfg.EmptyNodeTTL)
	if d := decide(mem); len(d.Remove) != 1 {
		t.Fatalf("empty again for the TTL: removals %+v; want the node removed", d.Remove)
	}

	// minNodes: 1 keeps the pool's last node however long it stays empty.
	one := provisioner.NewMemory()
	s.Policy = minNodesPolicy(t, 1)
	decide(one)
	clk.Step(10 * cfg.EmptyNodeTTL)
	if d := decide(one); len(d.Remove) != 0 {
		t.Fatalf("minNodes 1: removals %+v", d.Remove)
	}

	// Once the record is gone, so is what the Memory held about its node.
	s.Records, s.Nodes = nil, nil
	decide(one)
	if len(one.EmptySince) != 0 || len(one.Announced) != 0 {
		t.Errorf("memory after the launch went: %+v", one)
	}
}

// TestDecideHoldsGPUPodsForTheTriggerDelay: a GPU pod waits GPUTriggerDelay after it became
// unschedulable before it triggers a purchase, and the batch asks to look again then.
func TestDecideHoldsGPUPodsForTheTriggerDelay(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	cfg.GPUTriggerDelay = 30 * time.Second
	pod := simtest.Pod("infer-0").Namespace("ml").CPU("2").Mem("8Gi").GPU(1).Obj()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(clk.Now())}}
	s := provisioner.State{Pods: []*corev1.Pod{pod}, Catalog: decideCatalog(t)}
	mem := provisioner.NewMemory()

	clk.Step(10 * time.Second)
	s.Now = clk.Now()
	if d := provisioner.Decide(s, cfg, mem); d.Pending != 0 || d.Plan != nil || d.RecheckAfter != cfg.GPUTriggerDelay {
		t.Fatalf("10 s after: %d pending, plan %v, recheck after %s; want the pod held and a recheck after %s",
			d.Pending, d.Plan, d.RecheckAfter, cfg.GPUTriggerDelay)
	}
	clk.Step(20 * time.Second)
	s.Now = clk.Now()
	if d := provisioner.Decide(s, cfg, mem); d.Pending != 1 || len(d.Launch) != 1 || d.RecheckAfter != 0 {
		t.Fatalf("30 s after: %d pending, launches %+v, recheck after %s; want the pod planned", d.Pending, d.Launch, d.RecheckAfter)
	}
}

// TestDecideRetriesFailedLaunches: a launch the cloud API failed without refusing it keeps its
// record, which carries the pod (no second purchase) until its retry is due: then Decide hands it
// back to act (Retry), and meanwhile asks to look again when it is due. A launch the cloud
// accepted is never retried.
func TestDecideRetriesFailedLaunches(t *testing.T) {
	clk, cfg, mem, s, d := firstLaunch(t)
	// What act writes when the cloud API fails the launch: no instance, one attempt, a retry due.
	rec := d.Launch[0]
	rec.LaunchAttempts, rec.LastError, rec.RetryAt = 1, "RequestLimitExceeded: rate exceeded", clk.Now().Add(cfg.LaunchRetry)
	s.Records = []provisioner.LaunchRecord{rec}

	clk.Step(cfg.LaunchRetry - time.Second)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Retry) != 0 || len(d.Launch) != 0 || d.RecheckAfter != time.Second {
		t.Fatalf("before the retry: retries %+v, launches %+v, recheck after %s; want none, none, 1s", d.Retry, d.Launch, d.RecheckAfter)
	}
	clk.Step(time.Second)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Retry) != 1 || d.Retry[0].LaunchID != rec.LaunchID || len(d.Launch) != 0 || d.RecheckAfter != 0 {
		t.Fatalf("when due: retries %+v, launches %+v, recheck after %s; want %s retried and nothing bought", d.Retry, d.Launch, d.RecheckAfter, rec.LaunchID)
	}
	accepted := rec
	accepted.InstanceID = "i-1"
	s.Records = []provisioner.LaunchRecord{accepted}
	if d = provisioner.Decide(s, cfg, mem); len(d.Retry) != 0 || len(d.Launch) != 0 {
		t.Fatalf("accepted on a retry: retries %+v, launches %+v; want neither", d.Retry, d.Launch)
	}
	// Past RegistrationTimeout the record is removed (with any instance under its launch ID)
	// rather than retried, and the pod is planned again.
	s.Records = []provisioner.LaunchRecord{rec}
	clk.Step(cfg.RegistrationTimeout)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Retry) != 0 || len(d.Remove) != 1 || d.Remove[0].Reason != provisioner.RemovalRegistrationTimeout || len(d.Launch) != 1 {
		t.Fatalf("past the registration timeout: retries %+v, removals %+v, launches %+v", d.Retry, d.Remove, d.Launch)
	}
}

// minNodesPolicy is the default policy with pool default keeping n nodes.
func minNodesPolicy(t *testing.T, n int) *policy.CostPolicy {
	t.Helper()
	p := policy.Default()
	p.Pools[0].MinNodes = n
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecideLeavesDisruptionToItsLoop: a batch does not remove an empty node a disruption action
// is removing (the loop does), plans no pod onto it, and does not buy for the pods of a controller
// whose pods the disruption evicted until DisruptionRescheduleGrace has passed, when it buys.
func TestDecideLeavesDisruptionToItsLoop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	cfg.EmptyNodeTTL = 0
	node := simtest.Node("tiler-default-1", "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "3920m", "memory", "14Gi", "pods", "58"))
	node.Annotations = map[string]string{api.AnnotationDisruptionAction: "d-1", api.AnnotationDisruptionStep: api.DisruptionStepDraining}
	rec := provisioner.LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.2},
		LaunchID:       node.Name, NodeName: node.Name, Pool: "default", InstanceID: "i-1", CreatedAt: clk.Now().Add(-time.Hour),
	}
	owned := pendingPod(simtest.Pod("web-1").Namespace("web").CPU("1").Controlled("ReplicaSet", "web").Obj())
	uid := string(owned.OwnerReferences[0].UID)
	s := provisioner.State{Now: clk.Now(), Nodes: []*corev1.Node{node}, Records: []provisioner.LaunchRecord{rec}, Catalog: decideCatalog(t),
		Pods: []*corev1.Pod{owned}, DisruptionEvicted: map[string]time.Time{uid: clk.Now().Add(-10 * time.Second)}}
	mem := provisioner.NewMemory()
	provisioner.Decide(s, cfg, mem)
	d := provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 0 || d.Pending != 0 || len(d.Launch) != 0 || d.RecheckAfter != cfg.DisruptionRescheduleGrace-10*time.Second {
		t.Fatalf("removals %+v, pending %d, launches %+v, recheck %s; want nothing done, a look again in %s", d.Remove, d.Pending,
			d.Launch, d.RecheckAfter, cfg.DisruptionRescheduleGrace-10*time.Second)
	}
	clk.Step(cfg.DisruptionRescheduleGrace)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if d.Pending != 1 || len(d.Launch) != 1 {
		t.Fatalf("after the grace: pending %d, launches %+v; want the pod bought for (the node under the action has room but takes no pod)", d.Pending, d.Launch)
	}
}

// TestDecideRecordsPoolHash: a launch record carries policy.PoolHash of its pool as the policy is
// when the launch is planned (the controller sets it on the Node for drift detection).
func TestDecideRecordsPoolHash(t *testing.T) {
	pol, err := policy.Parse([]byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: web
  instanceFamilies: [m7i]
  labels: {team: web}
`))
	if err != nil {
		t.Fatal(err)
	}
	pod := pendingPod(simtest.Pod("web-0").Namespace("web").Label("app", "web").CPU("1").Mem("2Gi").Obj())
	s := provisioner.State{Now: time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC), Pods: []*corev1.Pod{pod}, Catalog: decideCatalog(t), Policy: pol}
	d := provisioner.Decide(s, provisioner.DecideConfig{Config: provisioner.DefaultConfig()}, provisioner.NewMemory())
	if len(d.Launch) != 1 {
		t.Fatalf("launches %+v, want one", d.Launch)
	}
	if got, want := d.Launch[0].PoolHash, policy.PoolHash(&pol.Pools[0]); got == "" || got != want {
		t.Errorf("record pool hash %q, want %q", got, want)
	}
	pol.Pools[0].Labels["team"] = "search"
	if d.Launch[0].PoolHash == policy.PoolHash(&pol.Pools[0]) {
		t.Error("the pool hash does not change with the pool's labels")
	}
}

// TestDecideFleetGauges: the fleet's price is split by pool and capacity type (the sum is the
// total), and the oldest provisionable pod's age is measured at the batch's time.
func TestDecideFleetGauges(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	rec := func(name, pool string, ct api.CapacityType, price float64) provisioner.LaunchRecord {
		return provisioner.LaunchRecord{
			PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: ct}, PricePerHour: price},
			LaunchID:       name, NodeName: name, Pool: pool, InstanceID: "i-" + name, CreatedAt: now.Add(-time.Minute),
		}
	}
	old := pendingPod(simtest.Pod("web-0").Namespace("web").CPU("1").Mem("1Gi").Obj())
	old.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	young := pendingPod(simtest.Pod("web-1").Namespace("web").CPU("1").Mem("1Gi").Obj())
	young.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Second))
	s := provisioner.State{Now: now, Pods: []*corev1.Pod{young, old}, Catalog: decideCatalog(t), Records: []provisioner.LaunchRecord{
		rec("a", "general", api.OnDemand, 0.2), rec("b", "general", api.OnDemand, 0.3), rec("c", "general", api.Spot, 0.1), rec("d", "gpu", api.Spot, 1.5)}}
	d := provisioner.Decide(s, cfg, provisioner.NewMemory())
	want := map[provisioner.PoolCapacity]float64{{Pool: "general", CapacityType: api.OnDemand}: 0.5, {Pool: "general", CapacityType: api.Spot}: 0.1,
		{Pool: "gpu", CapacityType: api.Spot}: 1.5}
	if len(d.Fleet.CostByPool) != len(want) {
		t.Errorf("cost by pool %v, want %v", d.Fleet.CostByPool, want)
	}
	sum := 0.0
	for k, v := range want {
		if got := d.Fleet.CostByPool[k]; math.Abs(got-v) > 1e-9 {
			t.Errorf("cost of %+v: %v, want %v", k, got, v)
		}
		sum += v
	}
	if math.Abs(d.Fleet.CostPerHour-sum) > 1e-9 {
		t.Errorf("fleet cost %v, want the sum %v", d.Fleet.CostPerHour, sum)
	}
	if d.OldestPending != 90*time.Second {
		t.Errorf("oldest pending %s, want 1m30s", d.OldestPending)
	}
}

// TestDecideBuysForPodsTheSchedulerCouldNotPreemptFor: a provisionable pod was tried by
// kube-scheduler, preemption included (one it nominated for preemption is not provisionable), so
// Decide buys for it even where the simulation's preemption model would evict a lower-priority
// pod instead: the scheduler found no victims, and waiting for a preemption it will not make would
// leave the pod pending for ever.
func TestDecideBuysForPodsTheSchedulerCouldNotPreemptFor(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	node := simtest.Node("n-0", "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "4", "memory", "15Gi", "pods", "110"))
	low := simtest.Pod("train-0").Namespace("research").CPU("3").Priority(100).On("n-0").Obj()
	high := simtest.Pod("serve-0").Namespace("prod").CPU("3").Priority(1000).Obj()
	high.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now)}}
	s := provisioner.State{Now: now, Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{low, high}, Catalog: decideCatalog(t)}
	d := provisioner.Decide(s, cfg, provisioner.NewMemory())
	if d.Plan == nil || len(d.Plan.Preemptions) != 0 || len(d.Launch) != 1 {
		t.Fatalf("plan %+v, launches %+v: want prod/serve-0 bought for, no preemption", d.Plan, d.Launch)
	}
}

// TestDecideCallsUnderWay: a launch whose call is still under way (State.Launching) is neither
// retried when due nor removed past RegistrationTimeout: it carries its pod until the call
// returns; one being removed (State.Removing) is counted as gone, its pod planned again, and not
// removed a second time.
func TestDecideCallsUnderWay(t *testing.T) {
	clk, cfg, mem, s, d := firstLaunch(t)
	rec := d.Launch[0]
	rec.LaunchAttempts, rec.RetryAt = 1, clk.Now().Add(cfg.LaunchRetry)
	s.Records = []provisioner.LaunchRecord{rec}
	s.Launching = map[string]bool{rec.LaunchID: true}

	clk.Step(cfg.LaunchRetry)
	s.Now = clk.Now()
	if d = provisioner.Decide(s, cfg, mem); len(d.Retry) != 0 || len(d.Launch) != 0 {
		t.Fatalf("retry due, call under way: retries %+v, launches %+v; want neither", d.Retry, d.Launch)
	}
	clk.Step(cfg.RegistrationTimeout)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 0 || len(d.Retry) != 0 || len(d.Launch) != 0 || d.Fleet.Nodes != 1 {
		t.Fatalf("past the timeout, call under way: removals %+v, retries %+v, launches %+v, fleet %+v; want the launch kept in flight",
			d.Remove, d.Retry, d.Launch, d.Fleet)
	}
	s.Launching, s.Removing = nil, map[string]bool{rec.LaunchID: true}
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Remove) != 0 || d.Fleet.Nodes != 0 || len(d.Launch) != 1 {
		t.Fatalf("being removed: removals %+v, fleet %+v, launches %+v; want no second removal, no node, the pod planned again",
			d.Remove, d.Fleet, d.Launch)
	}
}

// TestDecideFailedBootsEndWithANewNode: a pool's failed boots (Memory.FailedBoots) end when a
// node of the pool registers, not when a process restarted with them read back (FailedBootsConfigMap)
// first sees a node that was Ready before (its record's ReadyAt): that one says nothing of the
// launches since.
func TestDecideFailedBootsEndWithANewNode(t *testing.T) {
	clk, cfg, node, rec := launchedHourAgo()
	s := provisioner.State{Now: clk.Now(), Nodes: []*corev1.Node{node}, Catalog: decideCatalog(t)}
	failed := func() *provisioner.Memory {
		mem := provisioner.NewMemory()
		mem.FailedBoots["default"] = map[string]bool{"launch-a": true, "launch-b": true}
		return mem
	}
	rec.ReadyAt = clk.Now().Add(-50 * time.Minute)
	s.Records = []provisioner.LaunchRecord{rec}
	mem := failed()
	if d := provisioner.Decide(s, cfg, mem); len(d.Announce) != 1 || len(mem.FailedBoots["default"]) != 2 {
		t.Errorf("a node Ready before the restart: announced %d, failed boots %v; want it announced and the failed boots kept",
			len(d.Announce), mem.FailedBoots)
	}
	rec.ReadyAt = time.Time{}
	s.Records = []provisioner.LaunchRecord{rec}
	mem = failed()
	if provisioner.Decide(s, cfg, mem); len(mem.FailedBoots) != 0 {
		t.Errorf("a node that registers now: failed boots %v; want none", mem.FailedBoots)
	}
}
