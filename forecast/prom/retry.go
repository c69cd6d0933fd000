package prom

import (
	"context"
	"errors"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// do runs one API call with a per-attempt timeout, retrying transient failures with doubling
// backoff, and classifies the final error.
func (c *Client) do(ctx context.Context, query string, call func(context.Context) (model.Value, v1.Warnings, error)) (model.Value, error) {
	wait := c.cfg.Backoff
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		val, _, err := call(actx)
		cancel()
		if err == nil {
			return val, nil
		}
		qe := classify(query, err)
		if qe.Kind == KindBadQuery || attempt >= c.cfg.Retries || ctx.Err() != nil {
			return nil, qe
		}
		if sleep(ctx, wait) != nil {
			return nil, qe
		}
		wait *= 2
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

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
