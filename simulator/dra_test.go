package simulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// draClasses are the NVIDIA driver's GPU and MIG DeviceClasses (testdata/dra/deviceclasses.yaml).
const draClasses = `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}
  extendedResourceName: nvidia.com/gpu
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}
`

// draTemplates are claim templates in namespace ml.
const draTemplates = `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: h100-else-a100}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: h100
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].productName.matches('H100')"}
        - name: a100
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].productName.matches('A100')"}
`

// claimPod is a pending pod in namespace ml that tolerates the GPU taint, with the given
// spec.resourceClaims entries (YAML flow items) and CPU.
func claimPod(name, claims, cpu string) string {
	return fmt.Sprintf(`
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: ml, labels: {app: %s}}
spec:
  resourceClaims: [%s]
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: c
    image: x
    resources:
      requests: {cpu: '%s', memory: 4Gi}
`, name, name, claims, cpu)
}

// gpuPod is a pending pod in namespace ml that requests plain nvidia.com/gpu.
func gpuPod(name string, gpus int) string {
	return fmt.Sprintf(`
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: ml}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: c
    image: x
    resources:
      requests: {cpu: '1', memory: 4Gi}
      limits: {nvidia.com/gpu: '%d'}
`, name, gpus)
}

// draPolicy is a policy with one tainted GPU pool of the types, configured by gpu (a YAML flow
// mapping, or "").
func draPolicy(types, gpu string) string {
	p := fmt.Sprintf(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: dra
  instanceTypes: [%s]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`, types)
	if gpu != "" {
		p += "  gpu: " + gpu + "\n"
	}
	return p
}

func simulateDRA(t *testing.T, catalogName, pol, snap string, opts simulator.Options) *api.Plan {
	t.Helper()
	s, err := snapshot.Decode(strings.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded(catalogName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Seed == "" {
		opts.Seed = "dra"
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: s, Catalog: cat, Policy: p, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.InFlight) == 0 { // the checker knows the snapshot's nodes and the plan's only
		for _, v := range simtest.Check(s, plan) {
			t.Errorf("checker: %s", v)
		}
	}
	if len(plan.Warnings) > 0 {
		t.Errorf("warnings: %v", plan.Warnings)
	}
	return plan
}

// nodeOf returns the new node holding the pod.
func nodeOf(t *testing.T, plan *api.Plan, pod string) api.NewNode {
	t.Helper()
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			if p == pod {
				return n
			}
		}
	}
	t.Fatalf("pod %s is on no new node; plan:\n%s", pod, table(plan))
	return api.NewNode{}
}

func table(plan *api.Plan) string {
	var b bytes.Buffer
	_ = plan.WriteTable(&b)
	return b.String()
}

func reasonOf(plan *api.Plan, pod string) (api.UnschedulablePod, bool) {
	for _, u := range plan.Unschedulable {
		if u.Pod == pod {
			return u, true
		}
	}
	return api.UnschedulablePod{}, false
}

// TestDRAExtendedResource: with a DeviceClass whose extendedResourceName is nvidia.com/gpu, a
// pod asking for plain nvidia.com/gpu is served by the device plugin where the node advertises
// the resource, and through DRA (a claim for the pod) where it does not.
func TestDRAExtendedResource(t *testing.T) {
	snap := draClasses + gpuPod("plain", 1)
	t.Run("dynamic-mig Hopper node: DRA serves it", func(t *testing.T) {
		plan := simulateDRA(t, "gcp-us-central1", draPolicy("a3-highgpu-1g, a3-highgpu-2g", "{sharing: dynamic-mig}"), snap, simulator.Options{})
		n := nodeOf(t, plan, "ml/plain")
		if n.InstanceType != "a3-highgpu-1g" {
			t.Errorf("type %s, want a3-highgpu-1g", n.InstanceType)
		}
		if _, ok := n.Allocatable["nvidia.com/gpu"]; ok {
			t.Errorf("a dynamic-mig node advertises nvidia.com/gpu: %v", n.Allocatable)
		}
		want := []api.ClaimAllocation{{Claim: "ml/plain-extended-resources", Devices: []string{"gpu-0"}}}
		if diff := cmp.Diff(want, n.Claims); diff != "" {
			t.Errorf("claims (-want +got):\n%s", diff)
		}
	})
	t.Run("exclusive node: the device plugin serves it", func(t *testing.T) {
		plan := simulateDRA(t, "gcp-us-central1", draPolicy("a3-highgpu-1g, a2-highgpu-1g", ""), snap, simulator.Options{})
		n := nodeOf(t, plan, "ml/plain")
		if n.InstanceType != "a2-highgpu-1g" || len(n.Claims) != 0 {
			t.Errorf("got %s with claims %v, want a2-highgpu-1g without claims", n.InstanceType, n.Claims)
		}
	})
	t.Run("dynamic-mig Ampere node publishes no whole GPU", func(t *testing.T) {
		plan := simulateDRA(t, "gcp-us-central1", draPolicy("a2-highgpu-1g", "{sharing: dynamic-mig}"), snap, simulator.Options{})
		u, ok := reasonOf(plan, "ml/plain")
		if !ok || u.Code != api.NeverFits || !strings.Contains(u.Reason, "ml/plain-extended-resources") {
			t.Errorf("got %+v, want NeverFits naming the claim ml/plain-extended-resources", u)
		}
	})
	t.Run("two GPUs of one node", func(t *testing.T) {
		plan := simulateDRA(t, "gcp-us-central1", draPolicy("a3-highgpu-1g, a3-highgpu-2g, a3-highgpu-4g", "{sharing: dynamic-mig}"),
			draClasses+gpuPod("pair", 2), simulator.Options{})
		n := nodeOf(t, plan, "ml/pair")
		want := []api.ClaimAllocation{{Claim: "ml/pair-extended-resources", Devices: []string{"gpu-0", "gpu-1"}}}
		if n.InstanceType != "a3-highgpu-2g" || !cmp.Equal(want, n.Claims) {
			t.Errorf("got %s with %v, want a3-highgpu-2g with %v", n.InstanceType, n.Claims, want)
		}
	})
}

// TestDRAOneGPUOnePublisher: a node's GPUs are handed out by the device plugin or by the DRA
// driver, never both, or each GPU would go to two pods. A plain nvidia.com/gpu pod and a claim
// pod, which by CPU fit one one-GPU g6.xlarge together, get a node each: the plain pod one of
// the device plugin, the claim one of the DRA driver (before, both were planned on one node, its
// L4 given twice). A pool's gpu.driver pins one: dra serves the plain pod through the
// DeviceClass's extendedResourceName (and cannot without it); device-plugin cannot serve the
// claim.
func TestDRAOneGPUOnePublisher(t *testing.T) {
	snap := draClasses + draTemplates + gpuPod("plain", 1) + claimPod("claimed", "{name: gpu, resourceClaimTemplateName: one-gpu}", "1")
	plugin := func(n api.NewNode) bool {
		_, ok := n.Allocatable[api.ResourceGPU]
		return ok && (n.GPU == nil || !n.GPU.DRAPublishes())
	}
	driver := func(n api.NewNode) bool {
		_, ok := n.Allocatable[api.ResourceGPU]
		return !ok && n.GPU != nil && n.GPU.DRA
	}

	plan := simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge", ""), snap, simulator.Options{})
	p, c := nodeOf(t, plan, "ml/plain"), nodeOf(t, plan, "ml/claimed")
	if len(plan.NewNodes) != 2 || !plugin(p) || len(p.Claims) != 0 || !driver(c) {
		t.Errorf("want the plain pod on a device-plugin node and the claim on a DRA-driver node\n%s", table(plan))
	}

	plan = simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge", "{driver: dra}"), snap, simulator.Options{})
	p, c = nodeOf(t, plan, "ml/plain"), nodeOf(t, plan, "ml/claimed")
	want := []api.ClaimAllocation{{Claim: "ml/plain-extended-resources", Devices: []string{"gpu-0"}}}
	if len(plan.NewNodes) != 2 || !driver(p) || !driver(c) || !cmp.Equal(want, p.Claims) {
		t.Errorf("driver dra: want both on DRA-driver nodes, the plain pod through its extended-resource claim\n%s", table(plan))
	}
	noExtended := strings.Replace(snap, "  extendedResourceName: nvidia.com/gpu\n", "", 1)
	plan = simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge", "{driver: dra}"), noExtended, simulator.Options{})
	if _, ok := reasonOf(plan, "ml/plain"); !ok {
		t.Errorf("driver dra without a DeviceClass serving nvidia.com/gpu: the plain pod was planned\n%s", table(plan))
	}

	plan = simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge", "{driver: device-plugin}"), snap, simulator.Options{})
	if p := nodeOf(t, plan, "ml/plain"); !plugin(p) || len(plan.NewNodes) != 1 {
		t.Errorf("driver device-plugin: want one device-plugin node for the plain pod\n%s", table(plan))
	}
	if u, ok := reasonOf(plan, "ml/claimed"); !ok || !strings.Contains(u.Reason, "ml/claimed-gpu") {
		t.Errorf("driver device-plugin: the claim pod got %+v, want unschedulable naming its claim\n%s", u, table(plan))
	}
	// A second pod of the same claim template: the reason is cached per claim spec, but each pod's
	// names its own claim (it named the first pod's).
	second := snap + claimPod("again", "{name: gpu, resourceClaimTemplateName: one-gpu}", "1")
	plan = simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge", "{driver: device-plugin}"), second, simulator.Options{})
	for _, pod := range []string{"ml/claimed", "ml/again"} {
		u, ok := reasonOf(plan, pod)
		if !ok || !strings.Contains(u.Reason, pod+"-gpu") {
			t.Errorf("driver device-plugin: %s got %+v, want unschedulable naming its own claim %s-gpu\n%s", pod, u, pod, table(plan))
		}
	}
}

// TestDRAExistingNode: an existing node without the device plugin publishes two GPUs; one is
// taken by a running pod's allocated claim. The first pending claim gets the other, the second
// needs a new node; a plain nvidia.com/gpu pod is served there by DRA too.
func TestDRAExistingNode(t *testing.T) {
	existing := draRunning("us-central1-a")
	snap := draClasses + draTemplates + existing +
		claimPod("first", "{name: gpu, resourceClaimTemplateName: one-gpu}", "4") +
		claimPod("second", "{name: gpu, resourceClaimTemplateName: one-gpu}", "4")
	plan := simulateDRA(t, "gcp-us-central1", draPolicy("g2-standard-4, g2-standard-8", ""), snap, simulator.Options{})
	want := []api.ExistingNode{{Name: "gpu-node", Pods: []string{"ml/first"},
		Claims: []api.ClaimAllocation{{Claim: "ml/first-gpu", Devices: []string{"gpu-1"}}}}}
	if diff := cmp.Diff(want, plan.ExistingNodes); diff != "" {
		t.Errorf("existing nodes (-want +got):\n%s\n%s", diff, table(plan))
	}
	if n := nodeOf(t, plan, "ml/second"); n.InstanceType != "g2-standard-8" {
		t.Errorf("second: %s, want g2-standard-8 (4 CPU do not fit g2-standard-4's allocatable)", n.InstanceType)
	}

	// The running claim keeps gpu-0; a plain GPU request is served on the node through DRA.
	plan = simulateDRA(t, "gcp-us-central1", draPolicy("g2-standard-4", ""), draClasses+existing+gpuPod("plain", 1), simulator.Options{})
	want = []api.ExistingNode{{Name: "gpu-node", Pods: []string{"ml/plain"},
		Claims: []api.ClaimAllocation{{Claim: "ml/plain-extended-resources", Devices: []string{"gpu-1"}}}}}
	if diff := cmp.Diff(want, plan.ExistingNodes); diff != "" {
		t.Errorf("plain GPU pod (-want +got):\n%s\n%s", diff, table(plan))
	}
}

// TestDRAReplay: when the cheapest type of a node changes, the claims already on it are
// allocated again for the new type. The prioritized list takes an H100 on a p5.4xlarge; the
// second claim does not fit that one GPU, the node becomes a p4d.24xlarge (8×A100) and both
// claims take A100s — the first claim must not keep its H100 alternative.
func TestDRAReplay(t *testing.T) {
	snap := draClasses + draTemplates +
		claimPod("a", "{name: gpu, resourceClaimTemplateName: h100-else-a100}", "1") +
		claimPod("b", "{name: gpu, resourceClaimTemplateName: h100-else-a100}", "1")
	pol := draPolicy("p5.4xlarge, p4d.24xlarge", "")
	plan := simulateDRA(t, "aws-us-east-1", pol, snap, simulator.Options{})
	n := nodeOf(t, plan, "ml/a")
	want := []api.ClaimAllocation{
		{Claim: "ml/a-gpu", Devices: []string{"gpu-0 (gpu/a100)"}},
		{Claim: "ml/b-gpu", Devices: []string{"gpu-1 (gpu/a100)"}},
	}
	if n.InstanceType != "p4d.24xlarge" || !cmp.Equal(want, n.Claims) {
		t.Errorf("got %s with %v, want p4d.24xlarge with %v\n%s", n.InstanceType, n.Claims, want, table(plan))
	}
	// One pod alone keeps the H100.
	plan = simulateDRA(t, "aws-us-east-1", pol, draClasses+draTemplates+claimPod("a", "{name: gpu, resourceClaimTemplateName: h100-else-a100}", "1"), simulator.Options{})
	n = nodeOf(t, plan, "ml/a")
	if n.InstanceType != "p5.4xlarge" || len(n.Claims) != 1 || n.Claims[0].Devices[0] != "gpu-0 (gpu/h100)" {
		t.Errorf("got %s with %v, want p5.4xlarge with gpu-0 (gpu/h100)", n.InstanceType, n.Claims)
	}
}

const sharedClaim = `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {namespace: ml, name: shared}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
`

// TestDRAGangRevert: a gang that cannot be placed whole is reverted, allocations included: the
// claim its members shared is free again for a pod outside the gang.
func TestDRAGangRevert(t *testing.T) {
	gangPod := func(name string) string {
		return strings.Replace(claimPod(name, "{name: gpu, resourceClaimName: shared}", "2"),
			"labels: {app: "+name+"}", "labels: {app: "+name+", tiler.dev/gang: g, tiler.dev/gang-size: '3', tiler.dev/topology: node}", 1)
	}
	// g2-standard-8 allocates about 7.9 CPU: three 2-CPU members and the shared GPU fit, but the
	// third member's own second GPU does not fit a one-GPU type.
	third := strings.Replace(gangPod("m2"), "resourceClaims: [{name: gpu, resourceClaimName: shared}]",
		"resourceClaims: [{name: gpu, resourceClaimName: shared}, {name: own, resourceClaimTemplateName: one-gpu}]", 1)
	snap := draClasses + draTemplates + sharedClaim + gangPod("m0") + gangPod("m1") + third +
		claimPod("outsider", "{name: gpu, resourceClaimName: shared}", "1")
	plan := simulateDRA(t, "gcp-us-central1", draPolicy("g2-standard-8", ""), snap, simulator.Options{})
	for _, m := range []string{"ml/m0", "ml/m1", "ml/m2"} {
		if u, ok := reasonOf(plan, m); !ok || u.Code != api.GangIncomplete {
			t.Errorf("%s: got %+v, want GangIncomplete", m, u)
		}
	}
	n := nodeOf(t, plan, "ml/outsider")
	want := []api.ClaimAllocation{{Claim: "ml/shared", Devices: []string{"gpu-0"}}}
	if diff := cmp.Diff(want, n.Claims); diff != "" {
		t.Errorf("outsider's claims (-want +got):\n%s\n%s", diff, table(plan))
	}
}

// TestDRASharedClaimPinned: the second pod of a shared claim can only go to the claim's node;
// when that node cannot take it, it is Unschedulable with a reason naming the claim.
func TestDRASharedClaimPinned(t *testing.T) {
	snap := draClasses + sharedClaim +
		claimPod("p1", "{name: gpu, resourceClaimName: shared}", "7") +
		claimPod("p2", "{name: gpu, resourceClaimName: shared}", "7")
	plan := simulateDRA(t, "gcp-us-central1", draPolicy("g2-standard-8", ""), snap, simulator.Options{})
	placed := nodeOf(t, plan, "ml/p1")
	u, ok := reasonOf(plan, "ml/p2")
	if !ok || u.Code != api.Unschedulable || !strings.Contains(u.Reason, "claim ml/shared is allocated on node "+placed.Name) {
		t.Errorf("p2: got %+v, want Unschedulable naming claim ml/shared and node %s", u, placed.Name)
	}
}

// TestDRAInFlight: an in-flight GPU node launched for the DRA driver counts with the slices the
// driver will publish, so a claim pod goes there instead of buying again; one launched for the
// device plugin publishes none, so the claim pod gets a node of its own.
func TestDRAInFlight(t *testing.T) {
	snap := draClasses + draTemplates + claimPod("p", "{name: gpu, resourceClaimTemplateName: one-gpu}", "1")
	inFlight := func(g api.GPUConfig) simulator.Options {
		return simulator.Options{InFlight: []simulator.InFlightNode{{Name: "tiler-dra-launching", Pool: "dra", GPU: &g,
			PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "a2-highgpu-1g", Zone: "us-central1-a", CapacityType: api.Spot}, PricePerHour: 1.928}}}}
	}
	plan := simulateDRA(t, "gcp-us-central1", draPolicy("a2-highgpu-1g", ""), snap, inFlight(api.GPUConfig{Sharing: api.Exclusive, DRA: true}))
	want := []api.ExistingNode{{Name: "tiler-dra-launching", Pods: []string{"ml/p"},
		Claims: []api.ClaimAllocation{{Claim: "ml/p-gpu", Devices: []string{"gpu-0"}}}}}
	if diff := cmp.Diff(want, plan.ExistingNodes); diff != "" || len(plan.NewNodes) != 0 {
		t.Errorf("existing (-want +got):\n%s\n%s", diff, table(plan))
	}
	plan = simulateDRA(t, "gcp-us-central1", draPolicy("a2-highgpu-1g", ""), snap, inFlight(api.GPUConfig{Sharing: api.Exclusive}))
	if n := nodeOf(t, plan, "ml/p"); n.GPU == nil || !n.GPU.DRA {
		t.Errorf("claim pod on %s (%+v), want a node of the DRA driver, not the device plugin's in-flight one\n%s", n.Name, n.GPU, table(plan))
	}
}

// TestDRADeterministic: the same DRA input gives a byte-identical plan.
func TestDRADeterministic(t *testing.T) {
	snap := draClasses + draTemplates + sharedClaim
	for i := range 12 {
		switch i % 3 {
		case 0:
			snap += claimPod(fmt.Sprintf("t%d", i), "{name: gpu, resourceClaimTemplateName: one-gpu}", "2")
		case 1:
			snap += claimPod(fmt.Sprintf("s%d", i), "{name: gpu, resourceClaimName: shared}", "1")
		default:
			snap += claimPod(fmt.Sprintf("h%d", i), "{name: gpu, resourceClaimTemplateName: h100-else-a100}", "4")
		}
	}
	pol := draPolicy("g6.xlarge, g6.12xlarge, p4d.24xlarge, p5.4xlarge", "")
	var first []byte
	for range 3 {
		b, err := json.Marshal(simulateDRA(t, "aws-us-east-1", pol, snap, simulator.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatal("plans differ between runs")
		}
	}
}

// TestConsumableMemoryPolicy: gpu.consumableMemory needs GPUs the DRA driver publishes.
func TestConsumableMemoryPolicy(t *testing.T) {
	for _, tc := range []struct {
		gpu, wantErr string
	}{
		{gpu: "{consumableMemory: true}"},
		{gpu: "{sharing: exclusive, consumableMemory: true}"},
		{gpu: "{sharing: dynamic-mig, consumableMemory: true}"},
		{gpu: "{sharing: time-slicing, replicas: 4, consumableMemory: true}", wantErr: `pools[0]: gpu.consumableMemory needs sharing exclusive or dynamic-mig`},
		{gpu: "{sharing: mig, consumableMemory: true}", wantErr: `pools[0]: gpu.consumableMemory needs sharing exclusive or dynamic-mig`},
	} {
		_, err := policy.Parse([]byte(draPolicy("a2-highgpu-1g", tc.gpu)))
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("gpu %s: error %v, want %q", tc.gpu, err, tc.wantErr)
		}
	}
}

// TestAnyGPUPodsLeaveA100sToA100Pods: eight pods whose claims need an A100 (no H100 in the
// pool) and eight that any GPU will do, sizes interleaved. The A100 pods are placed first (they
// fit fewer offerings), fill one p4d.24xlarge, and the any-GPU pods go to L4 nodes; in plain
// size order the any-GPU pods took A100s and a second p4d was bought.
func TestAnyGPUPodsLeaveA100sToA100Pods(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(draClasses + draTemplates)
	for i := range 16 {
		tmpl := []string{"h100-else-a100", "one-gpu"}[i%2]
		sb.WriteString(claimPod(fmt.Sprintf("p%02d", i), "{name: gpu, resourceClaimTemplateName: "+tmpl+"}", fmt.Sprint(1+i/2%4)))
	}
	plan := simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge, g6.2xlarge, p4d.24xlarge", ""), sb.String(), simulator.Options{})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %+v", plan.Unschedulable)
	}
	p4d := 0
	for _, n := range plan.NewNodes {
		if n.InstanceType == "p4d.24xlarge" {
			p4d++
			for _, p := range n.Pods {
				var i int
				fmt.Sscanf(p, "ml/p%d", &i)
				if i%2 == 1 {
					t.Errorf("any-GPU pod %s on the A100 node %s", p, n.Name)
				}
			}
		}
	}
	if p4d != 1 {
		t.Errorf("%d p4d.24xlarge nodes, want 1 (plan $%.2f/h)", p4d, plan.CostPerHour)
	}
}

// TestDRAMixedAllocationsConsistent: plain GPU pods of one to three GPUs, which the DeviceClass
// serves through its extendedResourceName on DRA nodes, beside one-GPU claims, with 1–6 CPU, on
// one-, four- and eight-GPU types: every new node hands out each GPU once — a DRA node's devices
// to one claim each, each plain pod there getting its own extended-resource claim of as many
// devices as it asks GPUs, a device-plugin node's plain pods within its nvidia.com/gpu. Nodes grow
// and change between the two publishers while packing, so their claims are allocated again
// (replay, remembered per node version) many times.
func TestDRAMixedAllocationsConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 7))
	for c := 0; c < 6; c++ {
		var sb strings.Builder
		sb.WriteString(draClasses + draTemplates)
		gpus := map[string]int{}
		for i := range 40 {
			name := fmt.Sprintf("p%02d", i)
			if r.IntN(2) == 0 {
				g := 1 + r.IntN(3)
				gpus["ml/"+name] = g
				sb.WriteString(strings.Replace(gpuPod(name, g), "cpu: '1'", fmt.Sprintf("cpu: '%d'", 1+r.IntN(6)), 1))
				continue
			}
			sb.WriteString(claimPod(name, "{name: gpu, resourceClaimTemplateName: one-gpu}", fmt.Sprint(1+r.IntN(6))))
		}
		plan := simulateDRA(t, "aws-us-east-1", draPolicy("g6.xlarge, g6.12xlarge, g6.48xlarge", ""), sb.String(), simulator.Options{})
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("case %d: unschedulable %+v", c, plan.Unschedulable)
		}
		for _, n := range plan.NewNodes {
			used := map[string]string{}
			for _, a := range n.Claims {
				want := 1
				if pod, ok := strings.CutSuffix(a.Claim, "-extended-resources"); ok {
					want = gpus[pod]
				}
				if len(a.Devices) != want {
					t.Errorf("case %d: node %s: claim %s has devices %v, want %d", c, n.Name, a.Claim, a.Devices, want)
				}
				for _, d := range a.Devices {
					if prev, ok := used[d]; ok {
						t.Errorf("case %d: node %s: device %s given to %s and %s", c, n.Name, d, prev, a.Claim)
					}
					used[d] = a.Claim
				}
			}
			plain := 0
			for _, p := range n.Pods {
				if g, ok := gpus[p]; ok && !slices.ContainsFunc(n.Claims, func(a api.ClaimAllocation) bool { return a.Claim == p+"-extended-resources" }) {
					plain += g
				}
			}
			if have := n.Allocatable.Name(api.ResourceGPU, "").Value(); int64(plain) > have || plain > 0 && len(used) > 0 {
				t.Errorf("case %d: node %s: %d device-plugin GPUs asked of %d, beside %d DRA devices\n%s", c, n.Name, plain, have, len(used), table(plan))
			}
		}
	}
}

// migProfileTemplates are claim templates in namespace ml for one dynamic-MIG partition of a
// profile: mig-1g5gb and mig-2g10gb.
var migProfileTemplates = migProfileTemplate("1g.5gb") + migProfileTemplate("2g.10gb")

// migProfileTemplate is the claim template mig-<profile without dots> for one partition of it.
func migProfileTemplate(profile string) string {
	return fmt.Sprintf(`
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: mig-%s}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '%s'"}
`, strings.ReplaceAll(profile, ".", ""), profile)
}

// TestDRAAllocatesInSchedulerOrder: on a dynamic-MIG node the allocator fits first, so what a
// claim gets depends on the order the claims come in, and the plan allocates in the scheduler's
// (priority, then creation, then name). Five 1g.5gb pods and one 2g.10gb pod fit one A100 only
// when the 2g.10gb comes first (slots 0-1, the 1g.5gb in 2-6): created last, it finds slots 0-4
// taken, and a 2g.10gb starts at slot 0, 2 or 4. The plan used to allocate in placement order
// (the 2g.10gb pod, asking more CPU, first), planned all six on one GPU, and the scheduler left
// the 2g.10gb pod without a place (fidelity seed 99 with DRA, soft constraints and narrow
// zones). Created first, the 2g.10gb pod has its slots, and the six share one one-GPU node.
func TestDRAAllocatesInSchedulerOrder(t *testing.T) {
	snapWith := func(bigCreated string) string {
		snap := draClasses + migProfileTemplates
		for i := range 5 {
			snap += strings.Replace(claimPod(fmt.Sprintf("a%d", i), "{name: mig, resourceClaimTemplateName: mig-1g5gb}", "1"),
				"metadata: {", "metadata: {creationTimestamp: '2026-12-01T10:00:05Z', ", 1)
		}
		// b asks for more CPU: placed by size, it would come first.
		return snap + strings.Replace(claimPod("b", "{name: mig, resourceClaimTemplateName: mig-2g10gb}", "2"),
			"metadata: {", "metadata: {creationTimestamp: '"+bigCreated+"', ", 1)
	}
	pol := draPolicy("a2-highgpu-1g, a2-highgpu-2g", "{sharing: dynamic-mig}")
	// smallOnGPUOfBig counts the 1g.5gb partitions on the GPU of b's 2g.10gb.
	smallOnGPUOfBig := func(plan *api.Plan) int {
		n := nodeOf(t, plan, "ml/b")
		gpu, small := "", 0
		for _, c := range n.Claims {
			if c.Claim == "ml/b-mig" {
				gpu, _, _ = strings.Cut(c.Devices[0], "-mig-")
			}
		}
		for _, c := range n.Claims {
			if strings.HasPrefix(c.Devices[0], gpu+"-mig-1g5gb") {
				small++
			}
		}
		return small
	}
	first := simulateDRA(t, "gcp-us-central1", pol, snapWith("2026-12-01T10:00:00Z"), simulator.Options{})
	if len(first.NewNodes) != 1 || first.NewNodes[0].InstanceType != "a2-highgpu-1g" || smallOnGPUOfBig(first) != 5 {
		t.Errorf("2g.10gb pod created first: want all six on one a2-highgpu-1g\n%s", table(first))
	}
	last := simulateDRA(t, "gcp-us-central1", pol, snapWith("2026-12-01T10:00:09Z"), simulator.Options{})
	if k := smallOnGPUOfBig(last); k > 4 {
		t.Errorf("2g.10gb pod created last: its GPU holds %d 1g.5gb partitions allocated before it, so no slot 0, 2 or 4 is left for it\n%s", k, table(last))
	}
	if len(last.Unschedulable) > 0 {
		t.Errorf("unschedulable: %v", last.Unschedulable)
	}
}

// TestDRAAllocatesOutOfOrderByReplay: a gang is placed before the other pods of its priority,
// so a pod the scheduler takes before the gang's members, with other claims, comes to a node
// already holding them; its claims and theirs are then allocated again in the scheduler's order
// (replay), and it shares the node. Refused instead, it bought a second p4d.24xlarge for one
// 2g.10gb partition (campaign seed 85 with DRA, soft constraints and narrow zones).
func TestDRAAllocatesOutOfOrderByReplay(t *testing.T) {
	snap := draClasses + migProfileTemplate("2g.10gb") + migProfileTemplate("3g.20gb") +
		strings.Replace(claimPod("a", "{name: mig, resourceClaimTemplateName: mig-2g10gb}", "1"),
			"metadata: {", "metadata: {creationTimestamp: '2026-12-01T10:00:00Z', ", 1)
	for i := range 4 {
		snap += strings.Replace(claimPod(fmt.Sprintf("g%d", i), "{name: mig, resourceClaimTemplateName: mig-3g20gb}", "1"),
			"metadata: {", "metadata: {creationTimestamp: '2026-12-01T10:00:05Z', ", 1)
		snap = strings.Replace(snap, fmt.Sprintf("labels: {app: g%d}", i), "labels: {app: g, tiler.dev/gang: g, tiler.dev/gang-size: '4'}", 1)
	}
	plan := simulateDRA(t, "aws-us-east-1", draPolicy("p4d.24xlarge", "{sharing: dynamic-mig}"), snap, simulator.Options{})
	if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Pods) != 5 {
		t.Errorf("want one p4d.24xlarge for the gang and the 2g.10gb pod\n%s", table(plan))
	}
}
