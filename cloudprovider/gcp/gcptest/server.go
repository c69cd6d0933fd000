package gcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request the server received.
type Request struct {
	Method string
	// Path is the URL path, e.g. /compute/v1/projects/p/zones/z/instances.
	Path  string
	Query url.Values
	Body  []byte
	// At is when the request arrived.
	At time.Time
}

// Failure is a canned HTTP error returned instead of the normal answer to matching requests.
type Failure struct {
	// Method and PathContains select the requests; empty matches any.
	Method       string
	PathContains string
	// Status and Body are the answer, e.g. 429 and the error.rateLimitExceeded.json fixture.
	Status int
	Body   []byte
	// Times is how many requests fail; 0 means all of them.
	Times int
}

// Server is the fake. Its zero value is not usable; call NewServer.
type Server struct {
	// URL is the endpoint to give the SDK clients.
	URL     string
	project string
	t       testing.TB

	mu       sync.Mutex
	requests []Request
	failures []*Failure
	compute  computeState
	skuPages [][]byte
	trouble  *trouble
	// closing ends the trouble latencies when the test ends: the Compute clients' List requests
	// carry no context (gcpapi.Collect), so their clients never hang up on a slow answer.
	closing chan struct{}
}

// NewServer starts a fake for project, serving the recorded machine types, accelerator types and
// SKU pages, with no instances. It is closed when the test ends.
func NewServer(t testing.TB, project string) *Server {
	t.Helper()
	s := &Server{project: project, t: t, closing: make(chan struct{})}
	s.compute = newComputeState(t)
	s.skuPages = [][]byte{Fixture(t, "cloudbilling.skus.list.page1.json"), Fixture(t, "cloudbilling.skus.list.page2.json")}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.closing) }) // before Close, which waits for the handlers
	s.URL = srv.URL
	return s
}

// Fail adds a canned failure; failures are matched in the order they were added.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, &f)
}

// SetSKUPages replaces the pages of the SKU list; page i's nextPageToken leads to page i+1.
func (s *Server) SetSKUPages(pages ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skuPages = pages
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the requests with the given method whose path ends with suffix.
func (s *Server) RequestsTo(method, suffix string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.serveInTrouble(w, r, body, time.Now())
}

// serveNow records and answers a request: a canned failure (Fail), or the fake's answer.
func (s *Server) serveNow(w http.ResponseWriter, r *http.Request, body []byte, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, At: at})
	if f := s.matchFailureLocked(r); f != nil {
		writeRaw(w, f.Status, f.Body)
		return
	}
	computePrefix := "/compute/v1/projects/" + s.project + "/"
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/compute/v1/projects/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 5 && parts[1] == "global" && parts[2] == "images" && parts[3] == "family":
		s.serveImageFamilyLocked(w, parts[0], parts[4]) // any project: image projects are public
	case strings.HasPrefix(r.URL.Path, computePrefix):
		s.serveComputeLocked(w, r, strings.Split(strings.TrimPrefix(r.URL.Path, computePrefix), "/"), body)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/services/") && strings.HasSuffix(r.URL.Path, "/skus"):
		servePage(w, r, s.skuPages)
	default:
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("the fake has no route for %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) matchFailureLocked(r *http.Request) *Failure {
	for i, f := range s.failures {
		if (f.Method != "" && f.Method != r.Method) || !strings.Contains(r.URL.Path, f.PathContains) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.failures = append(s.failures[:i:i], s.failures[i+1:]...)
			}
		}
		return f
	}
	return nil
}

// servePage answers a paginated list from recorded pages. The token that leads to page i+1 is the
// nextPageToken recorded in page i, or "fake-page-<i+1>" when the page has none; the last page is
// served without a token.
func servePage(w http.ResponseWriter, r *http.Request, pages [][]byte) {
	token := r.URL.Query().Get("pageToken")
	for i := range pages {
		if i > 0 && pageToken(pages[i-1], i) != token || i == 0 && token != "" {
			continue
		}
		page := decodeJSON(pages[i])
		if page == nil {
			writeRaw(w, http.StatusOK, pages[i]) // malformed on purpose: serve it as it is
			return
		}
		delete(page, "nextPageToken")
		if i+1 < len(pages) {
			page["nextPageToken"] = pageToken(pages[i], i+1)
		}
		writeJSON(w, page)
		return
	}
	writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("unknown pageToken %q", token))
}

func pageToken(page []byte, next int) string {
	if m := decodeJSON(page); m != nil {
		if tok, _ := m["nextPageToken"].(string); tok != "" {
			return tok
		}
	}
	return fmt.Sprintf("fake-page-%d", next)
}

func decodeJSON(b []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep int64 and float values exactly as recorded
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

func writeJSON(w http.ResponseWriter, v any) { writeJSONStatus(w, http.StatusOK, v) }

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":500,"message":"the fake could not encode its answer"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes the googleapi error envelope, the shape of the error.*.json fixtures.
func writeError(w http.ResponseWriter, status int, reason, message string) {
	writeJSONStatus(w, status, map[string]any{"error": map[string]any{
		"code": status, "message": message,
		"errors": []any{map[string]any{"message": message, "domain": "global", "reason": reason}},
	}})
}

// selfLink returns the full URL of a project resource, as the API writes it.
func (s *Server) selfLink(path string) string {
	return "https://www.googleapis.com/compute/v1/projects/" + s.project + "/" + path
}
