package dra

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// ReasonCode says why claims do not fit a node.
type ReasonCode int

const (
	// NoDevice means the node's devices cannot satisfy the claims — too few devices match the
	// selectors, or the matching ones are allocated, their capacity or shared counters are used
	// up, or a constraint (matchAttribute, distinctAttribute) cannot be met.
	NoDevice ReasonCode = iota + 1
	// MissingDeviceClass means a request names a DeviceClass the snapshot does not have. The
	// scheduler keeps such a pod pending until the class appears.
	MissingDeviceClass
	// CELError means a selector of a claim or class does not compile, or fails while evaluated
	// against a device (for example an attribute the device does not have). The scheduler
	// reports it as an error of the pod, on every node.
	CELError
	// AllocatedElsewhere means a claim is already allocated and its allocation is bound to other
	// nodes (a shared claim whose first pod runs elsewhere).
	AllocatedElsewhere
	// InvalidPool means the node's ResourceSlices are inconsistent (for example a device consumes a
	// counter set no slice of the pool defines), so the allocator does not use the pool.
	InvalidPool
	// InvalidClaim means the allocator rejected the claims for another reason stated in the message
	// (a count beyond the 32 devices a claim may hold, an unsupported request type, ...).
	InvalidClaim
)

// String returns the code's name, e.g. "NoDevice".
func (c ReasonCode) String() string {
	switch c {
	case NoDevice:
		return "NoDevice"
	case MissingDeviceClass:
		return "MissingDeviceClass"
	case CELError:
		return "CELError"
	case AllocatedElsewhere:
		return "AllocatedElsewhere"
	case InvalidPool:
		return "InvalidPool"
	case InvalidClaim:
		return "InvalidClaim"
	}
	return fmt.Sprintf("ReasonCode(%d)", int(c))
}

// Reason explains why claims do not fit a node: a code to count and branch on, and a message
// naming the claim, request, class or expression at fault.
type Reason struct {
	Code    ReasonCode
	Message string
}

// String renders the reason as "Code: message".
func (r *Reason) String() string {
	if r == nil {
		return "<nil>"
	}
	return r.Code.String() + ": " + r.Message
}

// errClassNotFound is what the class lister returns for an unknown class; Fit turns it into
// MissingDeviceClass when the allocator passes it on.
var errClassNotFound = errors.New("device class not found")

// reasonFromAllocatorError classifies an error of structured.Allocator.Allocate. The allocator
// reports bad input (classes, CEL, pools) as errors without types of their own except for
// the wrapped lister error and ErrFailedAllocationOnNode, so CEL failures are recognised by the
// wording the allocator uses ("CEL compile error", "CEL runtime error"); Fit compiles every
// selector before it calls the allocator, so only runtime errors should get here.
func reasonFromAllocatorError(err error) *Reason {
	msg := err.Error()
	switch {
	case errors.Is(err, errClassNotFound):
		return &Reason{Code: MissingDeviceClass, Message: msg}
	case strings.Contains(msg, "CEL runtime error"), strings.Contains(msg, "CEL compile error"):
		return &Reason{Code: CELError, Message: msg}
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return &Reason{Code: InvalidPool, Message: msg}
	}
	return &Reason{Code: InvalidClaim, Message: msg}
}

// classLister serves the snapshot's DeviceClasses to the structured allocator.
type classLister struct {
	byName map[string]*resourcev1.DeviceClass
	sorted []*resourcev1.DeviceClass
}

var _ structured.DeviceClassLister = (*classLister)(nil)

func newClassLister(classes []*resourcev1.DeviceClass) (*classLister, error) {
	l := &classLister{byName: map[string]*resourcev1.DeviceClass{}}
	for i, c := range classes {
		switch {
		case c == nil:
			return nil, fmt.Errorf("deviceClasses[%d] is nil", i)
		case c.Name == "":
			return nil, fmt.Errorf("deviceClasses[%d]: metadata.name is empty", i)
		case l.byName[c.Name] != nil:
			return nil, fmt.Errorf("deviceClasses[%d]: class %s is listed twice", i, c.Name)
		}
		l.byName[c.Name] = c
		l.sorted = append(l.sorted, c)
	}
	slices.SortFunc(l.sorted, func(a, b *resourcev1.DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	return l, nil
}

// List returns the classes sorted by name.
func (l *classLister) List() ([]*resourcev1.DeviceClass, error) { return l.sorted, nil }

// Get returns the named class or an error wrapping errClassNotFound.
func (l *classLister) Get(name string) (*resourcev1.DeviceClass, error) {
	if c, ok := l.byName[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s", errClassNotFound, name)
}

// validate checks what the allocator would reject as an error before it runs: every request
// names an existing DeviceClass and every CEL selector of the request and its class compiles.
// Checking first gives these failures their own reason codes with the expression in the
// message, and keeps them independent of the node (the allocator only meets them when it gets
// to the request).
func (a *Allocator) validate(claims []*resourcev1.ResourceClaim) *Reason {
	for _, c := range claims {
		for _, req := range c.Spec.Devices.Requests {
			if req.Exactly != nil {
				if r := a.validateRequest(c, req.Name, req.Exactly.DeviceClassName, req.Exactly.Selectors); r != nil {
					return r
				}
			}
			for _, sub := range req.FirstAvailable {
				if r := a.validateRequest(c, req.Name+"/"+sub.Name, sub.DeviceClassName, sub.Selectors); r != nil {
					return r
				}
			}
		}
	}
	return nil
}

func (a *Allocator) validateRequest(c *resourcev1.ResourceClaim, request, className string, selectors []resourcev1.DeviceSelector) *Reason {
	where := fmt.Sprintf("claim %s, request %s", claimKey(c), request)
	class, ok := a.classes.byName[className]
	if !ok {
		return &Reason{Code: MissingDeviceClass, Message: fmt.Sprintf("%s: DeviceClass %q does not exist", where, className)}
	}
	if r := a.compile(where, selectors); r != nil {
		return r
	}
	return a.compile(fmt.Sprintf("%s: DeviceClass %s", where, class.Name), class.Spec.Selectors)
}

// compile compiles the selectors with the simulation's CEL cache, which the allocator then
// reuses.
func (a *Allocator) compile(where string, selectors []resourcev1.DeviceSelector) *Reason {
	for i, s := range selectors {
		if s.CEL == nil {
			continue // the allocator reports unknown selector types itself
		}
		if res := a.celCache.GetOrCompile(s.CEL.Expression); res.Error != nil {
			return &Reason{Code: CELError, Message: fmt.Sprintf("%s, selector #%d: CEL expression %q does not compile: %v",
				where, i, strings.TrimSpace(s.CEL.Expression), res.Error)}
		}
	}
	return nil
}
