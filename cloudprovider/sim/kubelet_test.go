package sim

import (
	"context"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/testwait"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// TestStepLifecycle follows one GPU instance through boot and the device delay on the fake
// clientset and checks the Node's shape at each stage.
func TestStepLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.create(gpuRequest("launch-1", "gpu-node-1"))

	e.step(testBootDelay - time.Second)
	if n := e.node("gpu-node-1"); n != nil {
		t.Fatalf("node registered 1s before the boot delay: %+v", n)
	}

	e.step(time.Second)
	node := e.node("gpu-node-1")
	if node == nil {
		t.Fatal("no node after the boot delay")
	}
	wantLabels := map[string]string{
		"team": "ml", api.TagPool: "gpu", api.LabelCapacityType: "spot", api.LabelInstanceID: inst.ID,
		corev1.LabelHostname: "gpu-node-1", corev1.LabelInstanceTypeStable: "g6.xlarge",
		corev1.LabelTopologyZone: "us-east-1a", corev1.LabelTopologyRegion: "us-east-1",
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
	}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.Taint{gpuTaint}, node.Spec.Taints); diff != "" {
		t.Errorf("taints of the Ready node (-want +got):\n%s", diff)
	}
	if node.Spec.ProviderID != "sim:///us-east-1a/sim-000001" {
		t.Errorf("providerID %q", node.Spec.ProviderID)
	}
	if got := node.Status.Addresses[0]; got.Type != corev1.NodeInternalIP || got.Address != "10.0.0.1" {
		t.Errorf("first address %+v, want InternalIP 10.0.0.1", got)
	}
	if !snapshot.IsNodeReady(node) {
		t.Errorf("node not Ready: %+v", node.Status.Conditions)
	}
	// g6.xlarge: 4 vCPU, 16 GiB, 110 pods. Reserved (AWS formula): CPU 60+10+5+5 = 80m;
	// memory 11×110+255 = 1465 MiB plus 100 MiB eviction = 1565 MiB.
	alloc := node.Status.Allocatable
	if cpu, mem := alloc.Cpu().MilliValue(), alloc.Memory().Value(); cpu != 3920 || mem != (16384-1565)<<20 {
		t.Errorf("allocatable cpu %dm memory %d, want 3920m and %d", cpu, mem, (16384-1565)<<20)
	}
	if quantity(node.Status.Capacity, corev1.ResourceCPU) != 4 || quantity(alloc, corev1.ResourcePods) != 110 {
		t.Errorf("capacity %v allocatable %v", node.Status.Capacity, alloc)
	}
	if q := quantity(alloc, api.ResourceGPU); q != -1 {
		t.Errorf("nvidia.com/gpu = %d before the device delay", q)
	}
	if s := e.slicesOf("gpu-node-1"); len(s) != 0 {
		t.Errorf("%d ResourceSlices before the device delay", len(s))
	}
	if got, _ := e.p.Get(context.Background(), inst.ID); got.State != StateRunning {
		t.Errorf("state %s after Ready, want running", got.State)
	}
	lease, err := e.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "gpu-node-1", metav1.GetOptions{})
	if err != nil || !lease.Spec.RenewTime.Time.Equal(e.clk.Now()) {
		t.Errorf("lease %+v, %v; want renewed at %s", lease, err, e.clk.Now())
	}

	e.step(testDeviceDelay - time.Second)
	if q := quantity(e.node("gpu-node-1").Status.Allocatable, api.ResourceGPU); q != -1 {
		t.Fatalf("nvidia.com/gpu = %d 1s before the device delay", q)
	}
	e.step(time.Second)
	node = e.node("gpu-node-1")
	if c, a := quantity(node.Status.Capacity, api.ResourceGPU), quantity(node.Status.Allocatable, api.ResourceGPU); c != 1 || a != 1 {
		t.Fatalf("nvidia.com/gpu capacity %d allocatable %d, want 1", c, a)
	}
	if slices := e.slicesOf("gpu-node-1"); len(slices) != 0 {
		t.Fatalf("the device plugin's node publishes ResourceSlices too (one GPU twice): %+v", slices)
	}
	// Stepping again (within the lease renew interval) writes nothing.
	fc := e.kube.(*fake.Clientset)
	fc.ClearActions()
	e.step(time.Second)
	for _, a := range fc.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("an idle step did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestStepSlowBootAndNeverRegisters: a slow-boot fault delays the Node and its GPUs; a
// never-registers fault keeps the instance pending forever.
func TestStepSlowBootAndNeverRegisters(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) {
		c.Faults.SlowBoots = []SlowBoot{{Offering: api.Offering{InstanceType: "g6.xlarge"}, BootDelay: 5 * time.Minute}}
	})
	e.p.SetNeverRegisters(api.Offering{InstanceType: "m7i.large"})
	e.create(gpuRequest("slow", "slow-node"))
	stuck := gpuRequest("stuck", "stuck-node")
	stuck.Offering = cpuOD1a
	e.create(stuck)

	e.step(testBootDelay)
	if e.node("slow-node") != nil {
		t.Fatal("slow node registered at the normal boot delay")
	}
	e.step(5*time.Minute - testBootDelay)
	if n := e.node("slow-node"); n == nil || quantity(n.Status.Allocatable, api.ResourceGPU) != -1 {
		t.Fatalf("slow node at its boot delay: %+v", n)
	}
	e.step(testDeviceDelay)
	if n := e.node("slow-node"); quantity(n.Status.Allocatable, api.ResourceGPU) != 1 {
		t.Fatalf("slow node has no GPU a device delay after its boot")
	}

	// A restart does not make the stuck instance register either: the fault is part of the record.
	e.p = e.restart()
	e.step(time.Hour)
	if e.node("stuck-node") != nil {
		t.Fatal("never-registering instance registered")
	}
	if got, _ := e.p.List(context.Background()); got[1].State != StatePending {
		t.Fatalf("never-registering instance is %s", got[1].State)
	}
}

