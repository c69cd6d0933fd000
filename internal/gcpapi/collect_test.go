package gcpapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/api/iterator"
)

// TestCollect: every item until iterator.Done; the first error; and ctx's error as soon as ctx
// ends while a Next call hangs (a List request without the caller's context).
func TestCollect(t *testing.T) {
	items := []int{1, 2, 3}
	next := func() (int, error) {
		if len(items) == 0 {
			return 0, iterator.Done
		}
		i := items[0]
		items = items[1:]
		return i, nil
	}
	got, err := Collect(context.Background(), next)
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("Collect = %v, %v; want 1 2 3", got, err)
	}
	boom := errors.New("boom")
	if _, err := Collect(context.Background(), func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("Collect = %v, want boom", err)
	}
	hang := make(chan struct{})
	defer close(hang)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Collect(ctx, func() (int, error) { <-hang; return 0, iterator.Done })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Collect over a hanging Next: %v after %s; want the deadline at once", err, time.Since(start))
	}
}
