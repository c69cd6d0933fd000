package simulator

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPlanDevice reads back the device strings claimAllocations writes: pool prefix, prioritized
// alternative and consumed capacity.
func TestPlanDevice(t *testing.T) {
	commits := []claimCommit{{claim: &resourcev1.ResourceClaim{}, result: resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Pool: "n1", Device: "gpu-0"},
			{Request: "gpu/h100", Pool: "shared-pool", Device: "gpu-1"},
			{Request: "gpu", Pool: "n1", Device: "gpu-2", ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("10Gi")}},
		}}}}}
	devs := claimAllocations("n1", commits)[0].Devices
	want := []struct {
		pool, device, memory string
	}{{"n1", "gpu-0", ""}, {"shared-pool", "gpu-1", ""}, {"n1", "gpu-2", "10Gi"}}
	for i, d := range devs {
		pool, device, consumed := planDevice("n1", d)
		mem := ""
		if q, ok := consumed["memory"]; ok {
			mem = q.String()
		}
		if pool != want[i].pool || device != want[i].device || mem != want[i].memory {
			t.Errorf("%q: pool %q device %q memory %q, want %+v", d, pool, device, mem, want[i])
		}
	}
}