// TestStepRenamesSharedGPUsPerLaunch: one process, renameShared off by default; the launch that
// asks for renamed replicas gets nvidia.com/gpu.shared, the other nvidia.com/gpu. The choice is
// part of the record, so it survives a restart.
func TestStepRenamesSharedGPUsPerLaunch(t *testing.T) {
	e := newEnv(t, nil)
	renamed := gpuRequest("renamed", "renamed-node")
	renamed.GPU = api.GPUConfig{Sharing: "time-slicing", Replicas: 4, RenameShared: true}
	plain := gpuRequest("plain", "plain-node")
	plain.GPU = api.GPUConfig{Sharing: "time-slicing", Replicas: 4}
	e.create(renamed)
	e.create(plain)
	e.p = e.restart()
	e.step(testBootDelay + testDeviceDelay)
	// g6.xlarge: 1 L4 × 4 replicas.
	for node, want := range map[string][2]int64{"renamed-node": {-1, 4}, "plain-node": {4, -1}} {
		alloc := e.node(node).Status.Allocatable
		if got := [2]int64{quantity(alloc, api.ResourceGPU), quantity(alloc, api.ResourceGPUShared)}; got != want {
			t.Errorf("%s: nvidia.com/gpu, nvidia.com/gpu.shared = %v, want %v (-1: absent)", node, got, want)
		}
	}
}

