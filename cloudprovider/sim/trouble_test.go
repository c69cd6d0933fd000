package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// TestTroubleWindow: from From to Until (the provider's clock) every second Create fails with
// the window's code; failures after the launch leave the instance, which the retry with the same
// launch ID (after the window) returns without a second launch. List and Delete outside Calls are untouched, calls
// outside the window too, and TroubleCalls lists exactly the window's calls.
func TestTroubleWindow(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.p.InjectTrouble(Trouble{From: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute), Calls: []string{CallCreate},
		FailShare: 0.5, Code: CodeThrottled, Message: "rate exceeded", AfterLaunchShare: 1}); err != nil {
		t.Fatal(err)
	}
	e.create(gpuRequest("before", "node-before")) // before the window
	e.clk.Step(time.Minute)
	var apiErr *APIError
	var failed []int
	for i := range 6 {
		_, err := e.p.Create(ctx, gpuRequest(named("w", i), named("node-w", i)))
		switch {
		case err == nil:
		case errors.As(err, &apiErr) && apiErr.Code == CodeThrottled && !cloudprovider.IsQuota(err) && !cloudprovider.IsInsufficientCapacity(err):
			failed = append(failed, i)
		default:
			t.Fatalf("Create %d: %v", i, err)
		}
	}
	if len(failed) != 3 || failed[0] != 1 {
		t.Errorf("Creates %v failed, want 1, 3 and 5 (FailShare 0.5)", failed)
	}
	if insts, err := e.p.List(ctx); err != nil || len(insts) != 7 {
		t.Fatalf("List in the window (not in Calls): %d instances, %v; want 7 (the failures launched)", len(insts), err)
	}
	calls := e.p.TroubleCalls()
	if len(calls) != 6 {
		t.Fatalf("%d calls in the window, want the 6 Creates: %+v", len(calls), calls)
	}
	for _, c := range calls {
		if c.Call != CallCreate || !c.At.Equal(t0.Add(time.Minute)) || c.LaunchID == "" {
			t.Errorf("call %+v, want a Create of the window with its launch ID", c)
		}
	}
	e.clk.Step(2 * time.Minute) // the window ends
	for _, i := range failed {
		e.create(gpuRequest(named("w", i), named("node-w", i))) // the retry: the instance the failed call launched
	}
	for i := range 4 {
		e.create(gpuRequest(named("after", i), named("node-after", i)))
	}
	if n := CountEvents(e.events(), EventLaunched); n != 11 {
		t.Errorf("%d launches logged, want 11: a failed-after-launch Create retried must not launch twice", n)
	}
	if n := len(e.p.TroubleCalls()); n != 6 {
		t.Errorf("%d calls logged after the window, want still 6", n)
	}
}

// TestTroubleEveryCallAndClear: a window over every call fails List, Delete and Create alike
// (FailShare 1), launching nothing; ClearTrouble ends it at once.
func TestTroubleEveryCallAndClear(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	inst := e.create(gpuRequest("a", "node-a"))
	if err := e.p.InjectTrouble(Trouble{Until: t0.Add(time.Hour), FailShare: 1, Code: CodeInternal, Message: "we are down"}); err != nil {
		t.Fatal(err)
	}
	var apiErr *APIError
	if _, err := e.p.Create(ctx, gpuRequest("b", "node-b")); !errors.As(err, &apiErr) || apiErr.Code != CodeInternal {
		t.Errorf("Create: %v, want %s", err, CodeInternal)
	}
	if _, err := e.p.List(ctx); !errors.As(err, &apiErr) {
		t.Errorf("List: %v, want %s", err, CodeInternal)
	}
	if err := e.p.Delete(ctx, inst.ID); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), inst.ID) {
		t.Errorf("Delete: %v, want %s naming the instance", err, CodeInternal)
	}
	e.p.ClearTrouble()
	insts, err := e.p.List(ctx)
	if err != nil || len(insts) != 1 || insts[0].ID != inst.ID {
		t.Fatalf("after ClearTrouble: %v, %v; want only instance a (the failed Create launched nothing)", insts, err)
	}
	if err := e.p.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got := len(e.p.TroubleCalls()); got != 3 {
		t.Errorf("%d calls in the window, want 3", got)
	}
}

// TestTroubleLatencyHonoursContext: a slow window holds each call for Latency of the provider's
// clock; a call whose context ends meanwhile returns at once with the context's error and
// launches nothing; one that waits the latency out launches.
func TestTroubleLatencyHonoursContext(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.p.InjectTrouble(Trouble{Until: t0.Add(time.Hour), Calls: []string{CallCreate}, Latency: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.p.Create(ctx, gpuRequest("a", "node-a"))
		errc <- err
	}()
	waitWaiters(t, e)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Create: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled Create did not return")
	}
	if calls := e.p.TroubleCalls(); len(calls) != 1 || !calls[0].Canceled {
		t.Errorf("calls %+v, want one cancelled", calls)
	}
	e.clk.Step(30 * time.Second) // fires the cancelled call's timer: no waiter left
	if e.clk.HasWaiters() {
		t.Fatal("a waiter is left")
	}
	go func() {
		_, err := e.p.Create(context.Background(), gpuRequest("b", "node-b"))
		errc <- err
	}()
	waitWaiters(t, e)
	e.clk.Step(29 * time.Second)
	select {
	case err := <-errc:
		t.Fatalf("Create returned (%v) before its latency", err)
	default:
	}
	e.clk.Step(time.Second)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Create did not return after its latency")
	}
	if n := CountEvents(e.events(), EventLaunched); n != 1 {
		t.Errorf("%d launches, want 1 (b)", n)
	}
}

// waitWaiters waits until a call waits on the fake clock.
func waitWaiters(t *testing.T, e *env) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return e.clk.HasWaiters(), nil }); err != nil {
		t.Fatal("no call waits on the clock")
	}
}

// TestTroubleValidation: bad windows are refused, naming the field.
func TestTroubleValidation(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct {
		t    Trouble
		want string
	}{
		{Trouble{Until: t0.Add(-time.Second)}, "Until"},
		{Trouble{Until: t0.Add(time.Hour), Calls: []string{"Get"}}, "Calls[0]"},
		{Trouble{Until: t0.Add(time.Hour), FailShare: 1.5, Code: CodeThrottled}, "FailShare"},
		{Trouble{Until: t0.Add(time.Hour), FailShare: 1}, "Code"},
		{Trouble{Until: t0.Add(time.Hour), Latency: -time.Second}, "Latency"},
		{Trouble{Until: t0.Add(time.Hour), Calls: []string{CallList}, AfterLaunchShare: 1}, "AfterLaunch"},
	} {
		if err := e.p.InjectTrouble(c.t); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.t, err, c.want)
		}
	}
}

func named(prefix string, i int) string { return prefix + "-" + string(rune('a'+i)) }
