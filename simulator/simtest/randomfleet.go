package simtest

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// FleetScenario is a random workload to build a fleet for: the pending pods, the cost policy
// they are bought under (YAML) and the GPU shape of its GPU pool.
type FleetScenario struct {
	Snapshot *snapshot.Snapshot
	Policy   string
	// Shape is cpu, exclusive, time-slicing, mig or dra.
	Shape string
}

// fleetPolicyHead is the CPU pool every fleet scenario has.
const fleetPolicyHead = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
`

// fleetGPUPools are the GPU pools of the shapes, after fleetPolicyHead.
var fleetGPUPools = map[string]string{
	"cpu":          "",
	"exclusive":    "- name: gpu\n  instanceFamilies: [g6, g5, g4dn]\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n",
	"time-slicing": "- name: gpu\n  instanceFamilies: [g6, g5]\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n  gpu: {sharing: time-slicing, replicas: 4}\n",
	"mig":          "- name: gpu\n  instanceTypes: [p4d.24xlarge]\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n  gpu: {sharing: mig, migStrategy: mixed}\n",
	"dra":          "- name: gpu\n  instanceFamilies: [g6, g5]\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n",
}

// FleetShapes lists the GPU shapes RandomFleet draws from.
var FleetShapes = []string{"cpu", "exclusive", "time-slicing", "mig", "dra"}

// RandomFleet builds, from a seed, a workload of about pods pending pods on the embedded
// aws-us-east-1 catalog, every pod owned by a ReplicaSet: RandomSnapshot's CPU pods (sizes, node
// selectors and affinity, zone and hostname spread, pod (anti-)affinity, priorities, gangs) and,
// unless the shape is cpu, GPU workloads of the shape — whole GPUs, time-sliced replicas, MIG
// slices of three profiles, or DRA claims for a whole GPU (ResourceClaimTemplate, DeviceClass
// gpu.nvidia.com) — about a third of the pods.
func RandomFleet(seed uint64, pods int) *FleetScenario {
	r := rand.New(rand.NewPCG(seed, 0xf1ee7))
	shape := FleetShapes[seed%uint64(len(FleetShapes))]
	s := &snapshot.Snapshot{}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	gpuPods := 0
	if shape != "cpu" {
		gpuPods = pods / 3
	}
	for i := 0; i < pods-gpuPods; i++ {
		b := randomPod(r, i, zones)
		if _, ok := b.p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; ok && shape != "exclusive" {
			b = Pod(fmt.Sprintf("p-%03d", i)).Label("app", "plain").CPU("500m").Mem("1Gi")
		}
		s.Pods = append(s.Pods, b.Obj())
	}
	if shape == "dra" {
		addDRAObjects(s)
	}
	for i := 0; i < gpuPods; i++ {
		s.Pods = append(s.Pods, gpuWorkloadPod(r, shape, i).Obj())
	}
	WithControllers(s.Pods)
	return &FleetScenario{Snapshot: s, Policy: fleetPolicyHead + fleetGPUPools[shape], Shape: shape}
}

// gpuWorkloadPod is a GPU pod of the shape, in one of six apps.
func gpuWorkloadPod(r *rand.Rand, shape string, i int) *PodBuilder {
	app := fmt.Sprintf("gpu-%d", r.IntN(6))
	b := Pod(fmt.Sprintf("g-%03d", i)).Label("app", app).CPU(fmt.Sprintf("%dm", 250+r.IntN(3750))).
		Mem(fmt.Sprintf("%dMi", 512+r.IntN(15000))).Tolerate("nvidia.com/gpu")
	switch shape {
	case "exclusive":
		b.GPU(1 + r.IntN(2)*r.IntN(4))
	case "time-slicing":
		b.GPU(1)
	case "mig":
		b.Req("nvidia.com/mig-"+[]string{"1g.5gb", "2g.10gb", "3g.20gb"}[r.IntN(3)], "1")
		c := &b.p.Spec.Containers[0]
		c.Resources.Limits = c.Resources.Requests.DeepCopy()
	case "dra":
		b.p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}}
		b.p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	return b
}

// addDRAObjects adds the NVIDIA driver's GPU DeviceClass and a one-GPU claim template.
func addDRAObjects(s *snapshot.Snapshot) {
	dc := &resourcev1.DeviceClass{}
	dc.Name = "gpu.nvidia.com"
	dc.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}
	s.DeviceClasses = append(s.DeviceClasses, dc)
	t := &resourcev1.ResourceClaimTemplate{}
	t.Name, t.Namespace = "one-gpu", "default"
	t.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}}}
	s.ResourceClaimTemplates = append(s.ResourceClaimTemplates, t)
}
