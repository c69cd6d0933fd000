// Package testwait is how the tests wait: on a condition, looked at again every interval, instead
// of for a fixed time. A test then goes on as soon as what it waits for has happened, and a fixed
// wait is left only where a test asserts that something does not happen (StaysFalse).
package testwait

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// How often tests look again at a condition: Fast for fakes in the test's process, Slow for a
// real API server, which serves the control plane on the same cores.
const (
	Fast = 10 * time.Millisecond
	Slow = 50 * time.Millisecond
)

// Poll waits until ok holds, looking every interval, for at most timeout; it returns an error
// when the time ran out.
func Poll(every, timeout time.Duration, ok func() bool) error {
	return wait.PollUntilContextTimeout(context.Background(), every, timeout, true,
		func(context.Context) (bool, error) { return ok(), nil })
}

// Until waits until ok holds, looking every interval, and fails the test with what after
// timeout.
func Until(t testing.TB, every time.Duration, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	if err := Poll(every, timeout, ok); err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// StaysFalse looks at bad every interval for d and fails the test with what as soon as it holds.
// Tests use it to assert that something does not happen where nothing marks the moment it would
// have happened (each use says why); it ends early only by failing.
func StaysFalse(t testing.TB, every time.Duration, what string, d time.Duration, bad func() bool) {
	t.Helper()
	if err := Poll(every, d, bad); err == nil {
		t.Fatal(what)
	}
}
