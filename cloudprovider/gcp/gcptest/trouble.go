package gcptest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Trouble is a window in which the fake Compute Engine is in trouble, as a throttled project or
// a region whose front ends fail is: from From until Until (real time), a share of the matching
// requests is answered with Status and Body (the real wire error: RateLimited, BackendError),
// before or after being served, and every matching request is answered Latency late.
type Trouble struct {
	// From and Until bound the window; a zero From means from SetTrouble. Until must be after From.
	From, Until time.Time
	// Method and PathContains select the requests, as Failure's do; empty matches any.
	Method, PathContains string
	// FailShare is the share of the window's requests that fail, in [0, 1], spread evenly (the
	// k-th fails when ⌊k·share⌋ grows: 1 fails all, 0.5 every second one).
	FailShare float64
	// Status and Body are the failures' answer; Status is required when FailShare > 0.
	Status int
	Body   []byte
	// AfterShare is the share of the failing requests that are served first and answered with
	// the failure only then: the request took effect (an insert started), the answer was lost.
	// The client retries an insert with the same requestId, which the fake, as Compute Engine,
	// answers with the first call's operation.
	AfterShare float64
	// Latency delays every request of the window; a client that gives up first gets no answer.
	Latency time.Duration
}

// RateLimited is Compute Engine's throttling answer: HTTP 429 rateLimitExceeded (recorded).
func RateLimited(t testing.TB) (int, []byte) {
	return http.StatusTooManyRequests, Fixture(t, "error.rateLimitExceeded.json")
}

// BackendError is Compute Engine's transient server failure: HTTP 503 backendError (recorded).
func BackendError(t testing.TB) (int, []byte) {
	return http.StatusServiceUnavailable, Fixture(t, "error.backendError.json")
}

// trouble is the window in force and its counters.
type trouble struct {
	t            Trouble
	seen, failed int
}

// SetTrouble puts the server in trouble (replacing an earlier window). Errors name the field.
func (s *Server) SetTrouble(t Trouble) error {
	if t.From.IsZero() {
		t.From = time.Now()
	}
	switch {
	case !t.Until.After(t.From):
		return errors.New("gcptest trouble: Until must be after From")
	case t.FailShare < 0 || t.FailShare > 1:
		return fmt.Errorf("gcptest trouble: FailShare %g is not in [0, 1]", t.FailShare)
	case t.AfterShare < 0 || t.AfterShare > 1:
		return fmt.Errorf("gcptest trouble: AfterShare %g is not in [0, 1]", t.AfterShare)
	case t.FailShare > 0 && t.Status < 400:
		return errors.New("gcptest trouble: Status must be an error status when FailShare > 0")
	case t.Latency < 0:
		return errors.New("gcptest trouble: Latency must not be negative")
	}
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

// verdict is what the window does to one request.
type verdict struct {
	fail, after bool
	latency     time.Duration
	status      int
	body        []byte
}

// troubleLocked decides what the window in force does to r, arriving at now.
func (s *Server) troubleLocked(r *http.Request, now time.Time) verdict {
	tr := s.trouble
	if tr == nil || now.Before(tr.t.From) || !now.Before(tr.t.Until) ||
		tr.t.Method != "" && tr.t.Method != r.Method || !strings.Contains(r.URL.Path, tr.t.PathContains) {
		return verdict{}
	}
	v := verdict{latency: tr.t.Latency, status: tr.t.Status, body: tr.t.Body}
	v.fail = spread(tr.seen, tr.t.FailShare)
	tr.seen++
	if v.fail {
		v.after = spread(tr.failed, tr.t.AfterShare)
		tr.failed++
	}
	return v
}

// serveInTrouble serves r as the window says: late, failed before or after being served, or as
// usual (serveNow).
func (s *Server) serveInTrouble(w http.ResponseWriter, r *http.Request, body []byte, at time.Time) {
	s.mu.Lock()
	v := s.troubleLocked(r, at)
	s.mu.Unlock()
	if v.latency > 0 {
		t := time.NewTimer(v.latency)
		defer t.Stop()
		select {
		case <-s.closing:
			return
		case <-r.Context().Done():
			s.mu.Lock()
			s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, At: at})
			s.mu.Unlock()
			return // the client went away: no answer
		case <-t.C:
		}
	}
	switch {
	case v.fail && v.after:
		s.serveNow(httptest.NewRecorder(), r, body, at) // served, the answer lost
	case v.fail:
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, At: at})
		s.mu.Unlock()
	default:
		s.serveNow(w, r, body, at)
		return
	}
	writeRaw(w, v.status, v.body)
}

// spread reports whether the k-th event (from 0) is among a share of events spread evenly.
func spread(k int, share float64) bool {
	return share > 0 && int(float64(k+1)*share) > int(float64(k)*share)
}
