package dra

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// step places one pod on a hypothetical node; the steps of a scenario run in order and every
// pod that fits is committed, so later steps see its devices in use.
type step struct {
	pod  *corev1.Pod
	node string // default "n1"
	// want is the reason code, 0 if the pod fits.
	want ReasonCode
	// wantMessage must occur in the reason's message.
	wantMessage string
	// wantDevices, if set, are the allocated "request=pool/device".
	wantDevices []string
}

type scenario struct {
	name       string
	nodes      map[string]typeRef // hypothetical nodes by name
	mode       Mode
	consumable bool
	steps      []step
}

// repeat returns n steps placing pods made by mk(i) that all expect want.
func repeat(n int, want ReasonCode, mk func(i int) *corev1.Pod) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{pod: mk(i), want: want}
	}
	return out
}

func withTemplate(template string) func(i int) *corev1.Pod {
	return func(i int) *corev1.Pod {
		return newPod(template+"-"+string(rune('a'+i))).template("c", template).obj()
	}
}

func TestFit(t *testing.T) {
	one := func(tr typeRef) map[string]typeRef { return map[string]typeRef{"n1": tr} }
	cases := []scenario{
		{name: "A100 selector fits p4d.24xlarge", nodes: one(p4d), steps: []step{
			{pod: newPod("p").template("gpu", "a100-40gi-ampere").obj(), wantDevices: []string{"gpu=n1/gpu-0"}},
		}},
		{name: "A100 selector fits a2-highgpu-1g", nodes: one(a2), steps: []step{
			{pod: newPod("p").template("gpu", "a100-40gi-ampere").obj(), wantDevices: []string{"gpu=n1/gpu-0"}},
		}},
		{name: "A100 selector does not fit g6.xlarge (L4, 24Gi)", nodes: one(g6), steps: []step{
			{pod: newPod("p").template("gpu", "a100-40gi-ampere").obj(), want: NoDevice, wantMessage: "sim/p-gpu"},
		}},
		{name: "driver doc selector: memory > 40Gi excludes the 40Gi A100", nodes: one(a2), steps: []step{
			{pod: newPod("p").ns("gpu-example").template("gpu", "large-gpu").obj(), want: NoDevice},
			{pod: newPod("q").ns("gpu-example").template("gpu", "a100-gpu").obj()},
		}},
		// 8 GPUs / 2 per claim = 4 pods; the fifth finds none.
		{name: "two GPUs per claim, same node", nodes: one(p4d), steps: append([]step{
			{pod: newPod("first").template("g", "two-gpus").obj(), wantDevices: []string{"gpus=n1/gpu-0", "gpus=n1/gpu-1"}},
		}, append(repeat(3, 0, withTemplate("two-gpus")), step{pod: newPod("fifth").template("g", "two-gpus").obj(), want: NoDevice})...)},
		{name: "two GPUs do not fit a one-GPU node", nodes: one(a2), steps: []step{
			{pod: newPod("p").template("g", "two-gpus").obj(), want: NoDevice},
		}},
		// One GPU: if the shared claim were allocated per pod the second pod would not fit.
		{name: "claim shared by two pods is allocated once", nodes: one(a2), steps: []step{
			{pod: newPod("p1").claim("gpu", "shared-gpu").obj(), wantDevices: []string{"gpu=n1/gpu-0"}},
			{pod: newPod("p2").claim("gpu", "shared-gpu").obj(), wantDevices: []string{"gpu=n1/gpu-0"}},
			{pod: newPod("p3").template("gpu", "a100-40gi-ampere").obj(), want: NoDevice},
		}},
		{name: "shared claim allocated on another node", nodes: map[string]typeRef{"n1": a2, "n2": a2}, steps: []step{
			{pod: newPod("p1").claim("gpu", "shared-gpu").obj()},
			{pod: newPod("p2").claim("gpu", "shared-gpu").obj(), node: "n2", want: AllocatedElsewhere, wantMessage: "node n1"},
		}},
		{name: "firstAvailable falls back to the second subrequest", nodes: one(p4d), steps: []step{
			{pod: newPod("p").template("gpu", "h100-else-a100").obj(), wantDevices: []string{"gpu/a100=n1/gpu-0"}},
		}},
		{name: "firstAvailable takes the first subrequest when it can", nodes: one(p5), steps: []step{
			{pod: newPod("p").template("gpu", "h100-else-a100").obj(), wantDevices: []string{"gpu/h100=n1/gpu-0"}},
		}},
		// 40Gi GPU / 10Gi per claim = 4 claims; the fifth would need 50Gi.
		{name: "consumable capacity: four 10Gi claims share one 40Gi GPU", nodes: one(a2), consumable: true,
			steps: append(repeat(4, 0, withTemplate("gpu-10gi")), step{pod: newPod("fifth").template("g", "gpu-10gi").obj(), want: NoDevice})},
		// Without allowMultipleAllocations a capacity request only filters: the claim gets the GPU.
		{name: "capacity request on a GPU that is not shareable takes the whole GPU", nodes: one(a2), steps: []step{
			{pod: newPod("p").template("g", "gpu-10gi").obj(), wantDevices: []string{"gpu=n1/gpu-0"}},
			{pod: newPod("q").template("g", "gpu-10gi").obj(), want: NoDevice},
		}},
		// Driver demo template: 4Gi each; 40Gi / 4Gi = 10 claims.
		{name: "consumable capacity: driver's 4Gi memory share", nodes: one(a2), consumable: true,
			steps: append(repeat(10, 0, func(i int) *corev1.Pod {
				return newPod("share-"+string(rune('a'+i))).ns("gpu-share-memory").template("g", "gpu-4gi").obj()
			}), step{pod: newPod("eleventh").ns("gpu-share-memory").template("g", "gpu-4gi").obj(), want: NoDevice})},
		// 1g.5gb may start at slots 0..6: seven instances; slot 7 is only usable by larger ones.
		{name: "dynamic MIG A100-40GB: seven 1g.5gb fit, the eighth does not", nodes: one(a2), mode: DynamicMIG,
			steps: append(repeat(7, 0, withTemplate("mig-1g5gb")), step{pod: newPod("eighth").template("m", "mig-1g5gb").obj(), want: NoDevice})},
		// 4g.20gb starts only at 0 (slots 0-3); 3g.20gb at 0 or 4, so it must take 4-7. SMs 56+42 = 98.
		{name: "dynamic MIG: 3g.20gb + 4g.20gb in one pod, then nothing is left", nodes: one(a2), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").template("a", "mig-3g20gb").template("b", "mig-4g20gb").obj(),
				wantDevices: []string{"mig=n1/gpu-0-mig-3g20gb-9-4", "mig=n1/gpu-0-mig-4g20gb-5-0"}},
			{pod: newPod("q").template("m", "mig-1g5gb").obj(), want: NoDevice},
		}},
		{name: "dynamic MIG: 4g.20gb then 3g.20gb", nodes: one(a2), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").template("m", "mig-4g20gb").obj(), wantDevices: []string{"mig=n1/gpu-0-mig-4g20gb-5-0"}},
			{pod: newPod("q").template("m", "mig-3g20gb").obj(), wantDevices: []string{"mig=n1/gpu-0-mig-3g20gb-9-4"}},
		}},
		// The allocator does not move committed partitions: 3g.20gb first takes slot 0.
		{name: "dynamic MIG: 3g.20gb first blocks a later 4g.20gb", nodes: one(a2), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").template("m", "mig-3g20gb").obj(), wantDevices: []string{"mig=n1/gpu-0-mig-3g20gb-9-0"}},
			{pod: newPod("q").template("m", "mig-4g20gb").obj(), want: NoDevice},
		}},
		{name: "dynamic MIG: the driver demo's four partitions on one GPU", nodes: one(a2), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").ns("gpu-test4").template("m", "mig-devices").obj()},
		}},
		{name: "dynamic MIG on Ampere publishes no full GPU", nodes: one(a2), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").template("gpu", "a100-40gi-ampere").obj(), want: NoDevice},
		}},
		{name: "dynamic MIG on Hopper: the full GPU excludes its partitions", nodes: one(p5), mode: DynamicMIG, steps: append(
			repeat(8, 0, withTemplate("h100-else-a100")),
			step{pod: newPod("mig").template("m", "mig-any").obj(), want: NoDevice})},
		{name: "dynamic MIG on Hopper: partitions next to full GPUs", nodes: one(p5), mode: DynamicMIG, steps: []step{
			{pod: newPod("p").template("m", "mig-any").obj(), wantDevices: []string{"mig=n1/gpu-0-mig-1g10gb-19-0"}},
			{pod: newPod("q").template("gpu", "h100-else-a100").obj(), wantDevices: []string{"gpu/h100=n1/gpu-1"}},
		}},
		{name: "index selector of the time-slicing demo: GPUs 0, 2, 4, 6", nodes: one(p4d), steps: append(
			repeat(4, 0, func(i int) *corev1.Pod {
				return newPod("ts-"+string(rune('a'+i))).ns("gpu-test6").template("g", "a100").obj()
			}),
			step{pod: newPod("ts-e").ns("gpu-test6").template("g", "a100").obj(), want: NoDevice})},
		{name: "nvidia.com/gpu served by the DeviceClass's extendedResourceName", nodes: one(p4d), steps: []step{
			{pod: newPod("plain").gpus(2).obj(), wantDevices: []string{"extended-resource-0=n1/gpu-0", "extended-resource-0=n1/gpu-1"}},
		}},
		{name: "missing DeviceClass", nodes: one(p4d), steps: []step{
			{pod: newPod("p").template("t", "missing-class").obj(), want: MissingDeviceClass, wantMessage: `DeviceClass "tpu.example.com" does not exist`},
		}},
		{name: "CEL that does not compile", nodes: one(p4d), steps: []step{
			{pod: newPod("p").template("g", "bad-cel").obj(), want: CELError,
				wantMessage: `CEL expression "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA'" does not compile`},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			slices := map[string][]*resourcev1.ResourceSlice{}
			for name, tr := range tc.nodes {
				slices[name] = Slices(name, instanceType(t, tr.catalog, tr.name), tc.mode, tc.consumable)
			}
			for i, s := range tc.steps {
				name := s.node
				if name == "" {
					name = "n1"
				}
				results, reason := e.place(s.pod, node(name), slices[name])
				if got := codeOf(reason); got != s.want {
					t.Fatalf("step %d (%s on %s): got %v, want %v; devices %v", i, s.pod.Name, name, reason, s.want, devicesOf(results))
				}
				if s.wantMessage != "" && !strings.Contains(reason.Message, s.wantMessage) {
					t.Errorf("step %d: message %q does not contain %q", i, reason.Message, s.wantMessage)
				}
				if s.wantDevices != nil {
					if diff := cmp.Diff(s.wantDevices, devicesOf(results)); diff != "" {
						t.Errorf("step %d (%s): devices (-want +got):\n%s", i, s.pod.Name, diff)
					}
				}
			}
		})
	}
}

func codeOf(r *Reason) ReasonCode {
	if r == nil {
		return 0
	}
	return r.Code
}
