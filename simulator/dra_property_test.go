package simulator_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/dra"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// draPropertyPolicy has an exclusive pool of mixed GPU types, one with consumable memory and one
// with dynamic MIG; pods pick a pool by node selector.
const draPropertyPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: exclusive
  instanceTypes: [g6.xlarge, g6.12xlarge, g6e.xlarge, g6e.12xlarge, p4d.24xlarge, p5.4xlarge, p5.48xlarge]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
- name: shared-memory
  instanceTypes: [g6.xlarge, g6.12xlarge, p4d.24xlarge]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {consumableMemory: true}
- name: dynamic-mig
  instanceTypes: [p4d.24xlarge, p5.4xlarge, p5.48xlarge]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: dynamic-mig}
`

// draPropertyTemplates are the claims of the random pods, by pool.
var draPropertyTemplates = map[string][]string{
	"exclusive":     {"one-gpu", "two-gpus", "big-gpu", "h100-else-a100"},
	"shared-memory": {"gpu-10gi", "one-gpu"},
	"dynamic-mig":   {"mig-1g", "mig-3g", "h100-else-a100"},
}

const draPropertyClaims = draBenchTemplates + `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: two-gpus}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: gpu-10gi}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          capacity: {requests: {memory: 10Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: mig-1g}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile.startsWith('1g.')"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: mig-3g}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile.startsWith('3g.')"}
`

// randomDRASnapshot makes n pods in random pools with random claims; a few share a claim.
func randomDRASnapshot(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString(draClasses + draPropertyClaims)
	pools := []string{"exclusive", "shared-memory", "dynamic-mig"}
	for i := range 3 {
		fmt.Fprintf(&b, `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {namespace: ml, name: shared-%d}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
