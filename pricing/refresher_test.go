package pricing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/testwait"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
)

// fakeSource answers from a script: each call takes the next answer, and the last one repeats.
// It records how many times it was called.
type fakeSource struct {
	name string

	mu      sync.Mutex
	answers []answer
	calls   int
}

type answer struct {
	prices []Price
	err    error
}

func (f *fakeSource) Name() string { return f.name }

func (f *fakeSource) Prices(context.Context) ([]Price, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.answers[min(f.calls, len(f.answers)-1)]
	f.calls++
	return a.prices, a.err
}

func (f *fakeSource) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func gpuPrice(zone string, ct api.CapacityType, v float64) Price {
	return Price{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "gpu", Zone: zone, CapacityType: ct}, PricePerHour: v}}
}

func newTestRefresher(t *testing.T, clk *clocktesting.FakeClock, live ...Source) *Refresher {
	t.Helper()
	embedded, err := NewEmbeddedSource(testCatalog(), observed)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRefresher(context.Background(), embedded, live, RefresherConfig{Interval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// spotOffering returns the price of gpu's spot offering in zone, or 0 when it is gone.
func spotOffering(cat *catalog.Catalog, zone string) float64 {
	gpu, _ := cat.Type("gpu")
	for _, o := range gpu.Offerings {
		if o.Zone == zone && o.CapacityType == api.Spot {
			return o.PricePerHour
		}
	}
	return 0
}

func TestRefresherFallsBackKeepsLastGoodAndReportsStaleness(t *testing.T) {
	boom := errors.New("billing API down")
	live := &fakeSource{name: "gcp", answers: []answer{
		{err: boom}, // 1: never succeeded yet → embedded
		{prices: []Price{gpuPrice("r-a", api.Spot, 0.3)}}, // 2: good
		{err: boom}, // 3: failure → keep answer 2
	}}
	start := observed.Add(48 * time.Hour)
	clk := clocktesting.NewFakeClock(start)
	r := newTestRefresher(t, clk, live)
	ctx := context.Background()

	// Refresh 1 fails: the embedded prices are used and the staleness is the embedded data's age.
	if err := r.Refresh(ctx); !errors.Is(err, boom) {
		t.Fatalf("Refresh 1 = %v, want %v", err, boom)
	}
	cat := r.Catalog(testCatalog())
	if got := spotOffering(cat, "r-b"); got != 0.5 {
		t.Errorf("after a failure with no success, r-b spot = %v, want embedded 0.5", got)
	}
	if d := cmp.Diff(map[string]time.Duration{"gcp": 48 * time.Hour}, r.Staleness()); d != "" {
		t.Errorf("staleness (-want +got):\n%s", d)
	}

	// Refresh 2 succeeds: only live prices now; the spot offering the source did not price goes.
	clk.Step(time.Minute)
	if err := r.Refresh(ctx); err != nil {
		t.Fatalf("Refresh 2: %v", err)
	}
	cat = r.Catalog(testCatalog())
	if a, b := spotOffering(cat, "r-a"), spotOffering(cat, "r-b"); a != 0.3 || b != 0 {
		t.Errorf("after success, spot r-a=%v r-b=%v, want 0.3 and gone", a, b)
	}

	// Refresh 3 fails 5 minutes later: the last good prices stay, and staleness grows.
	clk.Step(5 * time.Minute)
	if err := r.Refresh(ctx); err == nil {
		t.Fatalf("Refresh 3 did not fail")
	}
	if got := spotOffering(r.Catalog(testCatalog()), "r-a"); got != 0.3 {
		t.Errorf("after a failure, r-a spot = %v, want last good 0.3", got)
	}
	if d := cmp.Diff(map[string]time.Duration{"gcp": 5 * time.Minute}, r.Staleness()); d != "" {
		t.Errorf("staleness (-want +got):\n%s", d)
	}
	st := r.Status()[0]
	if st.ConsecutiveFailures != 1 || !errors.Is(st.LastError, boom) || !st.LastSuccess.Equal(start.Add(time.Minute)) || st.Prices != 1 {
		t.Errorf("status = %+v", st)
	}
}

func TestRefresherMergesSources(t *testing.T) {
	onDemand := &fakeSource{name: "od", answers: []answer{{prices: []Price{
		gpuPrice("r-a", api.OnDemand, 2.0), gpuPrice("r-a", api.Spot, 0.9),
	}}}}
	spot := &fakeSource{name: "spot", answers: []answer{
		{err: errors.New("throttled")},
		{prices: []Price{gpuPrice("r-a", api.Spot, 0.2)}},
	}}
	clk := clocktesting.NewFakeClock(observed)
	r := newTestRefresher(t, clk, onDemand, spot)
	ctx := context.Background()

	// od answered, spot never did: embedded prices are the bottom layer, od overrides them.
	_ = r.Refresh(ctx)
	got := r.Prices()
	want := []Price{
		{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "cpu", Zone: "r-a", CapacityType: api.OnDemand}, PricePerHour: 0.1}, ObservedAt: observed},
		gpuPrice("r-a", api.OnDemand, 2.0),
		gpuPrice("r-a", api.Spot, 0.9),
		{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "gpu", Zone: "r-b", CapacityType: api.OnDemand}, PricePerHour: 1.1}, ObservedAt: observed},
		{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "gpu", Zone: "r-b", CapacityType: api.Spot}, PricePerHour: 0.5}, ObservedAt: observed},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prices with one source down (-want +got):\n%s", d)
	}

	// Both answered: live prices only, the later source wins on overlap.
	_ = r.Refresh(ctx)
	want = []Price{gpuPrice("r-a", api.OnDemand, 2.0), gpuPrice("r-a", api.Spot, 0.2)}
	if d := cmp.Diff(want, r.Prices()); d != "" {
		t.Errorf("prices with both up (-want +got):\n%s", d)
	}
}

