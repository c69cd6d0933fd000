package promsource

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tiler-dev/tiler/forecast"
)

// maxPointsPerQuery keeps each query_range under Prometheus's limit of 11,000 points per series.
const maxPointsPerQuery = 10000

// Config configures a Client.
type Config struct {
	// Address is the Prometheus base URL, e.g. http://prometheus.monitoring:9090.
	Address string
	// Timeout bounds each HTTP request (and is passed to Prometheus as the query timeout);
	// zero means 30s.
	Timeout time.Duration
	// Retries is how many times a transient failure (unreachable, 5xx, timeout) is retried; zero
	// means 2, negative means none.
	Retries int
	// Backoff is the wait before the first retry, doubled each time; zero means 500ms.
	Backoff time.Duration
	// RoundTripper is the HTTP transport; nil means api.DefaultRoundTripper.
	RoundTripper http.RoundTripper
}

// Client queries one Prometheus server.
type Client struct {
	api v1.API
	cfg Config
}

// New returns a client for cfg.Address.
func New(cfg Config) (*Client, error) {
	if cfg.Address == "" {
		return nil, errors.New("prometheus address: must be set")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	c, err := api.NewClient(api.Config{Address: cfg.Address, RoundTripper: cfg.RoundTripper})
	if err != nil {
		return nil, fmt.Errorf("prometheus address %q: %w", cfg.Address, err)
	}
	return &Client{api: v1.NewAPI(c), cfg: cfg}, nil
}

// QueryRange evaluates query from start to end every step and returns its single series on that
// grid (NaN where Prometheus had no sample). Long ranges are split into several requests.
func (c *Client) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (forecast.Series, error) {
	if step <= 0 || !end.After(start) {
		return forecast.Series{}, fmt.Errorf("query range %s–%s step %s: want start < end and a positive step", start, end, step)
	}
	n := int(end.Sub(start)/step) + 1
	s := forecast.Series{Start: start, Step: step, Values: make([]float64, n)}
	for i := range s.Values {
		s.Values[i] = math.NaN()
	}
	found := false
	for lo := 0; lo < n; lo += maxPointsPerQuery {
		hi := min(n, lo+maxPointsPerQuery) - 1
		r := v1.Range{Start: s.TimeAt(lo), End: s.TimeAt(hi), Step: step}
		val, err := c.do(ctx, query, func(ctx context.Context) (model.Value, v1.Warnings, error) {
			val, warn, _, err := c.api.QueryRange(ctx, query, r, v1.WithTimeout(c.cfg.Timeout))
			return val, warn, err
		})
		if err != nil {
			return forecast.Series{}, err
		}
		got, err := fillMatrix(query, val, s)
		if err != nil {
			return forecast.Series{}, err
		}
		found = found || got
	}
	if !found {
		return forecast.Series{}, &QueryError{Kind: KindEmpty, Query: query}
	}
	return s, nil
}

// Query evaluates query at time at and returns its single value.
func (c *Client) Query(ctx context.Context, query string, at time.Time) (float64, error) {
	val, err := c.do(ctx, query, func(ctx context.Context) (model.Value, v1.Warnings, error) {
		val, warn, _, err := c.api.Query(ctx, query, at, v1.WithTimeout(c.cfg.Timeout))
		return val, warn, err
	})
	if err != nil {
		return 0, err
	}
	switch v := val.(type) {
	case model.Vector:
		if len(v) == 0 {
			return 0, &QueryError{Kind: KindEmpty, Query: query}
		}
		if len(v) > 1 {
			return 0, &QueryError{Kind: KindMultipleSeries, Query: query, Err: fmt.Errorf("%d series; aggregate them, e.g. sum(%s)", len(v), query)}
		}
		return float64(v[0].Value), nil
	case *model.Scalar:
		return float64(v.Value), nil
	default:
		return 0, &QueryError{Kind: KindBadQuery, Query: query, Err: fmt.Errorf("result type %s, want an instant vector or scalar", val.Type())}
	}
}

// QueryVector evaluates query at time at and returns every series of its instant vector (none is
// not an error: the caller knows whether it needs one).
func (c *Client) QueryVector(ctx context.Context, query string, at time.Time) (model.Vector, error) {
	val, err := c.do(ctx, query, func(ctx context.Context) (model.Value, v1.Warnings, error) {
		val, warn, _, err := c.api.Query(ctx, query, at, v1.WithTimeout(c.cfg.Timeout))
		return val, warn, err
	})
	if err != nil {
		return nil, err
	}
	v, ok := val.(model.Vector)
	if !ok {
		return nil, &QueryError{Kind: KindBadQuery, Query: query, Err: fmt.Errorf("result type %s, want an instant vector", val.Type())}
	}
	return v, nil
}

// Address is the Prometheus base URL the client queries.
func (c *Client) Address() string { return c.cfg.Address }

// fillMatrix copies a range result into s; it reports whether any sample was found.
func fillMatrix(query string, val model.Value, s forecast.Series) (bool, error) {
	m, ok := val.(model.Matrix)
	if !ok {
		return false, &QueryError{Kind: KindBadQuery, Query: query, Err: fmt.Errorf("result type %s, want a range vector", val.Type())}
	}
	if len(m) > 1 {
		return false, &QueryError{Kind: KindMultipleSeries, Query: query, Err: fmt.Errorf("%d series; aggregate them, e.g. sum(%s)", len(m), query)}
	}
	found := false
	for _, stream := range m {
		for _, p := range stream.Values {
			if i := s.Index(p.Timestamp.Time()); i >= 0 && i < s.Len() {
				s.Values[i] = float64(p.Value)
				found = true
			}
		}
	}
	return found, nil
}

// do runs one API call with a per-attempt timeout, retrying transient failures (Config.Retries
// times, waiting Config.Backoff and then twice as long each time), and classifies the final error.
// A rejected query is not retried: it will not get better.
func (c *Client) do(ctx context.Context, query string, call func(context.Context) (model.Value, v1.Warnings, error)) (model.Value, error) {
	var val model.Value
	var last *QueryError
	attempt := func(ctx context.Context) (bool, error) {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		v, _, err := call(actx)
		if err == nil {
			val = v
			return true, nil
		}
		last = classify(query, err)
		if last.Kind == KindBadQuery || ctx.Err() != nil {
			return false, last
		}
		return false, nil
	}
	backoff := wait.Backoff{Duration: c.cfg.Backoff, Factor: 2, Steps: max(c.cfg.Retries, 0) + 1}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, attempt)
	switch {
	case err == nil:
		return val, nil
	case last != nil:
		// Out of attempts, or ctx ended while waiting: the last failure says what went wrong.
		return nil, last
	default:
		// ctx ended before the first attempt.
		return nil, classify(query, err)
	}
}

// classify maps a client_golang error to a QueryError. Prometheus answers bad PromQL with
// "bad_data" (HTTP 400) and a query that ran out of time with "timeout" (503); everything else
// that is not a client-side deadline is the server being unreachable or failing.
func classify(query string, err error) *QueryError {
	var apiErr *v1.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Type == v1.ErrBadData:
		return &QueryError{Kind: KindBadQuery, Query: query, Err: err}
	case errors.As(err, &apiErr) && (apiErr.Type == v1.ErrTimeout || apiErr.Type == v1.ErrCanceled):
		return &QueryError{Kind: KindTimeout, Query: query, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &QueryError{Kind: KindTimeout, Query: query, Err: err}
	default:
		return &QueryError{Kind: KindUnavailable, Query: query, Err: err}
	}
}
