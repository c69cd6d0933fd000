package promsource

import (
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/forecast"
)

func TestAgainstPrometheus(t *testing.T) {
	// Three weeks of NYC taxi at 30 minutes: 1008 samples in 2014, queried like production.
	srv := startPrometheus(t, "tune/nab/nyc_taxi.csv", 3*forecast.Week)
	c, err := New(Config{Address: srv.URL, Timeout: 10 * time.Second, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start, end, step := srv.Trace.Start, srv.Trace.TimeAt(srv.Trace.Len()-1), srv.Trace.Step
	ctx := context.Background()

	t.Run("query_range returns the trace", func(t *testing.T) {
		got, err := c.QueryRange(ctx, `tiler_trace_value{trace="nyc_taxi"}`, start, end, step)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(srv.Trace.Values, got.Values); diff != "" {
			t.Errorf("values differ from the trace (-want +got):\n%s", diff)
		}
	})

	t.Run("errors are typed", func(t *testing.T) {
		tests := []struct {
			name  string
			query string
			want  ErrorKind
		}{
			{"bad PromQL", `sum(tiler_trace_value`, KindBadQuery},
			{"unknown function", `nosuchfunc(tiler_trace_value)`, KindBadQuery},
			{"no such metric", `tiler_no_such_metric`, KindEmpty},
			{"several series", `tiler_trace_copy`, KindMultipleSeries},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := c.QueryRange(ctx, tt.query, start, end, step)
				if got := KindOf(err); got != tt.want {
					t.Fatalf("QueryRange(%q) error = %v, want kind %s", tt.query, err, tt.want)
				}
				if _, err := c.Query(ctx, tt.query, end); KindOf(err) != tt.want {
					t.Errorf("Query(%q) error = %v, want kind %s", tt.query, err, tt.want)
				}
			})
		}
	})

	t.Run("instant query", func(t *testing.T) {
		// sum over the two copies (each 2× the trace) is 4× the last value.
		got, err := c.Query(ctx, `sum(tiler_trace_copy)`, end)
		if err != nil {
			t.Fatal(err)
		}
		if want := 4 * srv.Trace.Values[srv.Trace.Len()-1]; got != want {
			t.Errorf("Query = %g, want %g", got, want)
		}
	})

	t.Run("long ranges are split under the points limit", func(t *testing.T) {
		// One-minute steps over three weeks are 30,241 points: four requests.
		got, err := c.QueryRange(ctx, `tiler_trace_value`, start, end, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got.Len() != int(end.Sub(start)/time.Minute)+1 || math.IsNaN(got.Values[got.Len()-1]) {
			t.Errorf("got %d points, last %g", got.Len(), got.Values[got.Len()-1])
		}
	})

	t.Run("history feeds the forecaster", func(t *testing.T) {
		hist, err := c.QueryRange(ctx, `tiler_trace_value`, start, end, step)
		if err != nil {
			t.Fatal(err)
		}
		now := end.Add(step)
		fc, err := forecast.Predict(hist, now, forecast.Options{Horizon: 15 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if fc.Period == forecast.PeriodNone || !(fc.Upper >= fc.Point) || !(fc.Point > 0) {
			t.Errorf("forecast = %+v, want a seasonal model with Upper ≥ Point > 0", fc)
		}
	})
}

func TestUnreachableAndTimeout(t *testing.T) {
	// No server: these run under -short too.
	tests := []struct {
		name    string
		address string
		timeout time.Duration
		want    ErrorKind
	}{
		// Nothing listens on a port just released.
		{"connection refused", "http://" + freeAddr(t), time.Second, KindUnavailable},
		{"client deadline", "http://" + freeAddr(t), time.Nanosecond, KindTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{Address: tt.address, Timeout: tt.timeout, Retries: 2, Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Query(context.Background(), "up", time.Unix(0, 0))
			if KindOf(err) != tt.want || !IsUnavailable(err) {
				t.Errorf("error = %v, want kind %s", err, tt.want)
			}
		})
	}
}

// scriptedTransport answers each request with the next status and body of its script (the last
// one repeats) and counts the requests.
type scriptedTransport struct {
	mu      sync.Mutex
	answers []scriptedAnswer
	calls   int
}

type scriptedAnswer struct {
	status int
	body   string
}

func (s *scriptedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	return &http.Response{StatusCode: a.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(a.body)), Request: r}, nil
}

func (s *scriptedTransport) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestRetries: transient failures are retried Retries times, a rejected query never, and a
// success after a failure is returned; the final error keeps its kind.
func TestRetries(t *testing.T) {
	serverError := scriptedAnswer{http.StatusInternalServerError, `{"status":"error","errorType":"server_error","error":"boom"}`}
	badData := scriptedAnswer{http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"parse error"}`}
	scalar := scriptedAnswer{http.StatusOK, `{"status":"success","data":{"resultType":"scalar","result":[0,"42"]}}`}
	tests := []struct {
		name      string
		retries   int
		answers   []scriptedAnswer
		canceled  bool
		wantKind  ErrorKind // "" for success
		wantCalls int
	}{
		{"server errors are retried twice", 2, []scriptedAnswer{serverError}, false, KindUnavailable, 3},
		{"negative Retries means one attempt", -1, []scriptedAnswer{serverError}, false, KindUnavailable, 1},
		{"a success after failures is returned", 2, []scriptedAnswer{serverError, serverError, scalar}, false, "", 3},
		{"bad PromQL is not retried", 2, []scriptedAnswer{badData}, false, KindBadQuery, 1},
		{"a canceled context makes no call", 2, []scriptedAnswer{scalar}, true, KindUnavailable, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &scriptedTransport{answers: tt.answers}
			c, err := New(Config{Address: "http://prometheus.invalid", Timeout: time.Second, Retries: tt.retries,
				Backoff: time.Millisecond, RoundTripper: rt})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.canceled {
				cancel()
			}
			got, err := c.Query(ctx, "up", time.Unix(0, 0))
			if KindOf(err) != tt.wantKind || tt.wantKind == "" && (err != nil || got != 42) {
				t.Errorf("Query = %v, %v; want kind %q", got, err, tt.wantKind)
			}
			if rt.count() != tt.wantCalls {
				t.Errorf("%d requests, want %d", rt.count(), tt.wantCalls)
			}
		})
	}
}
