package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Features returns the allocator features Fit enables: the DRA features that are on by default
// in Kubernetes v1.37 (AdminAccess, PrioritizedList, PartitionableDevices, DeviceTaints,
// DeviceBindingAndStatus, ConsumableCapacity — all beta or GA and default-on). The alpha ones
// (DerivedAttributes, CompatibilityGroups, ListTypeAttributes, FractionalCapacityRange,
// OptionalNodeOperations) stay off, as in a default kube-scheduler, which makes
// structured.NewAllocator pick its "incubating" implementation. DRA extended resources are not
// an allocator feature: ExtendedResourceClaim turns them into a claim first, as the scheduler's
// DynamicResources plugin does.
func Features() structured.Features {
	return structured.Features{
		AdminAccess:            true,
		PrioritizedList:        true,
		PartitionableDevices:   true,
		DeviceTaints:           true,
		DeviceBindingAndStatus: true,
		ConsumableCapacity:     true,
	}
}

// celCacheSize bounds the compiled selectors kept; a snapshot has a handful of classes and
// claim templates, so this is never reached in practice.
const celCacheSize = 1024

// Allocator decides whether ResourceClaims fit a node with kube-scheduler's allocator
// (k8s.io/dynamic-resource-allocation/structured) over a snapshot's DeviceClasses,
// ResourceSlices and allocated claims, and records the allocations the simulation commits.
// It is not safe for concurrent use.
type Allocator struct {
	features structured.Features
	classes  *classLister
	// nodeSlices are the snapshot's slices of one node; clusterSlices those not bound to a single
	// node by spec.nodeName (allNodes, nodeSelector, per-device node selection).
	nodeSlices    map[string][]*resourcev1.ResourceSlice
	clusterSlices []*resourcev1.ResourceSlice
	celCache      *cel.Cache
	// state holds the devices and capacity in use: the snapshot's allocated claims and every
	// Commit not undone. The structured allocator only reads it.
	state structured.AllocatedState
	// allocations are the allocation results by claim ("namespace/name"), so that a claim shared
	// by several pods is allocated once.
	allocations map[string]resourcev1.AllocationResult
}

// NewAllocator indexes the snapshot's DeviceClasses, existing ResourceSlices and the allocations
// of existing claims (devices in use), with one CEL cache for the whole simulation. Errors name
// the object at fault: a nil entry, a class without a name or listed twice, a slice without
// driver or pool, a claim listed twice.
func NewAllocator(classes []*resourcev1.DeviceClass, resourceSlices []*resourcev1.ResourceSlice, claims []*resourcev1.ResourceClaim) (*Allocator, error) {
	lister, err := newClassLister(classes)
	if err != nil {
		return nil, err
	}
	features := Features()
	a := &Allocator{
		features:   features,
		classes:    lister,
		nodeSlices: map[string][]*resourcev1.ResourceSlice{},
		celCache:   cel.NewCache(celCacheSize, cel.Features{EnableConsumableCapacity: features.ConsumableCapacity}),
		state: structured.AllocatedState{
			AllocatedDevices:         sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
			AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
		},
		allocations: map[string]resourcev1.AllocationResult{},
	}
	for i, s := range resourceSlices {
		if err := checkSlice(s); err != nil {
			return nil, fmt.Errorf("resourceSlices[%d]: %w", i, err)
		}
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			a.nodeSlices[*s.Spec.NodeName] = append(a.nodeSlices[*s.Spec.NodeName], s)
		} else {
			a.clusterSlices = append(a.clusterSlices, s)
		}
	}
	seen := sets.New[string]()
	for i, c := range claims {
		if c == nil {
			return nil, fmt.Errorf("resourceClaims[%d] is nil", i)
		}
		key := claimKey(c)
		if seen.Has(key) {
			return nil, fmt.Errorf("resourceClaims[%d]: claim %s is listed twice", i, key)
		}
		seen.Insert(key)
		if c.Status.Allocation != nil {
			a.allocations[key] = *c.Status.Allocation.DeepCopy()
			addAllocation(&a.state, c.Status.Allocation)
		}
	}
	return a, nil
}

// checkSlice rejects slices the allocator cannot place in a pool.
func checkSlice(s *resourcev1.ResourceSlice) error {
	switch {
	case s == nil:
		return fmt.Errorf("slice is nil")
	case s.Spec.Driver == "":
		return fmt.Errorf("slice %q: spec.driver is empty", s.Name)
	case s.Spec.Pool.Name == "":
		return fmt.Errorf("slice %q: spec.pool.name is empty", s.Name)
	}
	return nil
}

