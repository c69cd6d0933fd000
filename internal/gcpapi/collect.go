package gcpapi

import (
	"context"
	"errors"

	"google.golang.org/api/iterator"
)

// Collect reads every item of an SDK iterator (its Next method) and returns them, or the first
// error, or ctx's error as soon as ctx ends.
//
// The Compute Engine REST clients' paginated List and AggregatedList calls do not attach the
// caller's context to their HTTP requests (cloud.google.com/go/compute v1.75.0 builds them with
// http.NewRequest and no WithContext; their single-object calls do attach it), so a hung endpoint
// would hold the caller far past its deadline: TestCreateWaitBoundedByContext saw a launch with a
// 300 ms deadline return after three minutes, one per zone listed. Collect reads the pages in a
// goroutine of its own and stops waiting for it when ctx ends; the goroutine ends with the HTTP
// request it is in, and nothing reads what it found.
func Collect[T any](ctx context.Context, next func() (T, error)) ([]T, error) {
	type result struct {
		items []T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var out []T
		for ctx.Err() == nil {
			item, err := next()
			if errors.Is(err, iterator.Done) {
				done <- result{items: out}
				return
			}
			if err != nil {
				done <- result{err: err}
				return
			}
			out = append(out, item)
		}
		done <- result{err: ctx.Err()}
	}()
	select {
	case r := <-done:
		return r.items, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
