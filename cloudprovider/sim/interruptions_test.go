package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/cloudprovider"
)

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
	want := []cloudprovider.Interruption{{InstanceID: spot.ID, Kind: cloudprovider.SpotInterruption, At: interruptedAt}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Poll (-want +got):\n%s", diff)
	}
	if again, _ := e.p.Interruptions().Poll(ctx); len(again) != 0 {
		t.Fatalf("second Poll returned %+v", again)
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
	want = []cloudprovider.Interruption{{InstanceID: spot.ID, Kind: cloudprovider.StateChange, State: "terminated", At: e.clk.Now()}}
	if diff := cmp.Diff(want, got); diff != "" {
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