`, i)
	}
	for i := range n {
		pool := pools[r.IntN(len(pools))]
		entry := ""
		if pool == "exclusive" && r.IntN(6) == 0 {
			entry = fmt.Sprintf("{name: gpu, resourceClaimName: shared-%d}", r.IntN(3))
		} else {
			ts := draPropertyTemplates[pool]
			entry = "{name: gpu, resourceClaimTemplateName: " + ts[r.IntN(len(ts))] + "}"
		}
		pod := claimPod(fmt.Sprintf("p%03d", i), entry, fmt.Sprint(1+r.IntN(6)))
		if pool != "exclusive" {
			// Shared claims are all in the exclusive pool, so their pods meet there.
			pod = strings.Replace(pod, "spec:\n", "spec:\n  nodeSelector: {tiler.dev/pool: "+pool+"}\n", 1)
		} else {
			pod = strings.Replace(pod, "spec:\n", "spec:\n  nodeSelector: {tiler.dev/pool: exclusive}\n", 1)
		}
		b.WriteString(pod)
	}
	return b.String()
}

// TestDRAPlansHold checks random DRA plans independently of the simulation's bookkeeping: on
// every new node, a fresh allocator must fit all the claims of the node's pods at once on the
// slices the type the plan buys publishes, and the plan must list each of those claims once.
func TestDRAPlansHold(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(draPropertyPolicy))
	if err != nil {
		t.Fatal(err)
	}
	poolGPU := map[string]*policy.GPUPolicy{}
	for i := range pol.Pools {
		poolGPU[pol.Pools[i].Name] = pol.Pools[i].GPU
	}
	seeds := 15
	if testing.Short() {
		seeds = 5
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			snap, err := snapshot.Decode(strings.NewReader(randomDRASnapshot(uint64(seed), 8+seed)))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol, Options: simulator.Options{Seed: "p"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Warnings) > 0 {
				t.Fatalf("warnings: %v", plan.Warnings)
			}
			for _, u := range plan.Unschedulable {
				if u.Code == api.InvalidRequest {
					t.Errorf("%s: %s", u.Pod, u.Reason)
				}
			}
			index := dra.NewClaimIndex(snap.ResourceClaims, snap.ResourceClaimTemplates)
			pods := map[string]*corev1.Pod{}
			for _, p := range snap.Pods {
				pods[p.Namespace+"/"+p.Name] = p
			}
			for _, n := range plan.NewNodes {
				checkNodeClaims(t, snap, index, pods, cat, poolGPU[n.Pool], n)
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Errorf("checker: %s", v)
			}
		})
	}
}

func checkNodeClaims(t *testing.T, snap *snapshot.Snapshot, index *dra.ClaimIndex, pods map[string]*corev1.Pod,
	cat *catalog.Catalog, g *policy.GPUPolicy, n api.NewNode) {
	t.Helper()
	byKey := map[string]*resourcev1.ResourceClaim{}
	for _, key := range n.Pods {
		cs, err := index.PodClaims(pods[key])
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, c := range cs {
			byKey[c.Namespace+"/"+c.Name] = c
		}
	}
	var want, got []string
	for k := range byKey {
		want = append(want, k)
	}
	for _, c := range n.Claims {
		got = append(got, c.Claim)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, ",") != strings.Join(got, ",") {
		t.Errorf("node %s lists claims %v, its pods have %v", n.Name, got, want)
		return
	}
	if len(n.Claims) == 0 {
		return
	}
	it, _ := cat.Type(n.InstanceType)
	mode, consumable := dra.Full, false
	if g != nil {
		consumable = g.ConsumableMemory
		if g.Sharing == api.DynamicMIG {
			mode = dra.DynamicMIG
		}
	}
	slices := dra.Slices(n.Name, it, mode, consumable)
	// The launch carries n.GPU to the cloud, and cloudprovider/sim publishes dra.NodeSlices of
	// it: they must be the slices checked here.
	if n.GPU == nil {
		t.Errorf("node %s has claims but no GPU plan", n.Name)
	} else if launched := dra.NodeSlices(n.Name, it, *n.GPU); !equality.Semantic.DeepEqual(launched, slices) {
		t.Errorf("node %s: the slices of its GPU plan %+v are not those of its pool's policy", n.Name, *n.GPU)
	}
	a, err := dra.NewAllocator(snap.DeviceClasses, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	node.Name = n.Name
	// Each claim, fitted where only the devices the plan gives it are published, must get
	// exactly those, next to the claims committed before it: selectors, exclusive use, shared
	// counters and consumed capacity are all the allocator's to check.
	for _, ca := range n.Claims {
		devices := map[string]bool{}
		for _, d := range ca.Devices {
			devices[strings.Fields(d)[0]] = true
		}
		claim := byKey[ca.Claim]
		results, r, err := a.Fit(node, onlyDevices(slices, devices), []*resourcev1.ResourceClaim{claim})
		if err != nil || r != nil {
			t.Errorf("node %s (%s): claim %s does not fit its planned devices %v: %v %v", n.Name, n.InstanceType, ca.Claim, ca.Devices, r, err)
			continue
		}
		a.Commit(claim, results[0])
	}
}

// onlyDevices copies the slices keeping only the named devices (and every counter set).
func onlyDevices(slices []*resourcev1.ResourceSlice, keep map[string]bool) []*resourcev1.ResourceSlice {
	out := make([]*resourcev1.ResourceSlice, len(slices))
	for i, s := range slices {
		c := s.DeepCopy()
		c.Name += "-only"
		c.Spec.Devices = nil
		for _, d := range s.Spec.Devices {
			if keep[d.Name] {
				c.Spec.Devices = append(c.Spec.Devices, *d.DeepCopy())
			}
		}
		out[i] = c
	}
	return out
}

// TestDRAMemoChangesNoPlan: what each node remembers of its DRA allocations (the fit of a claim
// set per node version, and the outcome of allocating its claims again per version of its
// allocations and of its DRA pods) must change no plan. Random snapshots over the three DRA
// pools (exclusive, consumable memory, dynamic MIG) and mixes of plain GPU pods and claims on
// 1/4/8-GPU types, where nodes change publisher while packing, are planned with and without it
// and the plans compared byte for byte. Keyed by the count of a node's DRA pods instead of their
// version (before session 41), the replay memo handed a node's allocations to another set of pods
// of the same count, and three of the mixed plans differ.
func TestDRAMemoChangesNoPlan(t *testing.T) {
	same := func(t *testing.T, cat *catalog.Catalog, pol *policy.CostPolicy, yaml string) {
		t.Helper()
		snap, err := snapshot.Decode(strings.NewReader(yaml))
		if err != nil {
			t.Fatal(err)
		}
		var out [2]bytes.Buffer
		for i, opts := range []simulator.Options{{Seed: "m"}, simulator.WithoutDRAMemo(simulator.Options{Seed: "m"})} {
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol, Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.WriteJSON(&out[i]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
			t.Errorf("the plan with the memo differs from the plan without:\n%s\n%s", out[0].String(), out[1].String())
		}
	}
	aws, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(draPropertyPolicy))
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprintf("pools-%d", seed), func(t *testing.T) { same(t, aws, pol, randomDRASnapshot(seed, 10+2*int(seed))) })
	}
	mixed, err := policy.Parse([]byte(draPolicy("g6.xlarge, g6.12xlarge, g6.48xlarge", "")))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(45, 7))
	for c := range 150 {
		var sb strings.Builder
		sb.WriteString(draClasses + draTemplates)
		for i := range 20 + c%30 {
			name := fmt.Sprintf("p%02d", i)
			if r.IntN(2) == 0 {
				sb.WriteString(strings.Replace(gpuPod(name, 1+r.IntN(3)), "cpu: '1'", fmt.Sprintf("cpu: '%d'", 1+r.IntN(6)), 1))
				continue
			}
			sb.WriteString(claimPod(name, "{name: gpu, resourceClaimTemplateName: one-gpu}", fmt.Sprint(1+r.IntN(6))))
		}
		// Cases 112, 125 and 149 are those of the 150 where the replay memo keyed by the count of
		// a node's DRA pods changed the plan (found by planning them all, 20 s; the others are
		// drawn for them and skipped but the first ten).
		if c >= 10 && !slices.Contains([]int{112, 125, 149}, c) {
			continue
		}
		t.Run(fmt.Sprintf("mixed-%d", c), func(t *testing.T) { same(t, aws, mixed, sb.String()) })
	}
}
