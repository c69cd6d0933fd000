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

// TestLaunchRetryDelay: LaunchRetry doubled per failure, capped at LaunchRetryMax.
func TestLaunchRetryDelay(t *testing.T) {
	cfg := Config{LaunchRetry: 5 * time.Second, LaunchRetryMax: time.Minute}
	for attempts, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second,
		4: 40 * time.Second, 5: time.Minute, 6: time.Minute, 1000: time.Minute} {
		if got := launchRetryDelay(cfg, attempts); got != want {
			t.Errorf("after %d failures: %s, want %s", attempts, got, want)
		}
	}
}

// TestConfigValidateLaunchRetry: the retry settings are checked, and errors name the flag.
func TestConfigValidateLaunchRetry(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no retry wait", func(c *Config) { c.LaunchRetry = 0 }, "launch-retry must be positive"},
		{"max below the first wait", func(c *Config) { c.LaunchRetryMax = c.LaunchRetry - 1 }, "launch-retry-max must be at least launch-retry"},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestPokeAfterCoalesces: while a wake-up is pending, a later one starts no goroutine (its
// channel is closed at once: the batch the first wakes asks again); an earlier one does.
func TestPokeAfterCoalesces(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	c := &Controller{clock: clk, trigger: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := c.pokeAfter(ctx, time.Minute)
	select {
	case <-c.pokeAfter(ctx, 2*time.Minute):
	default:
		t.Fatal("a later wake-up started a goroutine of its own")
	}
	earlier := c.pokeAfter(ctx, time.Second)
	select {
	case <-earlier:
		t.Fatal("an earlier wake-up was dropped")
	default:
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return clk.Waiters() == 2, nil }); err != nil {
		t.Fatalf("%d goroutines wait on the clock, want 2", clk.Waiters())
	}
	clk.Step(time.Minute)
	for _, done := range []<-chan struct{}{first, earlier} {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a wake-up did not fire")
		}
	}
	if len(c.trigger) != 1 {
		t.Fatal("not poked")
	}
}