func TestRefresherTreatsAnEmptyAnswerAsAFailure(t *testing.T) {
	live := &fakeSource{name: "gcp", answers: []answer{{prices: nil}}}
	r := newTestRefresher(t, clocktesting.NewFakeClock(observed), live)
	if err := r.Refresh(context.Background()); err == nil {
		t.Fatalf("Refresh accepted an empty answer")
	}
	if got := len(r.Prices()); got != 5 {
		t.Errorf("got %d prices, want the 5 embedded ones", got)
	}
}

func TestRefresherRunTicksOnTheClock(t *testing.T) {
	live := &fakeSource{name: "gcp", answers: []answer{{prices: []Price{gpuPrice("r-a", api.Spot, 0.3)}}}}
	clk := clocktesting.NewFakeClock(observed)
	r := newTestRefresher(t, clk, live)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()

	waitFor(t, func() bool { return live.callCount() == 1 && clk.HasWaiters() })
	clk.Step(59 * time.Second) // not yet
	if live.callCount() != 1 {
		t.Fatalf("refreshed before the interval")
	}
	clk.Step(time.Second)
	waitFor(t, func() bool { return live.callCount() == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

func TestNewRefresherRejectsBadInput(t *testing.T) {
	embedded, _ := NewEmbeddedSource(testCatalog(), observed)
	ctx := context.Background()
	tests := []struct {
		name     string
		embedded Source
		live     []Source
		noClock  bool
	}{
		{"nil clock", embedded, nil, true},
		{"nil embedded", nil, nil, false},
		{"nil live source", embedded, []Source{nil}, false},
		{"duplicate names", embedded, []Source{&fakeSource{name: "gcp"}, &fakeSource{name: "gcp"}}, false},
		{"live named like embedded", embedded, []Source{&fakeSource{name: "embedded"}}, false},
		{"failing embedded", &fakeSource{name: "e", answers: []answer{{err: errors.New("x")}}}, nil, false},
	}
	if _, err := NewRefresher(ctx, embedded, nil, RefresherConfig{Clock: clocktesting.NewFakeClock(observed)}); err != nil {
		t.Fatalf("the good input fails: %v", err)
	}
	for _, tc := range tests {
		cfg := RefresherConfig{Clock: clocktesting.NewFakeClock(observed)}
		if tc.noClock {
			cfg.Clock = nil
		}
		if _, err := NewRefresher(ctx, tc.embedded, tc.live, cfg); err == nil {
			t.Errorf("%s: NewRefresher did not fail", tc.name)
		}
	}
}

// waitFor polls cond for up to 5 s: Run works in its own goroutine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.Until(t, time.Millisecond, "the condition", 5*time.Second, cond)
}
