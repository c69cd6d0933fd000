package sim

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/golden"
	"github.com/tiler-dev/tiler/simulator"
)

// These subtests check plans for DRA pools end to end: the simulator plans one of its golden
// scenarios (simulator/testdata, the DeviceClasses, claim templates and pods of its DRA tests),
// the simulated cloud launches the planned node with the plan's GPU configuration, and the real
// kube-scheduler must bind every pod there, with the allocator choosing the same devices the
// plan did. The pods carry no node selector, so they run before the subtests whose nodes could
// take them (the L4 nodes); they delete their node and DeviceClasses at the end.

// testPlannedConsumableMemory: simulator/testdata/dra-consumable-memory.txt — a pool with
// gpu.consumableMemory, four pods each claiming 10Gi of GPU memory, planned on one a2-highgpu-1g
// (one A100-40GB). All four must share gpu-0, each allocation consuming 10Gi.
func testPlannedConsumableMemory(t *testing.T, client kubernetes.Interface) {
	results := runPlanned(t, client, "../../simulator/testdata/dra-consumable-memory.txt")
	for claim, r := range results {
		mem, ok := r.ConsumedCapacity["memory"]
		if r.Device != "gpu-0" || !ok || mem.String() != "10Gi" || r.ShareID == nil {
			t.Errorf("claim %s: device %s, consumed %v, share %v; want gpu-0 sharing 10Gi", claim, r.Device, r.ConsumedCapacity, r.ShareID)
		}
	}
}

// testPlannedDynamicMIG: simulator/testdata/dra-dynamic-mig-seven-1g5gb.txt — a dynamic-mig
// pool and seven pods each claiming a 1g.5gb partition (DeviceClass mig.nvidia.com, profile
// selector), planned on one a2-highgpu-1g. All seven must be bound there, on seven distinct
// partitions of gpu-0: the shared memory-slice counters admit no more.
func testPlannedDynamicMIG(t *testing.T, client kubernetes.Interface) {
	results := runPlanned(t, client, "../../simulator/testdata/dra-dynamic-mig-seven-1g5gb.txt")
	seen := map[string]bool{}
	for claim, r := range results {
		if !strings.HasPrefix(r.Device, "gpu-0-mig-1g5gb-") || seen[r.Device] {
			t.Errorf("claim %s: device %s, want a 1g.5gb partition of gpu-0 of its own", claim, r.Device)
		}
		seen[r.Device] = true
	}
}

