package mig

import (
	"errors"
	"fmt"
)

// Reason says why a set of profiles is not a valid layout.
type Reason int

// The reasons a layout is rejected. Valid checks the first five in this order; the last two
// come from ParseLayoutSpec.
const (
	// UnknownProfile means the model has no profile of that name (e.g. "1g.5gb" on H100 80GB).
	UnknownProfile Reason = iota + 1
	// TooMany means more instances of a profile than its MaxCount.
	TooMany
	// MediaExtensionConflict means more than one +me instance, or a 1g +me instance next to another
	// 1g instance (rejected by mig-parted).
	MediaExtensionConflict
	// ComputeExceeded means the compute slices add up to more than the GPU has.
	ComputeExceeded
	// NoPlacement means no assignment of allowed start slots keeps the memory slots disjoint.
	NoPlacement
	// UnknownLayoutName means a layout spec names neither a mig-parted layout of the model nor a
	// custom layout ("custom-...").
	UnknownLayoutName
	// EmptySpec means a layout spec has no profile.
	EmptySpec
)

// String returns the reason in words, as used in error messages.
func (r Reason) String() string {
	switch r {
	case UnknownProfile:
		return "unknown profile"
	case TooMany:
		return "too many instances"
	case MediaExtensionConflict:
		return "media extension conflict"
	case ComputeExceeded:
		return "compute slices exceeded"
	case NoPlacement:
		return "no placement"
	case UnknownLayoutName:
		return "unknown layout name"
	case EmptySpec:
		return "empty layout spec"
	default:
		return fmt.Sprintf("Reason(%d)", int(r))
	}
}

// LayoutError is returned by Valid and ParseLayoutSpec for a layout that cannot be created.
// Profile names the profile to blame when there is one (UnknownProfile, TooMany,
// MediaExtensionConflict); Name holds the unknown layout name for UnknownLayoutName.
type LayoutError struct {
	// Model is the table model, e.g. "A100-SXM4-40GB".
	Model string
	// Reason is the rule that failed.
	Reason Reason
	// Profile is the offending profile, if one is to blame.
	Profile MIGProfile
	// Name is the offending layout name for UnknownLayoutName.
	Name string
	// Detail completes the message, e.g. "8 compute slices, the GPU has 7".
	Detail string
}

// Error describes the failure, naming the model, the reason and the profile or name at fault.
func (e *LayoutError) Error() string {
	msg := fmt.Sprintf("mig %s: %s", e.Model, e.Reason)
	switch {
	case e.Profile != "":
		msg += fmt.Sprintf(" %q", e.Profile)
	case e.Name != "":
		msg += fmt.Sprintf(" %q", e.Name)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// ReasonOf returns the Reason of the LayoutError in err's chain, or 0 when there is none.
func ReasonOf(err error) Reason {
	var le *LayoutError
	if errors.As(err, &le) {
		return le.Reason
	}
	return 0
}

// IsUnknownProfile reports whether err is a LayoutError about a profile the model lacks.
func IsUnknownProfile(err error) bool { return ReasonOf(err) == UnknownProfile }
