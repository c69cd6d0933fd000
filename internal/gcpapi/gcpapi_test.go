package gcpapi

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

func apiErr(code int, reasons ...string) error {
	e := &googleapi.Error{Code: code}
	for _, r := range reasons {
		e.Errors = append(e.Errors, googleapi.ErrorItem{Reason: r})
	}
	return fmt.Errorf("calling: %w", e)
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{apiErr(429, "rateLimitExceeded"), true},
		{apiErr(403, "rateLimitExceeded"), true},
		{apiErr(403, "userRateLimitExceeded"), true},
		{apiErr(503, "backendError"), true},
		{apiErr(500), true}, {apiErr(502), true}, {apiErr(504), true},
		{apiErr(503, "resourcePoolExhausted"), false},
		{apiErr(403, "quotaExceeded"), false},
		{apiErr(404, "notFound"), false},
		{apiErr(409, "alreadyExists"), false},
		{errors.New("dial tcp: connection refused"), false},
	}
	for _, tc := range tests {
		if got := IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryerStopsAfterMaxAttempts(t *testing.T) {
	p := RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1, MaxAttempts: 3}
	r := &retryer{policy: p}
	var retries int
	for {
		if _, ok := r.Retry(apiErr(429)); !ok {
			break
		}
		retries++
	}
	if retries != 2 { // 3 attempts = the first call + 2 retries
		t.Errorf("retried %d times, want 2", retries)
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	if err := DefaultRetryPolicy().Validate(); err != nil {
		t.Errorf("default policy: %v", err)
	}
	bad := []RetryPolicy{
		{Initial: time.Second, Max: time.Second, Multiplier: 2},
		{Max: time.Second, Multiplier: 2, MaxAttempts: 1},
		{Initial: time.Second, Max: time.Millisecond, Multiplier: 2, MaxAttempts: 1},
		{Initial: time.Second, Max: time.Second, Multiplier: 0.5, MaxAttempts: 1},
	}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v is valid", p)
		}
	}
}
