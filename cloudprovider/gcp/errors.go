package gcp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/gcpapi"
)

// OperationError is a zone operation that ended with errors, e.g. an insert that found no
// capacity. Codes are Compute Engine's error codes (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED).
type OperationError struct {
	Operation      string
	HTTPStatusCode int
	Codes          []string
	Messages       []string
}

// Error names the operation, its HTTP status and its messages.
func (e *OperationError) Error() string {
	return fmt.Sprintf("operation %s failed (HTTP %d): %s", e.Operation, e.HTTPStatusCode, strings.Join(e.Messages, "; "))
}

// operationError returns the errors of a finished operation, or nil if it succeeded.
func operationError(op *computepb.Operation) error {
	items := op.GetError().GetErrors()
	status := int(op.GetHttpErrorStatusCode())
	failedHTTP := op.HttpErrorStatusCode != nil && (status < 200 || status > 299)
	if len(items) == 0 && !failedHTTP {
		return nil
	}
	e := &OperationError{Operation: op.GetName(), HTTPStatusCode: status}
	if len(items) == 0 {
		e.Messages = []string{op.GetHttpErrorMessage()}
	}
	for _, it := range items {
		e.Codes = append(e.Codes, it.GetCode())
		e.Messages = append(e.Messages, detailedMessage(it))
	}
	return e
}

// detailedMessage prefers the localized message of the error details, which names the VM shape
// and the zones that have capacity ("Consider trying your request in the us-central1-b zone").
func detailedMessage(it *computepb.Errors) string {
	for _, d := range it.GetErrorDetails() {
		if m := d.GetLocalizedMessage().GetMessage(); m != "" {
			return m
		}
	}
	return it.GetMessage()
}

// errorKind is what a failed call means to the provider.
type errorKind int

const (
	otherError errorKind = iota
	capacityError
	quotaError
	notFoundError
	alreadyExistsError
)

// classify reads the codes of an operation error, or the HTTP status and reasons of an API error,
// and returns what they mean and the code to report:
//
//	ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS], resourcePoolExhausted, *STOCKOUT*  → capacity
//	QUOTA_EXCEEDED, quotaExceeded                                                    → quota
//	HTTP 404, notFound, RESOURCE_NOT_FOUND                                            → not found
//	HTTP 409, alreadyExists, RESOURCE_ALREADY_EXISTS                                  → already exists
func classify(err error) (errorKind, string) {
	var codes []string
	var opErr *OperationError
	if errors.As(err, &opErr) {
		codes = opErr.Codes
	} else {
		codes = gcpapi.Reasons(err)
	}
	for _, code := range codes {
		if k := kindOfCode(code); k != otherError {
			return k, code
		}
	}
	switch gcpapi.HTTPStatus(err) {
	case http.StatusNotFound:
		return notFoundError, "notFound"
	case http.StatusConflict:
		return alreadyExistsError, "alreadyExists"
	}
	return otherError, ""
}

func kindOfCode(code string) errorKind {
	upper := strings.ToUpper(code)
	switch {
	case strings.Contains(upper, "RESOURCE_POOL_EXHAUSTED"), upper == "RESOURCEPOOLEXHAUSTED", strings.Contains(upper, "STOCKOUT"):
		return capacityError
	case upper == "QUOTA_EXCEEDED", upper == "QUOTAEXCEEDED":
		return quotaError
	case upper == "NOTFOUND", upper == "RESOURCE_NOT_FOUND":
		return notFoundError
	case upper == "ALREADYEXISTS", upper == "RESOURCE_ALREADY_EXISTS":
		return alreadyExistsError
	}
	return otherError
}

// errorMessage is the human part of an error for the typed errors' Message.
func errorMessage(err error) string {
	var opErr *OperationError
	if errors.As(err, &opErr) {
		return strings.Join(opErr.Messages, "; ")
	}
	return err.Error()
}

// launchFailures collects the typed failures of the offerings a Create tried.
type launchFailures struct {
	capacity *cloudprovider.InsufficientCapacityError
	quota    []error
	// unavailable lists every offering added, capacity and quota alike.
	unavailable []api.Offering
}

func (f *launchFailures) add(kind errorKind, code string, off api.Offering, err error) {
	f.unavailable = append(f.unavailable, off)
	msg := fmt.Sprintf("%s/%s/%s: %s", off.InstanceType, off.Zone, off.CapacityType, errorMessage(err))
	if kind == quotaError {
		f.quota = append(f.quota, &cloudprovider.QuotaError{Code: code, Message: msg})
		return
	}
	if f.capacity == nil {
		f.capacity = &cloudprovider.InsufficientCapacityError{Code: code}
	}
	f.capacity.Offerings = append(f.capacity.Offerings, off)
	f.capacity.Message = strings.TrimPrefix(f.capacity.Message+"; "+msg, "; ")
}

// offerings returns the offerings that failed for capacity or quota, sorted, each once.
func (f *launchFailures) offerings() []api.Offering {
	return cloudprovider.SortOfferings(f.unavailable)
}

// err returns the failure to report when every offering failed: the capacity error (naming every
// offering that had no capacity), the quota errors, or both joined.
func (f *launchFailures) err() error {
	var errs []error
	if f.capacity != nil {
		errs = append(errs, f.capacity)
	}
	return errors.Join(append(errs, f.quota...)...)
}
