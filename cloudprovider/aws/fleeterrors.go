package aws

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// FailureKind says what an EC2 launch error code means for the offering it names.
type FailureKind int

const (
	// FailureOther is a configuration, permission or request error (bad launch template, AMI,
	// IAM): retrying another offering will not help.
	FailureOther FailureKind = iota
	// FailureCapacity means the offering cannot be had right now; another offering may work.
	FailureCapacity
	// FailureQuota means an account limit stopped the launch.
	FailureQuota
)

// String names the kind for logs and metrics labels.
func (k FailureKind) String() string {
	switch k {
	case FailureCapacity:
		return "capacity"
	case FailureQuota:
		return "quota"
	default:
		return "other"
	}
}

// capacityCodes are the EC2 codes that mean "not this offering, not now".
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity": true, // the AZ has no capacity of the type
	"InsufficientCapacity":         true, // fleet/ASG wording of the same
	"UnfulfillableCapacity":        true, // the fleet could not place the request in the pool
	"InsufficientHostCapacity":     true,
	// Spot-only account limit: the on-demand fallback still works, so it makes the spot
	// offerings unavailable rather than stop everything as a quota does.
	"MaxSpotInstanceCountExceeded": true,
	"SpotMaxPriceTooLow":           true, // the spot price rose above our max price in that pool
	"Unsupported":                  true, // the type is not offered in that AZ (or not as spot)
	// The zone's subnet has no free IP: every offering in that zone fails until IPs free up.
	"InsufficientFreeAddressesInSubnet": true,
}

// quotaCodes are account limits; the vCPU limits are per instance family class and capacity type.
var quotaCodes = map[string]bool{
	"InstanceLimitExceeded": true,
	"VcpuLimitExceeded":     true,
	"MaxFleetCountExceeded": true,
}

// Classify returns the kind of an EC2 error code.
func Classify(code string) FailureKind {
	switch {
	case capacityCodes[code]:
		return FailureCapacity
	case quotaCodes[code]:
		return FailureQuota
	default:
		return FailureOther
	}
}

// FailedOffering is one offering a launch could not have, with EC2's reason. Kinds
// FailureCapacity and FailureQuota mean the offering is unavailable (it goes into the
// Unavailable cache); FailureOther means the launch failed for a reason another offering would
// not fix. (Not "UnavailableOffering": it carries the FailureOther ones too.)
type FailedOffering struct {
	Offering api.Offering
	Code     string
	Message  string
	Kind     FailureKind
}

// LaunchError is a CreateFleet failure that is neither capacity nor quota (FailureOther), e.g. a
// missing launch template or an unauthorised call. The controller should not retry other
// offerings; it needs an operator.
type LaunchError struct {
	Code      string
	Message   string
	Offerings []api.Offering
}

// Error names the code, the offerings and EC2's message.
func (e *LaunchError) Error() string {
	return fmt.Sprintf("CreateFleet failed (%s) for %s: %s", e.Code, refNames(e.Offerings), e.Message)
}

// noLaunchError builds the typed error for a launch in which every fleet failed: a
// *QuotaError when any account limit was hit (raising it is the only fix), otherwise an
// *InsufficientCapacityError naming every unavailable offering, with the distinct codes joined.
func noLaunchError(failed []FailedOffering) error {
	for _, f := range failed {
		if f.Kind == FailureQuota {
			return &cloudprovider.QuotaError{Code: f.Code, Message: f.Message}
		}
	}
	e := &cloudprovider.InsufficientCapacityError{}
	var codes []string
	seen := map[string]bool{}
	for _, f := range failed {
		e.Offerings = append(e.Offerings, f.Offering)
		if !seen[f.Code] {
			seen[f.Code] = true
			codes = append(codes, f.Code)
		}
		if e.Message == "" {
			e.Message = f.Message
		}
	}
	e.Code = strings.Join(codes, ",")
	return e
}

// firstOther returns the first failure of kind FailureOther as a *LaunchError naming every
// offering that failed with the same code, or nil.
func firstOther(failed []FailedOffering) *LaunchError {
	for _, f := range failed {
		if f.Kind != FailureOther {
			continue
		}
		e := &LaunchError{Code: f.Code, Message: f.Message}
		for _, g := range failed {
			if g.Code == f.Code {
				e.Offerings = append(e.Offerings, g.Offering)
			}
		}
		return e
	}
	return nil
}

// SortFailed orders failures by offering, for stable reports.
func SortFailed(f []FailedOffering) {
	sort.SliceStable(f, func(i, j int) bool { return f[i].Offering.Less(f[j].Offering) })
}

func refNames(refs []api.Offering) string {
	names := make([]string, 0, len(refs))
	for _, o := range refs {
		names = append(names, fmt.Sprintf("%s/%s/%s", o.InstanceType, o.Zone, o.CapacityType))
	}
	return strings.Join(names, ", ")
}
