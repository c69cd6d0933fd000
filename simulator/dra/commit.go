package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Commit records an allocation (so later Fit calls see those devices/capacity as used) and
// returns an undo function. Committing a claim that already has an allocation (a claim shared by
// several pods, or one allocated in the snapshot) records nothing and returns a no-op undo.
// Undo functions must be called in reverse order of the commits they belong to, as when a
// simulation backtracks.
func (a *Allocator) Commit(claim *resourcev1.ResourceClaim, result resourcev1.AllocationResult) (undo func()) {
	key := claimKey(claim)
	if _, done := a.allocations[key]; done || claim.Status.Allocation != nil {
		return func() {}
	}
	result = *result.DeepCopy()
	a.allocations[key] = result
	change := addAllocation(&a.state, &result)
	return func() {
		removeChange(&a.state, change)
		delete(a.allocations, key)
	}
}

// stateChange is what one allocation added to the allocated state, for undo.
type stateChange struct {
	devices  []structured.DeviceID
	shared   []structured.SharedDeviceID
	capacity []structured.DeviceConsumedCapacity
}

// addAllocation marks an allocation's devices as in use, the way kube-scheduler's claim tracker does
// (foreachAllocatedDevice): devices allocated with admin access are not in use; a device shared
// through consumable capacity (a result with a ShareID) records the share and the capacity it
// consumes; any other device is in use as a whole.
func addAllocation(s *structured.AllocatedState, alloc *resourcev1.AllocationResult) stateChange {
	var c stateChange
	for _, r := range alloc.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID != nil {
			shared := structured.MakeSharedDeviceID(id, r.ShareID)
			if !s.AllocatedSharedDeviceIDs.Has(shared) {
				s.AllocatedSharedDeviceIDs.Insert(shared)
				c.shared = append(c.shared, shared)
			}
			if r.ConsumedCapacity != nil {
				consumed := structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity)
				s.AggregatedCapacity.Insert(consumed)
				c.capacity = append(c.capacity, consumed)
			}
			continue
		}
		if !s.AllocatedDevices.Has(id) {
			s.AllocatedDevices.Insert(id)
			c.devices = append(c.devices, id)
		}
	}
	return c
}

// removeChange takes back what addAllocation added.
func removeChange(s *structured.AllocatedState, c stateChange) {
	for _, id := range c.devices {
		s.AllocatedDevices.Delete(id)
	}
	for _, id := range c.shared {
		s.AllocatedSharedDeviceIDs.Delete(id)
	}
	for _, consumed := range c.capacity {
		s.AggregatedCapacity.Remove(consumed)
	}
}

// stableShareIDs replaces the random share IDs the allocator gives shared devices (a new UUID
// per allocation) with IDs derived from the claim, request and device, so that the same
// simulation always produces the same plan. They stay unique per device because a claim is
// allocated once.
func stableShareIDs(claim *resourcev1.ResourceClaim, result *resourcev1.AllocationResult) {
	for i := range result.Devices.Results {
		r := &result.Devices.Results[i]
		if r.ShareID == nil {
			continue
		}
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%s/%s/%s/%d", claimKey(claim), r.Request, r.Driver, r.Pool, r.Device, i)))
		h := hex.EncodeToString(sum[:16])
		id := types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
		r.ShareID = &id
	}
}
