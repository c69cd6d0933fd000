package promsource

import (
	"context"
	"math"
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
		if fc.Model == "holt" || !(fc.Upper >= fc.Point) || !(fc.Point > 0) {
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
