package pricing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
)

// DefaultRefreshInterval is how often a Refresher asks its sources by default. Cloud list prices
// change a few times a year and GCP spot prices at most once a day; AWS spot prices move more
// often, but ten minutes keeps API use low and is well inside any provisioning decision's horizon.
const DefaultRefreshInterval = 10 * time.Minute

// RefresherConfig configures a Refresher.
type RefresherConfig struct {
	// Interval is the time between two refreshes in Run; zero means DefaultRefreshInterval.
	Interval time.Duration
	// Clock reads the time and times Run; required. Only cmd/ passes the real one.
	Clock clock.WithTicker
}

// SourceStatus is what a Refresher knows about one live source.
type SourceStatus struct {
	// Name is the source's Name.
	Name string
	// LastSuccess is when the source last answered; zero if it never did.
	LastSuccess time.Time
	// LastError is the error of the last refresh, nil if it succeeded.
	LastError error
	// ConsecutiveFailures counts the failed refreshes since the last success.
	ConsecutiveFailures int
	// Prices is the number of prices of the last good answer.
	Prices int
}

type sourceState struct {
	source Source
	status SourceStatus
	prices []Price
}

// Refresher polls live price sources and keeps the prices to use:
//
//   - A source that fails keeps its last good prices (the Source contract: "an error means the
//     caller keeps the prices it had").
//   - While any live source has never answered, the embedded prices stand in for it: they are the
//     bottom layer, and the good answers of the other sources override them offering by offering.
//     Once every live source has answered, only live prices are used, so a spot price that the
//     cloud no longer lists disappears (see Apply).
//   - When live sources overlap, a later source in the list overrides an earlier one.
//   - An answer with no prices counts as a failure.
//
// A Refresher is safe for concurrent use: Run refreshes while the controller reads Prices.
type Refresher struct {
	clock    clock.WithTicker
	interval time.Duration
	fallback []Price
	// fallbackAt is the newest ObservedAt of the fallback prices: the age of the data standing in
	// for a live source that never answered.
	fallbackAt time.Time

	mu    sync.Mutex
	state []*sourceState
}

// NewRefresher returns a Refresher over the live sources, falling back to embedded. It reads the
// embedded prices once, now; embedded must not fail. Source names must be distinct: they key the
// staleness report.
func NewRefresher(ctx context.Context, embedded Source, live []Source, cfg RefresherConfig) (*Refresher, error) {
	if embedded == nil {
		return nil, fmt.Errorf("price refresher: embedded source is nil")
	}
	fallback, err := embedded.Prices(ctx)
	if err != nil {
		return nil, fmt.Errorf("price refresher: reading embedded prices from %s: %w", embedded.Name(), err)
	}
	if cfg.Clock == nil {
		return nil, fmt.Errorf("price refresher: Clock is nil (the caller passes the clock: package pricing reads none)")
	}
	r := &Refresher{clock: cfg.Clock, interval: cfg.Interval, fallback: fallback}
	if r.interval <= 0 {
		r.interval = DefaultRefreshInterval
	}
	for _, p := range fallback {
		if p.ObservedAt.After(r.fallbackAt) {
			r.fallbackAt = p.ObservedAt
		}
	}
	seen := map[string]bool{embedded.Name(): true}
	for i, s := range live {
		if s == nil {
			return nil, fmt.Errorf("price refresher: live source %d is nil", i)
		}
		if seen[s.Name()] {
			return nil, fmt.Errorf("price refresher: two sources are named %q", s.Name())
		}
		seen[s.Name()] = true
		r.state = append(r.state, &sourceState{source: s, status: SourceStatus{Name: s.Name()}})
	}
	return r, nil
}

// Refresh asks every live source once, in order, and records each answer. It returns the sources'
// errors joined (nil if all answered); a failed source keeps its last good prices, so an error
// here never loses prices. The controller calls it directly in tests; Run calls it on a timer.
func (r *Refresher) Refresh(ctx context.Context) error {
	var errs []error
	for _, st := range r.state {
		prices, err := st.source.Prices(ctx)
		if err == nil && len(prices) == 0 {
			// An empty answer is a broken query, not a fact: no cloud sells nothing.
			err = errors.New("the source returned no prices")
		}
		now := r.clock.Now()
		r.mu.Lock()
		if err != nil {
			st.status.LastError = err
			st.status.ConsecutiveFailures++
			errs = append(errs, fmt.Errorf("refreshing prices from %s: %w", st.status.Name, err))
		} else {
			st.prices = prices
			st.status = SourceStatus{Name: st.status.Name, LastSuccess: now, Prices: len(prices)}
		}
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Run refreshes now and then every interval until ctx is done, and returns ctx's error. A failed
// refresh is reported to onError (which may be nil) and retried at the next tick.
func (r *Refresher) Run(ctx context.Context, onError func(error)) error {
	ticker := r.clock.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		if err := r.Refresh(ctx); err != nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
		}
	}
}

// Prices returns the prices to use now, merged as the Refresher's doc describes and sorted by
// type, zone and capacity type.
func (r *Refresher) Prices() []Price {
	r.mu.Lock()
	defer r.mu.Unlock()
	merged := map[api.Offering]Price{}
	if r.anyNeverSucceededLocked() {
		for _, p := range r.fallback {
			merged[p.Offering] = p
		}
	}
	for _, st := range r.state {
		for _, p := range st.prices {
			merged[p.Offering] = p
		}
	}
	out := make([]Price, 0, len(merged))
	for _, p := range merged {
		out = append(out, p)
	}
	SortPrices(out)
	return out
}

func (r *Refresher) anyNeverSucceededLocked() bool {
	if len(r.state) == 0 {
		return true
	}
	for _, st := range r.state {
		if st.status.LastSuccess.IsZero() {
			return true
		}
	}
	return false
}

// Catalog returns a copy of base carrying the current prices (see Apply).
func (r *Refresher) Catalog(base *catalog.Catalog) *catalog.Catalog {
	return Apply(base, r.Prices())
}

// Staleness returns, per live source name, the age of the prices in use for it: the time since
// its last good refresh, or, for a source that never answered, the age of the embedded data that
// stands in for it (now minus the embedded prices' ObservedAt). The metrics package exports it as
// a gauge; alert when it exceeds a few refresh intervals.
func (r *Refresher) Staleness() map[string]time.Duration {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Duration, len(r.state))
	for _, st := range r.state {
		at := st.status.LastSuccess
		if at.IsZero() {
			at = r.fallbackAt
		}
		out[st.status.Name] = now.Sub(at)
	}
	return out
}

// Status returns what the Refresher knows about each live source, in the order given to
// NewRefresher.
func (r *Refresher) Status() []SourceStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]SourceStatus, len(r.state))
	for i, st := range r.state {
		out[i] = st.status
	}
	return out
}
