package gcpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	gax "github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// RetryPolicy says how calls that were throttled or hit a transient server error are retried:
// capped exponential backoff with full jitter (gax.Backoff), at most MaxAttempts calls in all.
type RetryPolicy struct {
	// Initial is the first backoff cap; each retry multiplies it by Multiplier up to Max.
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	// MaxAttempts counts the first call: 1 means no retry.
	MaxAttempts int
}

// DefaultRetryPolicy is the policy for production: Google's documented guidance for 429 and 5xx
// is truncated exponential backoff starting near one second; six attempts span about a minute in
// the worst case, which is less than one controller cycle's patience.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2, MaxAttempts: 6}
}

// Validate checks the policy; errors name the field.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("retry.maxAttempts must be at least 1")
	case p.Initial <= 0:
		return fmt.Errorf("retry.initial must be positive")
	case p.Max < p.Initial:
		return fmt.Errorf("retry.max must not be below retry.initial")
	case p.Multiplier < 1:
		return fmt.Errorf("retry.multiplier must be at least 1")
	}
	return nil
}

// CallOption returns the gax option that applies the policy to one SDK call. It replaces the SDK's
// default retry settings, which retry some methods without a bound on attempts.
func (p RetryPolicy) CallOption() gax.CallOption {
	return gax.WithRetry(func() gax.Retryer {
		return &retryer{
			policy:  p,
			backoff: gax.Backoff{Initial: p.Initial, Max: p.Max, Multiplier: p.Multiplier},
		}
	})
}

type retryer struct {
	policy   RetryPolicy
	backoff  gax.Backoff
	attempts int
}

// Retry implements gax.Retryer: retry retryable errors until MaxAttempts calls were made.
func (r *retryer) Retry(err error) (time.Duration, bool) {
	r.attempts++
	if r.attempts >= r.policy.MaxAttempts || !IsRetryable(err) {
		return 0, false
	}
	return r.backoff.Pause(), true
}

// IsRetryable reports whether err is throttling or a transient server error: HTTP 429, 500, 502,
// 503 or 504, or a 403 whose reason is rateLimitExceeded or userRateLimitExceeded (Compute Engine
// reports API rate limits that way). A 503 that says the zone has no capacity is not transient
// in the retry's time frame and is not retried; the caller tries another offering instead.
func IsRetryable(err error) bool {
	for _, r := range Reasons(err) {
		switch r {
		case "rateLimitExceeded", "userRateLimitExceeded":
			return true
		case "resourcePoolExhausted", "ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS":
			return false
		}
	}
	switch HTTPStatus(err) {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// HTTPStatus returns the HTTP status code of an API error, or 0 if err is not one.
func HTTPStatus(err error) int {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return gerr.Code
	}
	var aerr *apierror.APIError
	if errors.As(err, &aerr) {
		return aerr.HTTPCode()
	}
	return 0
}

// Reasons returns the machine-readable reasons of an API error: the reason of each item of the
// googleapi error envelope (e.g. quotaExceeded, notFound, alreadyExists) and the ErrorInfo reason
// of its structured details, if any.
func Reasons(err error) []string {
	var out []string
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		for _, item := range gerr.Errors {
			if item.Reason != "" {
				out = append(out, item.Reason)
			}
		}
	}
	var aerr *apierror.APIError
	if errors.As(err, &aerr) && aerr.Reason() != "" {
		out = append(out, aerr.Reason())
	}
	return out
}

// ClientOptions returns the options for an SDK client: the endpoint override, if any, then extra
// (tests add option.WithoutAuthentication; production adds nothing and uses Application Default
// Credentials).
func ClientOptions(endpoint string, extra ...option.ClientOption) []option.ClientOption {
	var opts []option.ClientOption
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	return append(opts, extra...)
}
