package dra

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allocated returns a claim whose status holds the given results on a node.
func allocated(name string, results ...resourcev1.DeviceRequestAllocationResult) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: name},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
			Devices: resourcev1.DeviceAllocationResult{Results: results},
		}},
	}
}

func device(pool, name string) resourcev1.DeviceRequestAllocationResult {
	return resourcev1.DeviceRequestAllocationResult{Request: "r", Driver: DriverName, Pool: pool, Device: name}
}

// claimWith returns an unallocated claim in namespace sim with one request.
func claimWith(name string, req resourcev1.ExactDeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sim", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "r", Exactly: &req},
		}}},
	}
}

func TestExistingAllocationsReduceAvailability(t *testing.T) {
	static := loadSnapshot(t, "resourceslice-static.yaml").ResourceSlices
	p4dSlices := Slices("n1", instanceType(t, p4d.catalog, p4d.name), Full, false)
	a2Shared := Slices("n1", instanceType(t, a2.catalog, a2.name), Full, true)
	a2MIG := Slices("n1", instanceType(t, a2.catalog, a2.name), DynamicMIG, false)
	shareID := types.UID("3f1c5c1e-0000-4000-8000-000000000001")
	share := device("n1", "gpu-0")
	share.ShareID = &shareID
	share.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("30Gi")}
	admin := device("n1", "gpu-0")
	admin.AdminAccess = ptrTo(true)
	var sevenGPUs []resourcev1.DeviceRequestAllocationResult
	for i := range 7 {
		sevenGPUs = append(sevenGPUs, device("n1", "gpu-"+string(rune('0'+i))))
	}
	cases := []struct {
		name     string
		node     string
		slices   []*resourcev1.ResourceSlice
		existing []*resourcev1.ResourceClaim
		steps    []step
	}{
		{name: "driver doc slice: free A100", node: "ipp1-0033", slices: static, steps: []step{
			{pod: newPod("p").ns("gpu-example").template("g", "a100-gpu").obj(), wantDevices: []string{"gpu=ipp1-0033/gpu-0"}},
		}},
		{name: "driver doc slice: A100 in use", node: "ipp1-0033", slices: static,
			existing: []*resourcev1.ResourceClaim{allocated("holder", device("ipp1-0033", "gpu-0"))}, steps: []step{
				{pod: newPod("p").ns("gpu-example").template("g", "a100-gpu").obj(), want: NoDevice},
			}},
		// 8 GPUs − 7 in use = 1: one GPU fits, two do not.
		{name: "seven of eight GPUs in use", node: "n1", slices: p4dSlices,
			existing: []*resourcev1.ResourceClaim{allocated("seven", sevenGPUs...)}, steps: []step{
				{pod: newPod("two").template("g", "two-gpus").obj(), want: NoDevice},
				{pod: newPod("one").template("g", "a100-40gi-ampere").obj(), wantDevices: []string{"gpu=n1/gpu-7"}},
			}},
		// 40Gi − 30Gi shared = 10Gi: one 10Gi claim.
		{name: "consumed capacity of an existing share", node: "n1", slices: a2Shared,
			existing: []*resourcev1.ResourceClaim{allocated("share", share)}, steps: []step{
				{pod: newPod("p").template("g", "gpu-10gi").obj()},
				{pod: newPod("q").template("g", "gpu-10gi").obj(), want: NoDevice},
			}},
		{name: "admin access does not use the device", node: "n1", slices: a2Shared,
			existing: []*resourcev1.ResourceClaim{allocated("admin", admin)}, steps: []step{
				{pod: newPod("p").template("g", "a100-40gi-ampere").obj()},
			}},
		{name: "an allocated 7g.40gb consumes the GPU's counters", node: "n1", slices: a2MIG,
			existing: []*resourcev1.ResourceClaim{allocated("whole", device("n1", "gpu-0-mig-7g40gb-0-0"))}, steps: []step{
				{pod: newPod("p").template("m", "mig-1g5gb").obj(), want: NoDevice},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.slices, tc.existing...)
			for i, s := range tc.steps {
				results, reason := e.place(s.pod, node(tc.node), nil)
				if got := codeOf(reason); got != s.want {
					t.Fatalf("step %d (%s): got %v, want %v; devices %v", i, s.pod.Name, reason, s.want, devicesOf(results))
				}
				if s.wantDevices != nil {
					if diff := cmp.Diff(s.wantDevices, devicesOf(results)); diff != "" {
						t.Errorf("step %d: devices (-want +got):\n%s", i, diff)
					}
				}
			}
		})
	}
}

func TestCommitUndo(t *testing.T) {
	e := newEnv(t, nil)
	slices := Slices("n1", instanceType(t, a2.catalog, a2.name), Full, false)
	first := e.podClaims(newPod("p").template("g", "a100-40gi-ampere").obj(), nil)
	second := e.podClaims(newPod("q").template("g", "a100-40gi-ampere").obj(), nil)
	results, reason, err := e.alloc.Fit(node("n1"), slices, first)
	if err != nil || reason != nil {
		t.Fatalf("Fit: %v %v", reason, err)
	}
	undo := e.alloc.Commit(first[0], results[0])
	if again := e.alloc.Commit(first[0], results[0]); again == nil {
		t.Fatal("Commit of a committed claim returned no undo")
	}
	if _, reason, _ := e.alloc.Fit(node("n1"), slices, second); codeOf(reason) != NoDevice {
		t.Fatalf("after Commit: %v, want NoDevice", reason)
	}
	undo()
	if _, reason, _ := e.alloc.Fit(node("n1"), slices, second); reason != nil {
		t.Fatalf("after undo: %v, want a fit", reason)
	}
}

