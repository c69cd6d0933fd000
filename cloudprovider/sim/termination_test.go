package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

var ignoreReceipt = cmpopts.IgnoreFields(cloudprovider.Interruption{}, "Receipt")

// TestInterruptionRedelivery: a notice polled but not acknowledged (the controller died before
// annotating the node) is delivered again, with the same receipt, once NoticeVisibilityTimeout
// has passed, also to a restarted Provider's source; an acknowledged one never comes again.
func TestInterruptionRedelivery(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a, b := e.create(gpuRequest("a", "node-a")), e.create(gpuRequest("b", "node-b"))
	e.step(testBootDelay + testDeviceDelay)
	for _, id := range []string{a.ID, b.ID} {
		if err := e.p.RecommendRebalance(id); err != nil {
			t.Fatal(err)
		}
	}
	first, err := e.p.Interruptions().Poll(ctx)
	if err != nil || len(first) != 2 || first[0].Receipt == first[1].Receipt {
		t.Fatalf("Poll = %+v, %v; want both notices, with receipts of their own", first, err)
	}
	if err := e.p.Interruptions().Ack(ctx, first[:1]); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(NoticeVisibilityTimeout - time.Second)
	if got, _ := e.p.Interruptions().Poll(ctx); len(got) != 0 {
		t.Fatalf("Poll within the visibility timeout = %+v; want nothing", got)
	}
	e.clk.Step(time.Second)
	again, err := e.restart().Interruptions().Poll(ctx)
	if err != nil || !cmp.Equal(again, first[1:]) {
		t.Fatalf("Poll after the visibility timeout = %+v, %v; want the unacknowledged notice alone, %+v", again, err, first[1:])
	}
	if err := e.p.Interruptions().Ack(ctx, again); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(time.Hour)
	if got, _ := e.p.Interruptions().Poll(ctx); len(got) != 0 {
		t.Fatalf("Poll after both were acknowledged = %+v; want nothing", got)
	}
}

