package promsource

import (
	"errors"
	"fmt"
)

// ErrorKind classifies a failed query by what the caller should do about it.
type ErrorKind string

// The kinds of QueryError.
const (
	// KindBadQuery means Prometheus rejected the PromQL (a parse or type error): fix the query.
	KindBadQuery ErrorKind = "BadQuery"
	// KindEmpty means the query ran but returned no samples: the metric does not exist (yet).
	KindEmpty ErrorKind = "EmptyResult"
	// KindMultipleSeries means the query returned several series where one was needed: aggregate
	// it, e.g. with sum().
	KindMultipleSeries ErrorKind = "MultipleSeries"
	// KindUnavailable means the server could not be reached or failed after every retry.
	KindUnavailable ErrorKind = "Unavailable"
	// KindTimeout means the query ran out of time (server- or client-side).
	KindTimeout ErrorKind = "Timeout"
)

// QueryError is the error of every failed query of this package.
type QueryError struct {
	// Kind says what went wrong, in terms the controller can act on.
	Kind ErrorKind
	// Query is the PromQL that failed.
	Query string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *QueryError) Error() string {
	msg := fmt.Sprintf("prometheus query %q: %s", e.Query, e.Kind)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *QueryError) Unwrap() error { return e.Err }

// Reason is a CamelCase reason for a Kubernetes Event, e.g. "ForecastQueryBadQuery".
func (e *QueryError) Reason() string { return "ForecastQuery" + string(e.Kind) }

// KindOf returns the kind of a QueryError anywhere in err's chain, "" if there is none.
func KindOf(err error) ErrorKind {
	var qe *QueryError
	if errors.As(err, &qe) {
		return qe.Kind
	}
	return ""
}

// IsBadQuery reports whether err is a rejected PromQL expression.
func IsBadQuery(err error) bool { return KindOf(err) == KindBadQuery }

// IsEmpty reports whether err is a query that returned no samples.
func IsEmpty(err error) bool { return KindOf(err) == KindEmpty }

// IsUnavailable reports whether err is a server that could not answer.
func IsUnavailable(err error) bool {
	return KindOf(err) == KindUnavailable || KindOf(err) == KindTimeout
}