// Share IDs and results must not depend on the allocator's random UUIDs.
func TestFitIsDeterministic(t *testing.T) {
	run := func() []string {
		e := newEnv(t, nil)
		slices := Slices("n1", instanceType(t, a2.catalog, a2.name), Full, true)
		var out []string
		for _, name := range []string{"a", "b"} {
			results, reason := e.place(newPod(name).template("g", "gpu-10gi").obj(), node("n1"), slices)
			if reason != nil {
				t.Fatal(reason)
			}
			out = append(out, string(*results[0].Devices.Results[0].ShareID))
		}
		return out
	}
	first, second := run(), run()
	if diff := cmp.Diff(first, second); diff != "" || first[0] == first[1] {
		t.Errorf("share IDs %v then %v: not stable or not distinct", first, second)
	}
}

func TestFitReasons(t *testing.T) {
	runtimeCEL := claimWith("runtime-cel", resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com",
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.attributes['gpu.nvidia.com'].pcieRoot == 'pci0000:00'"}}}})
	tooMany := claimWith("too-many", resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 40})
	p4dSlices := Slices("n1", instanceType(t, p4d.catalog, p4d.name), Full, false)
	broken := Slices("n1", instanceType(t, a2.catalog, a2.name), Full, false)
	dup := broken[0].DeepCopy()
	dup.Name = "dup"
	broken[0].Spec.Pool.ResourceSliceCount = 2
	dup.Spec.Pool.ResourceSliceCount = 2
	broken = append(broken, dup)
	cases := []struct {
		name   string
		slices []*resourcev1.ResourceSlice
		claim  string
		want   ReasonCode
		text   string
	}{
		{"selector fails on a device without the attribute", p4dSlices, "runtime-cel", CELError, "CEL runtime error"},
		{"more devices than a claim may hold", p4dSlices, "too-many", InvalidClaim, "claim limit of 32"},
		{"pool with a device listed twice", broken, "shared-gpu", InvalidPool, "invalid resource pools"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, runtimeCEL, tooMany)
			_, reason := e.place(newPod("p").claim("c", tc.claim).obj(), node("n1"), tc.slices)
			if codeOf(reason) != tc.want || !strings.Contains(reason.Message, tc.text) {
				t.Errorf("got %v, want %v containing %q", reason, tc.want, tc.text)
			}
		})
	}
}

func TestFitInputErrors(t *testing.T) {
	e := newEnv(t, nil)
	if _, _, err := e.alloc.Fit(nil, nil, nil); err == nil {
		t.Error("Fit(nil node) returned no error")
	}
	if _, _, err := e.alloc.Fit(node("n1"), nil, []*resourcev1.ResourceClaim{nil}); err == nil {
		t.Error("Fit(nil claim) returned no error")
	}
	if _, err := NewAllocator([]*resourcev1.DeviceClass{{}}, nil, nil); err == nil || !strings.Contains(err.Error(), "deviceClasses[0]") {
		t.Errorf("NewAllocator with an unnamed class: %v", err)
	}
	bad := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	if _, err := NewAllocator(nil, []*resourcev1.ResourceSlice{bad}, nil); err == nil || !strings.Contains(err.Error(), "spec.driver") {
		t.Errorf("NewAllocator with a slice without driver: %v", err)
	}
}

// A claim listed twice in one Fit is allocated once and both entries get the same result.
func TestFitDuplicateClaim(t *testing.T) {
	e := newEnv(t, nil)
	claims := e.podClaims(newPod("p").claim("a", "shared-gpu").claim("b", "shared-gpu").obj(), nil)
	results, reason, err := e.alloc.Fit(node("n1"), Slices("n1", instanceType(t, a2.catalog, a2.name), Full, false), claims)
	if err != nil || reason != nil {
		t.Fatalf("Fit: %v %v", reason, err)
	}
	if diff := cmp.Diff(devicesOf(results[:1]), devicesOf(results[1:])); diff != "" {
		t.Errorf("results differ:\n%s", diff)
	}
}

// DeviceTaints is on: a NoSchedule taint hides a device unless the request tolerates it.
func TestFitDeviceTaints(t *testing.T) {
	slices := Slices("n1", instanceType(t, a2.catalog, a2.name), Full, false)
	slices[0].Spec.Devices[0].Taints = []resourcev1.DeviceTaint{{Key: "example.com/unhealthy", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	tolerant := claimWith("tolerant", resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com",
		Tolerations: []resourcev1.DeviceToleration{{Key: "example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists}}})
	e := newEnv(t, nil, tolerant)
	if _, reason := e.place(newPod("p").template("g", "a100-40gi-ampere").obj(), node("n1"), slices); codeOf(reason) != NoDevice {
		t.Errorf("tainted GPU: %v, want NoDevice", reason)
	}
	if results, reason := e.place(newPod("q").claim("g", "tolerant").obj(), node("n1"), slices); reason != nil {
		t.Errorf("tolerated taint: %v, devices %v", reason, devicesOf(results))
	}
}