// TestStepPublishesPlannedSlices: past the device delay, a dynamic-MIG p4d.24xlarge and a
// consumable-memory one publish exactly dra.NodeSlices of their launch (9 and 1 slices), owned by
// their Node, and no nvidia.com/gpu under dynamic MIG; a restarted provider publishes nothing
// twice.
func TestStepPublishesPlannedSlices(t *testing.T) {
	e := newEnv(t, nil)
	gpus := map[string]api.GPUConfig{
		"mig-node":  {Sharing: "dynamic-mig"},
		"cons-node": {Sharing: "exclusive", ConsumableMemory: true},
	}
	for node, g := range gpus {
		req := gpuRequest("launch-"+node, node)
		req.Offering, req.GPU = a100OD1c, g
		e.create(req)
	}
	e.step(testBootDelay + testDeviceDelay)
	e.p = e.restart()
	e.step(time.Second)
	cat, _ := catalog.Embedded("aws-us-east-1")
	a100, _ := cat.Type(a100OD1c.InstanceType)
	for node, g := range gpus {
		got := e.slicesOf(node)
		want := dra.NodeSlices(node, a100, g)
		if len(got) != len(want) {
			t.Fatalf("%s: %d slices published, want %d", node, len(got), len(want))
		}
		byName := map[string]resourcev1.ResourceSlice{}
		for _, s := range got {
			if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != node {
				t.Errorf("%s: slice %s owners %+v", node, s.Name, s.OwnerReferences)
			}
			byName[s.Name] = s
		}
		for _, w := range want {
			if !equality.Semantic.DeepEqual(byName[w.Name].Spec, w.Spec) {
				t.Errorf("%s: slice %s is not the planned one", node, w.Name)
			}
		}
	}
	if q := quantity(e.node("mig-node").Status.Allocatable, api.ResourceGPU); q != -1 {
		t.Errorf("dynamic MIG node advertises nvidia.com/gpu = %d", q)
	}
	if q := quantity(e.node("cons-node").Status.Allocatable, api.ResourceGPU); q != -1 {
		t.Errorf("consumable-memory node advertises nvidia.com/gpu = %d; its GPUs are DRA devices only", q)
	}
}

// TestRunSteps drives the provider through Run on the fake clock.
func TestRunSteps(t *testing.T) {
	e := newEnv(t, nil)
	e.create(gpuRequest("launch-1", "gpu-node-1"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.p.Run(ctx) }()
	testwait.Until(t, time.Millisecond, "Run to register the node", 10*time.Second, func() bool {
		if e.node("gpu-node-1") != nil {
			return true
		}
		// Advance only while Run waits on its timer, so no tick is lost.
		if e.clk.HasWaiters() {
			e.clk.Step(DefaultStepInterval)
		}
		return false
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}

// TestStepKubeletDown: while an instance's kubelet is down, Step renews neither its Lease nor its
// Ready heartbeat, and leaves alone a Ready condition the node lifecycle controller set Unknown;
// the instance stays running and listed. Back up, the next Step posts Ready and renews the Lease.
func TestStepKubeletDown(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.create(gpuRequest("launch-1", "gpu-node-1"))
	e.step(testBootDelay)
	ctx := context.Background()
	lease := func() time.Time {
		l, err := e.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gpu-node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	renewed := lease()
	e.p.SetKubeletDown(inst.ID, true)
	// What the node lifecycle controller does once the heartbeats stop.
	n := e.node("gpu-node-1")
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionUnknown
		}
	}
	if _, err := e.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.step(10 * LeaseRenewInterval)
	if snapshot.IsNodeReady(e.node("gpu-node-1")) || !lease().Equal(renewed) {
		t.Errorf("kubelet down: Ready %v, lease renewed at %s; want not Ready, the lease of %s", snapshot.IsNodeReady(e.node("gpu-node-1")), lease(), renewed)
	}
	if got, err := e.p.Get(ctx, inst.ID); err != nil || got.State != StateRunning {
		t.Errorf("kubelet down: instance %+v, %v; want it running", got, err)
	}
	e.p.SetKubeletDown(inst.ID, false)
	e.step(time.Second)
	if !snapshot.IsNodeReady(e.node("gpu-node-1")) || !lease().Equal(e.clk.Now()) {
		t.Errorf("kubelet up: Ready %v, lease renewed at %s; want Ready, renewed at %s", snapshot.IsNodeReady(e.node("gpu-node-1")), lease(), e.clk.Now())
	}
}