// Fit tries to allocate the claims on the node given the node's slices (for a hypothetical
// node, pass Slices(...) output; they are used in addition to the snapshot's slices of the node),
// with the devices already allocated on it. It returns one allocation result per claim, in
// order: a claim that is already allocated (in the snapshot or by Commit) keeps its allocation
// if that allows the node, and a claim listed twice is allocated once. When the claims do not
// fit, it returns a typed Reason (NoDevice, MissingDeviceClass, CELError, ...) with a message.
// Errors are only for bugs: a nil node or claim, or an allocator that cannot be built. Fit
// records nothing; call Commit for each result the simulation keeps.
func (a *Allocator) Fit(node *corev1.Node, extraSlices []*resourcev1.ResourceSlice, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, *Reason, error) {
	if node == nil || node.Name == "" {
		return nil, nil, fmt.Errorf("dra: Fit needs a node with a name")
	}
	results := make([]resourcev1.AllocationResult, len(claims))
	var pending []*resourcev1.ResourceClaim
	slot := make([]int, len(claims)) // index into pending, or -1 if already allocated
	first := map[string]int{}        // claim key → first index in claims
	for i, c := range claims {
		if c == nil {
			return nil, nil, fmt.Errorf("dra: claims[%d] is nil", i)
		}
		key := claimKey(c)
		if j, dup := first[key]; dup {
			slot[i] = slot[j]
			continue
		}
		first[key] = i
		slot[i] = -1
		if alloc, ok := a.allocationOf(c); ok {
			reason, err := a.checkAllocated(node, key, alloc)
			if reason != nil || err != nil {
				return nil, reason, err
			}
			results[i] = *alloc.DeepCopy()
			continue
		}
		slot[i] = len(pending)
		pending = append(pending, withDefaults(c))
	}
	var allocated []resourcev1.AllocationResult
	if len(pending) > 0 {
		var reason *Reason
		var err error
		allocated, reason, err = a.allocate(node, extraSlices, pending)
		if reason != nil || err != nil {
			return nil, reason, err
		}
	}
	for i := range claims {
		if slot[i] >= 0 {
			results[i] = *allocated[slot[i]].DeepCopy()
		} else if j := first[claimKey(claims[i])]; j != i {
			results[i] = *results[j].DeepCopy()
		}
	}
	return results, nil, nil
}

// allocate runs the upstream allocator for the claims that have no allocation yet.
func (a *Allocator) allocate(node *corev1.Node, extraSlices []*resourcev1.ResourceSlice, pending []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, *Reason, error) {
	if reason := a.validate(pending); reason != nil {
		return nil, reason, nil
	}
	for i, s := range extraSlices {
		if err := checkSlice(s); err != nil {
			return nil, nil, fmt.Errorf("dra: extraSlices[%d]: %w", i, err)
		}
	}
	candidates := slices.Concat(a.nodeSlices[node.Name], a.clusterSlices, extraSlices)
	// The structured allocator caches the counters in use per pool when it first needs them, so
	// a fresh one is built for each call; building it only groups the slices by node.
	ctx := context.Background()
	alloc, err := structured.NewAllocator(ctx, a.features, a.state, a.classes, candidates, a.celCache)
	if err != nil {
		return nil, nil, fmt.Errorf("dra: building the structured allocator: %w", err)
	}
	results, err := alloc.Allocate(ctx, node, pending)
	if err != nil {
		return nil, reasonFromAllocatorError(err), nil
	}
	if results == nil {
		return nil, a.noDevice(node, candidates, pending), nil
	}
	for i := range results {
		stableShareIDs(pending[i], &results[i])
	}
	return results, nil, nil
}

// noDevice explains an allocation that found no solution.
func (a *Allocator) noDevice(node *corev1.Node, candidates []*resourcev1.ResourceSlice, pending []*resourcev1.ResourceClaim) *Reason {
	devices := 0
	for _, s := range candidates {
		devices += len(s.Spec.Devices)
	}
	names := make([]string, len(pending))
	for i, c := range pending {
		names[i] = claimKey(c)
	}
	return &Reason{Code: NoDevice, Message: fmt.Sprintf("claims %s cannot be allocated on node %s: no combination of its %d free or shareable devices (in %d slices) satisfies them",
		strings.Join(names, ", "), node.Name, devices, len(candidates))}
}

// allocationOf returns the claim's allocation: from its status, or recorded by NewAllocator or
// Commit.
func (a *Allocator) allocationOf(c *resourcev1.ResourceClaim) (*resourcev1.AllocationResult, bool) {
	if c.Status.Allocation != nil {
		return c.Status.Allocation, true
	}
	if r, ok := a.allocations[claimKey(c)]; ok {
		return &r, true
	}
	return nil, false
}

// checkAllocated reports AllocatedElsewhere when an existing allocation excludes the node. An
// allocation without node selector is usable everywhere.
func (a *Allocator) checkAllocated(node *corev1.Node, key string, alloc *resourcev1.AllocationResult) (*Reason, error) {
	ok, err := structured.NodeMatches(a.features, node, "", alloc.NodeSelector == nil, alloc.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("dra: matching the node selector of claim %s: %w", key, err)
	}
	if ok {
		return nil, nil
	}
	return &Reason{Code: AllocatedElsewhere, Message: fmt.Sprintf("claim %s is allocated for %s, not node %s",
		key, describeSelector(alloc.NodeSelector), node.Name)}, nil
}

// describeSelector renders the allocator's usual node selector (metadata.name In [nodes]) as the
// node names and anything else generically.
func describeSelector(ns *corev1.NodeSelector) string {
	var names []string
	for _, t := range ns.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn {
				names = append(names, f.Values...)
			}
		}
	}
	if len(names) == 0 {
		return "other nodes (node selector)"
	}
	return "node " + strings.Join(names, ", ")
}

// claimKey identifies a claim: "namespace/name".
func claimKey(c *resourcev1.ResourceClaim) string { return c.Namespace + "/" + c.Name }
