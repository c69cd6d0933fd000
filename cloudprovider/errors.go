package cloudprovider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tiler-dev/tiler/api"
)

// InsufficientCapacityError says that the cloud had no capacity for the named offerings.
type InsufficientCapacityError struct {
	Offerings []api.Offering
	// Code is the cloud's own error code, e.g. InsufficientInstanceCapacity or
	// ZONE_RESOURCE_POOL_EXHAUSTED.
	Code    string
	Message string
}

func (e *InsufficientCapacityError) Error() string {
	var names []string
	for _, o := range e.Offerings {
		names = append(names, fmt.Sprintf("%s/%s/%s", o.InstanceType, o.Zone, o.CapacityType))
	}
	return fmt.Sprintf("insufficient capacity (%s) for %s: %s", e.Code, strings.Join(names, ", "), e.Message)
}

// NotFoundError says that an instance does not exist.
type NotFoundError struct {
	ID string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("instance %s not found", e.ID) }

// QuotaError says that an account or project limit stopped a launch.
type QuotaError struct {
	Code    string
	Message string
}

func (e *QuotaError) Error() string { return fmt.Sprintf("quota exceeded (%s): %s", e.Code, e.Message) }

// IsInsufficientCapacity reports whether err is or wraps an *InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// IsNotFound reports whether err is or wraps a *NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// IsQuota reports whether err is or wraps a *QuotaError.
func IsQuota(err error) bool {
	var e *QuotaError
	return errors.As(err, &e)
}
