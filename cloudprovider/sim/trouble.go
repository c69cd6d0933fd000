package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// CallDelete is the Delete call, which a Trouble window can fail or slow down.
const CallDelete = "Delete"

// Trouble is a cloud API in trouble for a while: from From until Until (the provider's clock), a
// share of the calls named in Calls fail with an *APIError of Code, and every one of them takes
// Latency longer. It is what a throttled account (RequestLimitExceeded for minutes) or a region
// whose front ends answer 5xx and slowly looks like to a client, unlike the one-shot
// APIFailures.
type Trouble struct {
	// From and Until bound the window in the provider's clock; a zero From means from the time
	// InjectTrouble is called. Until must be after From.
	From, Until time.Time
	// Calls are the calls in trouble: CallCreate, CallList, CallDelete; empty means all three.
	Calls []string
	// FailShare is the share of the calls in the window that fail, in [0, 1]: 1 fails every
	// call, 0.5 every second one (deterministically: the k-th call fails when ⌊k·share⌋ grows),
	// 0 none (latency only).
	FailShare float64
	// Code and Message are the failures' (CodeThrottled, CodeInternal); Code is required when
	// FailShare > 0.
	Code, Message string
	// AfterLaunchShare is the share of the failing Creates that fail after the instance was
	// launched, as a front end that times out or answers 5xx after the back end acted does: the
	// caller cannot tell. In [0, 1], spread as FailShare is.
	AfterLaunchShare float64
	// Latency is added to each call in the window before it runs. A call whose context ends
	// first returns at once with the context's error (and does nothing).
	Latency time.Duration
}

// TroubleCall is one call made while a Trouble window was open.
type TroubleCall struct {
	// Call is CallCreate, CallList or CallDelete; At is when it arrived (provider's clock).
	Call string
	At   time.Time
	// LaunchID is the launch a Create was for.
	LaunchID string
	// Failed reports the call was failed with the trouble's code; Canceled that its context
	// ended during the added latency.
	Failed, Canceled bool
}

// troubleState is the injected window and what happened in it.
type troubleState struct {
	t    *Trouble
	seen int // calls of the window, for FailShare
	// failedCreates counts the failed Creates, for AfterLaunchShare.
	failedCreates int
	calls         []TroubleCall
}

// InjectTrouble opens a trouble window (replacing any earlier one). Errors name the bad field.
func (p *Provider) InjectTrouble(t Trouble) error {
	if t.From.IsZero() {
		t.From = p.clk.Now()
	}
	for i, c := range t.Calls {
		if c != CallCreate && c != CallList && c != CallDelete {
			return fmt.Errorf("sim trouble: Calls[%d] is %q, want %s, %s or %s", i, c, CallCreate, CallList, CallDelete)
		}
	}
	switch {
	case !t.Until.After(t.From):
		return errors.New("sim trouble: Until must be after From")
	case t.FailShare < 0 || t.FailShare > 1:
		return fmt.Errorf("sim trouble: FailShare %g is not in [0, 1]", t.FailShare)
	case t.FailShare > 0 && t.Code == "":
		return errors.New("sim trouble: Code is required when FailShare > 0")
	case t.Latency < 0:
		return errors.New("sim trouble: Latency must not be negative")
	case t.AfterLaunchShare < 0 || t.AfterLaunchShare > 1:
		return fmt.Errorf("sim trouble: AfterLaunchShare %g is not in [0, 1]", t.AfterLaunchShare)
	case t.AfterLaunchShare > 0 && t.Calls != nil && !slices.Contains(t.Calls, CallCreate):
		return errors.New("sim trouble: AfterLaunchShare needs Create among Calls")
	}
	t.Calls = slices.Clone(t.Calls)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trouble = &troubleState{t: &t}
	return nil
}

// ClearTrouble closes the trouble window at once; TroubleCalls still returns its calls.
func (p *Provider) ClearTrouble() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trouble != nil {
		t := *p.trouble.t
		if now := p.clk.Now(); now.Before(t.Until) {
			t.Until = now
		}
		p.trouble.t = &t
	}
}

// TroubleCalls returns the calls made while the last trouble window was open, in arrival order.
func (p *Provider) TroubleCalls() []TroubleCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trouble == nil {
		return nil
	}
	return slices.Clone(p.trouble.calls)
}

// troubleVerdict is what the trouble window does to one call.
type troubleVerdict struct {
	err         *APIError
	afterLaunch bool
}

// inTrouble applies the trouble window to a call arriving now: it waits out the latency (or
// returns ctx's error when ctx ends first) and says whether the call fails.
func (p *Provider) inTrouble(ctx context.Context, call, launchID string) (troubleVerdict, error) {
	p.mu.Lock()
	ts := p.trouble
	now := p.clk.Now()
	if ts == nil || now.Before(ts.t.From) || !now.Before(ts.t.Until) || len(ts.t.Calls) > 0 && !slices.Contains(ts.t.Calls, call) {
		p.mu.Unlock()
		return troubleVerdict{}, nil
	}
	var v troubleVerdict
	k := ts.seen
	ts.seen++
	if spread(k, ts.t.FailShare) {
		v.err = &APIError{Code: ts.t.Code, Message: ts.t.Message}
		if call == CallCreate {
			v.afterLaunch = spread(ts.failedCreates, ts.t.AfterLaunchShare)
			ts.failedCreates++
		}
	}
	index := len(ts.calls)
	ts.calls = append(ts.calls, TroubleCall{Call: call, At: now, LaunchID: launchID, Failed: v.err != nil})
	latency := ts.t.Latency
	p.mu.Unlock()
	if latency <= 0 {
		return v, nil
	}
	select {
	case <-ctx.Done():
		p.mu.Lock()
		ts.calls[index].Canceled = true
		p.mu.Unlock()
		return v, ctx.Err()
	case <-p.clk.After(latency):
		return v, nil
	}
}

// troubleFails applies the trouble window to a List or Delete call: the context's error when it
// ended during the latency, the injected *APIError when the call fails, else nil.
func (p *Provider) troubleFails(ctx context.Context, call string) error {
	v, err := p.inTrouble(ctx, call, "")
	if err != nil {
		return err
	}
	if v.err != nil {
		return v.err
	}
	return nil
}

// spread reports whether the k-th event (from 0) is among a share of events spread evenly: it is
// when ⌊(k+1)·share⌋ grows, so 1 takes all, 0.5 every second one (the 2nd, 4th, ...), 0 none.
func spread(k int, share float64) bool {
	return share > 0 && int(float64(k+1)*share) > int(float64(k)*share)
}
