package awstest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Trouble is a window in which the fake EC2 endpoint is in trouble, as a throttled account or a
// region whose front ends fail is: from From until Until (the server's clock, real time), a share
// of the requests for Actions is answered with Error (the real wire error: Throttled, Internal),
// every one of them is answered Latency late, and a share of the CreateFleet requests launches
// fewer instances than asked, with an errorSet item for the rest (PartialFleetShare; the
// FleetStore honours it).
type Trouble struct {
	// From and Until bound the window; a zero From means from SetTrouble. Until must be after From.
	From, Until time.Time
	// Actions are the EC2 actions in trouble; empty means every action.
	Actions []string
	// FailShare is the share of the window's requests answered with Error, in [0, 1], spread
	// evenly (the k-th request fails when ⌊k·share⌋ grows: 1 fails all, 0.5 every second one).
	FailShare float64
	// Error is the failures' answer (Throttled, Internal); required when FailShare > 0.
	Error Response
	// AfterShare is the share of the failing requests that are served first and answered with
	// Error only then: the request took effect (an instance launched), the answer was lost. The
	// SDK retries such a request as any other, with the same ClientToken.
	AfterShare float64
	// PartialFleetShare is the share of the window's CreateFleet requests (that do not fail) the
	// FleetStore answers with one instance fewer than asked (none for a fleet of one) and an
	// InsufficientInstanceCapacity errorSet item for each override instead.
	PartialFleetShare float64
	// Latency delays every request of the window; a client that gives up first (its context
	// ended) gets no answer.
	Latency time.Duration
}

// Throttled is EC2's throttling answer: HTTP 503 RequestLimitExceeded.
func Throttled() Response {
	return EC2Error(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
}

// Internal is EC2's server-side failure: HTTP 500 InternalError.
func Internal() Response {
	return EC2Error(http.StatusInternalServerError, "InternalError", "An internal error has occurred.")
}

// trouble is the window in force and its counters.
type trouble struct {
	t                    Trouble
	seen, failed, fleets int
}

// SetTrouble puts the server in trouble (replacing an earlier window). Errors name the field.
func (s *Server) SetTrouble(t Trouble) error {
	if t.From.IsZero() {
		t.From = time.Now()
	}
	for name, share := range map[string]float64{"FailShare": t.FailShare, "AfterShare": t.AfterShare, "PartialFleetShare": t.PartialFleetShare} {
		if share < 0 || share > 1 {
			return fmt.Errorf("awstest trouble: %s %g is not in [0, 1]", name, share)
		}
	}
	switch {
	case !t.Until.After(t.From):
		return errors.New("awstest trouble: Until must be after From")
	case t.FailShare > 0 && t.Error.Status < 400:
		return errors.New("awstest trouble: Error must be an error answer when FailShare > 0")
	case t.Latency < 0:
		return errors.New("awstest trouble: Latency must not be negative")
	}
	t.Actions = slices.Clone(t.Actions)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trouble = &trouble{t: t}
	return nil
}

// ClearTrouble ends the trouble window at once.
func (s *Server) ClearTrouble() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trouble = nil
}

// verdict is what the trouble window does to one request.
type verdict struct {
	fail, after, partial bool
	latency              time.Duration
	err                  Response
}

// troubleLocked decides what the window in force does to req, arriving at now.
func (s *Server) troubleLocked(req Request, now time.Time) verdict {
	tr := s.trouble
	if tr == nil || now.Before(tr.t.From) || !now.Before(tr.t.Until) || len(tr.t.Actions) > 0 && !slices.Contains(tr.t.Actions, req.Action) {
		return verdict{}
	}
	v := verdict{latency: tr.t.Latency, err: tr.t.Error}
	v.fail = spread(tr.seen, tr.t.FailShare)
	tr.seen++
	switch {
	case v.fail:
		v.after = spread(tr.failed, tr.t.AfterShare)
		tr.failed++
	case req.Action == "CreateFleet":
		v.partial = spread(tr.fleets, tr.t.PartialFleetShare)
		tr.fleets++
	}
	return v
}

// spread reports whether the k-th event (from 0) is among a share of events spread evenly.
func spread(k int, share float64) bool {
	return share > 0 && int(float64(k+1)*share) > int(float64(k)*share)
}
