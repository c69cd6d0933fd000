package provisioner

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPokeAfterStopsWithItsContext: the goroutine a batch starts to look again at GPU pods held
// back (Decision.RecheckAfter) ends with the batch's context, without a poke; left alone, it pokes
// once the delay has passed.
func TestPokeAfterStopsWithItsContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	c := &Controller{clock: clk, trigger: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := c.pokeAfter(ctx, time.Minute)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine outlived its context")
	}
	if len(c.trigger) != 0 {
		t.Fatal("poked after its context ended")
	}

	clk = clocktesting.NewFakeClock(clk.Now()) // without the first goroutine's waiter
	c.clock = clk
	done = c.pokeAfter(context.Background(), time.Minute)
	// The goroutine waits on the clock once it has started: then a minute passes.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil }); err != nil {
		t.Fatalf("the goroutine never waited on the clock: %v", err)
	}
	clk.Step(time.Minute)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no poke a minute later")
	}
	if len(c.trigger) != 1 {
		t.Fatal("not poked")
	}
}