// runPlanned plans the golden scenario, launches its one new node through the simulated cloud,
// creates the scenario's DRA objects and pods, and waits until the scheduler has bound every pod.
// It checks that each pod is on the planned node and that the devices allocated are those the
// plan lists (as a set: the scheduler takes the pods in its own order), and returns the
// allocation of each claim by its plan name (<namespace>/<pod>-<claim>). The node is deleted
// when the test ends.
func runPlanned(t *testing.T, client kubernetes.Interface, file string) map[string]resourcev1.DeviceRequestAllocationResult {
	ctx := t.Context()
	snap, cat, plan := planGolden(t, file)
	if len(plan.NewNodes) != 1 || len(plan.Unschedulable) != 0 {
		t.Fatalf("plan of %s: %d new nodes, %d unschedulable; want 1 and 0", file, len(plan.NewNodes), len(plan.Unschedulable))
	}
	n := plan.NewNodes[0]
	for _, dc := range snap.DeviceClasses {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DeviceClass %s: %v", dc.Name, err)
		}
		// Later subtests expect no class serving nvidia.com/gpu until they create one.
		t.Cleanup(func() {
			if err := client.ResourceV1().DeviceClasses().Delete(context.Background(), dc.Name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting DeviceClass %s: %v", dc.Name, err)
			}
		})
	}
	namespaces := map[string]bool{}
	for _, tmpl := range snap.ResourceClaimTemplates {
		ensureNamespace(t, client, namespaces, tmpl.Namespace)
		if _, err := client.ResourceV1().ResourceClaimTemplates(tmpl.Namespace).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceClaimTemplate %s/%s: %v", tmpl.Namespace, tmpl.Name, err)
		}
	}
	for _, pod := range snap.Pods {
		ensureNamespace(t, client, namespaces, pod.Namespace)
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}

	e := newEnv(t, client, func(c *Config) { c.Catalog = cat })
	inst := e.create(plannedRequest(n))
	t.Cleanup(func() {
		if err := e.p.Delete(context.Background(), inst.ID); err != nil && !cloudprovider.IsNotFound(err) {
			t.Errorf("deleting %s: %v", n.Name, err)
		}
	})
	e.step(testBootDelay)
	waitForNode(ctx, t, client, n.Name, "Ready", snapshot.IsNodeReady)
	e.step(testDeviceDelay)
	t.Logf("%s (%s, %s): %d ResourceSlices published", n.Name, n.InstanceType, n.GPU.Sharing, len(apiSlices(ctx, t, client, n.Name)))

	results := map[string]resourcev1.DeviceRequestAllocationResult{}
	var got []string
	for _, pod := range snap.Pods {
		bound := waitForPod(ctx, t, client, pod.Namespace, pod.Name, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
		if bound.Spec.NodeName != n.Name {
			t.Errorf("pod %s/%s bound to %s, planned on %s", pod.Namespace, pod.Name, bound.Spec.NodeName, n.Name)
		}
		for _, s := range bound.Status.ResourceClaimStatuses {
			if s.ResourceClaimName == nil {
				continue
			}
			claim, err := client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
			if err != nil || claim.Status.Allocation == nil {
				t.Fatalf("claim %s of pod %s: %+v, %v", *s.ResourceClaimName, pod.Name, claim, err)
			}
			for _, r := range claim.Status.Allocation.Devices.Results {
				if r.Pool != n.Name || r.Driver != DRADriver {
					t.Errorf("claim %s: device %s/%s/%s, not on the planned node", claim.Name, r.Driver, r.Pool, r.Device)
				}
				results[pod.Namespace+"/"+pod.Name+"-"+s.Name] = r
				got = append(got, r.Device)
			}
		}
	}
	var want []string
	for _, c := range n.Claims {
		for _, d := range c.Devices {
			want = append(want, strings.Fields(d)[0])
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("devices allocated by the scheduler:\n  %v\nplanned:\n  %v", got, want)
	}
	return results
}

// plannedRequest is the launch the controller makes for the planned node (provisioner's
// recordFor): its name, offering, labels, taints and GPU configuration.
func plannedRequest(n api.NewNode) cloudprovider.LaunchRequest {
	req := cloudprovider.LaunchRequest{LaunchID: n.Name, NodeName: n.Name, Cluster: testCluster, Pool: n.Pool,
		Offering: n.Offering,
		Labels:   n.Labels, Taints: n.Taints}
	if n.GPU != nil {
		req.GPU = *n.GPU
	}
	return req
}

// planGolden plans a simulator golden scenario as its golden test does (sections catalog,
// policy.yaml and snapshot.yaml; seed "golden").
func planGolden(t *testing.T, file string) (*snapshot.Snapshot, *catalog.Catalog, *api.Plan) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := golden.Parse(string(raw))
	snap, err := snapshot.Decode(strings.NewReader(sections.Text("snapshot.yaml")))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cat, err := catalog.Embedded(strings.TrimSpace(sections.Text("catalog")))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	pol, err := policy.Parse([]byte(sections.Text("policy.yaml")))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol,
		Options: simulator.Options{Seed: "golden"}})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return snap, cat, plan
}

// ensureNamespace creates the namespace once per test.
func ensureNamespace(t *testing.T, client kubernetes.Interface, done map[string]bool, name string) {
	t.Helper()
	if done[name] {
		return
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	done[name] = true
}