// TestInterruptAndReclaim: Interrupt queues a notice that Poll delivers once (also across a
// restart), and Step reclaims the spot instance when the grace has passed.
func TestInterruptAndReclaim(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	spot := e.create(gpuRequest("spot", "spot-node"))
	od := gpuRequest("od", "od-node")
	od.Offering = l4OD1b
	onDemand := e.create(od)
	e.step(testBootDelay + testDeviceDelay)

	if err := e.p.Interrupt(onDemand.ID); err == nil || !strings.Contains(err.Error(), "only spot") {
		t.Fatalf("Interrupt of an on-demand instance: got %v", err)
	}
	if err := e.p.Interrupt("sim-999999"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Interrupt of an unknown instance: got %v", err)
	}
	if err := e.p.Interrupt(spot.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Interrupt(spot.ID); err != nil { // a repeat adds no notice
		t.Fatal(err)
	}
	interruptedAt := e.clk.Now()

	// The notice lives in the state file: a restarted controller's source delivers it.
	got, err := e.restart().Interruptions().Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []cloudprovider.Interruption{{InstanceID: spot.ID, Kind: cloudprovider.SpotInterruption, At: interruptedAt, Deadline: interruptedAt.Add(DefaultInterruptionGrace)}}
	if diff := cmp.Diff(want, got, ignoreReceipt); diff != "" {
		t.Fatalf("Poll (-want +got):\n%s", diff)
	}
	if again, _ := e.p.Interruptions().Poll(ctx); len(again) != 0 {
		t.Fatalf("second Poll returned %+v", again)
	}
	if err := e.p.Interruptions().Ack(ctx, got); err != nil {
		t.Fatal(err)
	}

	e.step(DefaultInterruptionGrace - time.Second)
	if e.node("spot-node") == nil {
		t.Fatal("spot node reclaimed before the grace ran out")
	}
	e.step(time.Second)
	if e.node("spot-node") != nil || len(e.slicesOf("spot-node")) != 0 {
		t.Fatal("spot node survived the reclaim")
	}
	if _, err := e.p.Get(ctx, spot.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Get of the reclaimed instance: %v", err)
	}
	got, _ = e.p.Interruptions().Poll(ctx)
	want = []cloudprovider.Interruption{{InstanceID: spot.ID, Kind: cloudprovider.StateChange, State: "terminated", At: e.clk.Now(), Deadline: e.clk.Now()}}
	if diff := cmp.Diff(want, got, ignoreReceipt); diff != "" {
		t.Fatalf("Poll after the reclaim (-want +got):\n%s", diff)
	}
	var kinds []string
	for _, ev := range e.events() {
		kinds = append(kinds, string(ev.Kind)+"/"+ev.Reason)
	}
	if diff := cmp.Diff([]string{"launched/", "launched/", "interrupted/", "deleted/spot-reclaimed"}, kinds); diff != "" {
		t.Fatalf("event log (-want +got):\n%s", diff)
	}
	if e.node("od-node") == nil {
		t.Fatal("the on-demand node went with the spot one")
	}
}

// TestDelete removes the Node, its slices and Lease, and logs the deletion once. The node's GPUs
// are the DRA driver's alone: a slice of its one GPU, the deploy labels, no nvidia.com/gpu.
func TestDelete(t *testing.T) {
	e := newEnv(t, nil)
	req := gpuRequest("launch-1", "gpu-node-1")
	req.GPU.DRA = true
	inst := e.create(req)
	e.step(testBootDelay + testDeviceDelay)
	slices := e.slicesOf("gpu-node-1")
	if len(slices) != 1 || len(slices[0].Spec.Devices) != 1 || slices[0].OwnerReferences[0].Name != "gpu-node-1" {
		t.Fatalf("slices %+v", slices)
	}
	n := e.node("gpu-node-1")
	if q := quantity(n.Status.Allocatable, api.ResourceGPU); q != -1 {
		t.Errorf("nvidia.com/gpu = %d beside the DRA driver's slice (one GPU twice)", q)
	}
	if n.Labels[api.LabelDeployDevicePlugin] != "false" || n.Labels[api.LabelDeployDRADriver] != "true" {
		t.Errorf("labels %v, want the device plugin off and the DRA driver on", n.Labels)
	}
	ctx := context.Background()
	if err := e.p.Delete(ctx, inst.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if e.node("gpu-node-1") != nil || len(e.slicesOf("gpu-node-1")) != 0 {
		t.Fatal("node or slices survived Delete")
	}
	if _, err := e.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gpu-node-1", metav1.GetOptions{}); err == nil {
		t.Fatal("lease survived Delete")
	}
	if _, err := e.p.Get(ctx, inst.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := e.p.Delete(ctx, inst.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("second Delete: got %v, want NotFoundError", err)
	}
	events := e.events()
	if CountEvents(events, EventDeleted) != 1 || events[len(events)-1].Reason != ReasonRequested {
		t.Fatalf("events %+v", events)
	}
	// Stepping after the delete does not bring the node back.
	e.step(time.Minute)
	if e.node("gpu-node-1") != nil {
		t.Fatal("Step re-registered a deleted instance")
	}
}

// TestLoseCapacity: an instance the cloud ends for want of capacity, while it boots, leaves List and
// its Node objects at once, with no notice; Get still answers for it, as terminated with
// CapacityLost, and Delete takes it for gone.
func TestLoseCapacity(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	lost := e.create(gpuRequest("launch-1", "gpu-node-1"))
	kept := e.create(gpuRequest("launch-2", "gpu-node-2"))
	if err := e.p.LoseCapacity(ctx, lost.ID); err != nil {
		t.Fatalf("LoseCapacity: %v", err)
	}
	insts, err := e.p.List(ctx)
	if err != nil || len(insts) != 1 || insts[0].ID != kept.ID {
		t.Fatalf("List = %v, %v; want only %s", insts, err, kept.ID)
	}
	got, err := e.p.Get(ctx, lost.ID)
	if err != nil || got.State != cloudprovider.StateTerminated || !got.CapacityLost || got.EndCode != ReasonCapacityLost || got.LaunchID != "launch-1" {
		t.Fatalf("Get = %+v, %v; want launch-1 terminated with capacity lost", got, err)
	}
	if got, err := e.p.Get(ctx, kept.ID); err != nil || got.CapacityLost || got.EndCode != "" {
		t.Fatalf("Get of the kept instance = %+v, %v", got, err)
	}
	if err := e.p.Delete(ctx, lost.ID); !cloudprovider.IsNotFound(err) {
		t.Fatalf("Delete after LoseCapacity: got %v, want NotFoundError", err)
	}
	// Launched again under its launch ID (a restarted controller's retry), the ended instance is
	// the answer, as EC2 answers a repeated client token: nothing is bought twice.
	again, err := e.p.Create(ctx, gpuRequest("launch-1", "gpu-node-1"))
	if err != nil || again.ID != lost.ID || again.State != cloudprovider.StateTerminated {
		t.Fatalf("Create again = %+v, %v; want the ended %s", again, err, lost.ID)
	}
	if err := e.p.LoseCapacity(ctx, "sim-999999"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("LoseCapacity of an unknown instance: got %v, want NotFoundError", err)
	}
	if n, err := e.p.Interruptions().Poll(ctx); err != nil || len(n) != 0 {
		t.Fatalf("notices %v, %v; want none", n, err)
	}
	events := e.events()
	if CountEvents(events, EventDeleted) != 1 || events[len(events)-1].Reason != ReasonCapacityLost {
		t.Fatalf("events %+v", events)
	}
	e.step(testBootDelay + testDeviceDelay)
	if e.node("gpu-node-1") != nil {
		t.Fatal("Step registered an instance whose capacity was lost")
	}
	if e.node("gpu-node-2") == nil {
		t.Fatal("the other instance did not register")
	}
}

// TestRecommendRebalance: a rebalance recommendation is a notice without deadline; the instance
// keeps running past any interruption grace.
func TestRecommendRebalance(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	spot := e.create(gpuRequest("spot", "spot-node"))
	od := gpuRequest("od", "od-node")
	od.Offering = l4OD1b
	onDemand := e.create(od)
	e.step(testBootDelay + testDeviceDelay)
	if err := e.p.RecommendRebalance(onDemand.ID); err == nil || !strings.Contains(err.Error(), "only spot") {
		t.Fatalf("RecommendRebalance of an on-demand instance: got %v", err)
	}
	if err := e.p.RecommendRebalance("sim-999999"); !cloudprovider.IsNotFound(err) {
		t.Fatalf("RecommendRebalance of an unknown instance: got %v", err)
	}
	at := e.clk.Now()
	if err := e.p.RecommendRebalance(spot.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.p.Interruptions().Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []cloudprovider.Interruption{{InstanceID: spot.ID, Kind: cloudprovider.RebalanceRecommendation, At: at}}
	if diff := cmp.Diff(want, got, ignoreReceipt); diff != "" {
		t.Fatalf("Poll (-want +got):\n%s", diff)
	}
	e.step(2 * DefaultInterruptionGrace)
	if e.node("spot-node") == nil {
		t.Fatal("the spot node was reclaimed after a mere rebalance recommendation")
	}
}

// TestPollWithoutNoticesWritesNothing: a poll that hides no notice leaves the state file as it
// is (the controller polls every few seconds; each poll rewrote and synced the whole inventory).
func TestPollWithoutNoticesWritesNothing(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a := e.create(gpuRequest("a", "node-a"))
	e.step(testBootDelay + testDeviceDelay)
	before, err := os.Stat(e.cfg.StatePath)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.p.Interruptions().Poll(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Poll = %+v, %v; want nothing", got, err)
	}
	after, err := os.Stat(e.cfg.StatePath)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("a poll with no notice rewrote the state file")
	}
	// A notice is still hidden in the file, so that a restarted process does not repeat it early.
	if err := e.p.RecommendRebalance(a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.p.Interruptions().Poll(ctx); err != nil || len(got) != 1 {
		t.Fatalf("Poll = %+v, %v; want the notice", got, err)
	}
	if got, err := e.restart().Interruptions().Poll(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Poll after a restart within the visibility timeout = %+v, %v; want nothing", got, err)
	}
}
