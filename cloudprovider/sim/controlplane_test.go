package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/snapshot"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
)

// TestAgainstControlPlane runs the simulated cloud against a real etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager: the scheduler, not the test, decides whether a
// simulated node can take a GPU pod. The subtests share the control plane and run in order; each
// has its own state file, fake clock and nodes.
func TestAgainstControlPlane(t *testing.T) {
	start := time.Now()
	cp := cptest.Start(t, controlplane.Options{})
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	// The planned DRA subtests come first: their pods have no node selector (planned_test.go).
	t.Run("PlannedConsumableMemory", func(t *testing.T) { testPlannedConsumableMemory(t, client) })
	t.Run("PlannedDynamicMIG", func(t *testing.T) { testPlannedDynamicMIG(t, client) })
	t.Run("GPUPodBindsOnlyAfterDeviceDelay", func(t *testing.T) { testGPUPodBindsAfterDeviceDelay(t, client) })
	t.Run("DRAClaimAllocatedFromPublishedSlice", func(t *testing.T) { testDRAClaim(t, client) })
	t.Run("RestartIdempotencyFallbackDelete", func(t *testing.T) { testRestartFallbackDelete(t, client) })
	t.Run("MIGRelayoutBindsPendingPod", func(t *testing.T) { testMIGRelayout(t, client) })
	if err := cp.Err(); err != nil {
		t.Fatalf("a component exited: %v", err)
	}
}

// testGPUPodBindsAfterDeviceDelay: a pod asking for nvidia.com/gpu: 1 finds the Ready node
// GPU-less during the device delay, and is bound once the GPUs are advertised.
func testGPUPodBindsAfterDeviceDelay(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	e := newEnv(t, client)
	const nodeName = "sim-gpu-1"
	e.create(gpuRequest("launch-gpu-1", nodeName))

	e.step(testBootDelay)
	node := waitForNode(ctx, t, client, nodeName, "Ready without the not-ready taint", func(n *corev1.Node) bool {
		return snapshot.IsNodeReady(n) && !hasTaint(n.Spec.Taints, notReadyTaint)
	})
	if node.Spec.ProviderID != "sim:///us-east-1a/sim-000001" || !hasTaint(node.Spec.Taints, gpuTaint) {
		t.Fatalf("node providerID %q taints %v", node.Spec.ProviderID, node.Spec.Taints)
	}

	// The pod arrives in the gap: the real scheduler sees a Ready node without GPUs.
	pod := gpuPod("default", "wants-gpu", nodeName)
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got := waitForPod(ctx, t, client, pod.Namespace, pod.Name, "unschedulable for lack of GPUs", func(p *corev1.Pod) bool {
		return isUnschedulable(p) && strings.Contains(scheduledMessage(p), "Insufficient nvidia.com/gpu")
	})
	t.Logf("during the device delay: %s", scheduledMessage(got))

	e.step(testDeviceDelay)
	got = waitForPod(ctx, t, client, pod.Namespace, pod.Name, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if got.Spec.NodeName != nodeName {
		t.Fatalf("pod bound to %s, want %s", got.Spec.NodeName, nodeName)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices := apiSlices(ctx, t, client, nodeName); len(slices) != 0 || node.Labels[api.LabelDeployDevicePlugin] == "false" {
		t.Fatalf("the device plugin's node %s has ResourceSlices %+v too (one GPU twice), labels %v", nodeName, slices, node.Labels)
	}
}

// testDRAClaim: a ResourceClaim selecting the L4 by product name is allocated by the real
// structured allocator from the slice the simulated driver publishes, and only after the delay.
// The node's one L4 is the DRA driver's alone: a plain nvidia.com/gpu pod then finds no GPU left
// (not the device plugin's second handing-out of the same L4).
func testDRAClaim(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	for _, dc := range decodeList[resourcev1.DeviceClass](t, "testdata/deviceclasses.yaml") {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, &dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DeviceClass %s: %v", dc.Name, err)
		}
	}
	e := newEnv(t, client)
	const nodeName = "sim-dra-1"
	req := gpuRequest("launch-dra-1", nodeName)
	req.GPU.DRA = true
	e.create(req)
	e.step(testBootDelay)
	waitForNode(ctx, t, client, nodeName, "Ready", snapshot.IsNodeReady)

	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l4"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{
			Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: DRADriver, Selectors: []resourcev1.DeviceSelector{{
					CEL: &resourcev1.CELDeviceSelector{Expression: "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"},
				}}},
			}}},
		}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaimTemplate: %v", err)
	}
	pod := gpuPod("default", "claims-l4", nodeName)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("l4")}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got := waitForPod(ctx, t, client, "default", pod.Name, "unschedulable before the slices", isUnschedulable)
	t.Logf("before the slices: %s", scheduledMessage(got))

	e.step(testDeviceDelay)
	got = waitForPod(ctx, t, client, "default", pod.Name, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName == nodeName })
	var claimName string
	for _, s := range got.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			claimName = *s.ResourceClaimName
		}
	}
	claim, err := client.ResourceV1().ResourceClaims("default").Get(ctx, claimName, metav1.GetOptions{})
	if err != nil || claim.Status.Allocation == nil {
		t.Fatalf("claim %q of the bound pod: %+v, %v", claimName, claim, err)
	}
	r := claim.Status.Allocation.Devices.Results
	if len(r) != 1 || r[0].Driver != DRADriver || r[0].Pool != nodeName || r[0].Device != "gpu-0" {
		t.Fatalf("allocation %+v, want %s/%s/gpu-0", r, DRADriver, nodeName)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Status.Allocatable[api.ResourceGPU]; ok || node.Labels[api.LabelDeployDRADriver] != "true" {
		t.Fatalf("DRA node: allocatable %v, labels %v; want no nvidia.com/gpu and the DRA driver deployed", node.Status.Allocatable, node.Labels)
	}
	plain := gpuPod("default", "plain-after-claim", nodeName)
	if _, err := client.CoreV1().Pods("default").Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got = waitForPod(ctx, t, client, "default", plain.Name, "unschedulable: the L4 is taken", isUnschedulable)
	t.Logf("plain GPU pod beside the claim: %s", scheduledMessage(got))
}

// testRestartFallbackDelete: an injected insufficient-capacity fault makes the launch fall back;
// a restarted provider sees the instance and does not launch it twice; Delete removes the Node
// and its slices; the event log counts one launch and one deletion.
func testRestartFallbackDelete(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	e := newEnv(t, client, func(c *Config) { c.Faults.InsufficientCapacity = []api.Offering{l4Spot1a} })
	const nodeName = "sim-fallback-1"
	req := gpuRequest("launch-fallback-1", nodeName)
	req.GPU.DRA = true
	req.Fallbacks = []api.Offering{l4OD1b}
	inst := e.create(req)
	if inst.Offering != l4OD1b {
		t.Fatalf("launched %+v, want the fallback %+v", inst.Offering, l4OD1b)
	}
	_, err := e.p.Create(ctx, gpuRequest("launch-fallback-2", "sim-fallback-2"))
	if !cloudprovider.IsInsufficientCapacity(err) || !strings.Contains(err.Error(), "g6.xlarge/us-east-1a/spot") {
		t.Fatalf("launch without fallbacks: got %v, want an InsufficientCapacityError naming the offering", err)
	}
	e.step(testBootDelay)

	// The controller restarts: a new Provider on the same state file.
	e.p = e.restart()
	list, err := e.p.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != inst.ID || list[0].State != StateRunning {
		t.Fatalf("restarted List = %+v, %v; want %s running", list, err, inst.ID)
	}
	if again := e.create(req); again.ID != inst.ID {
		t.Fatalf("relaunch after restart gave %s, want %s", again.ID, inst.ID)
	}
	e.step(testDeviceDelay)
	node := waitForNode(ctx, t, client, nodeName, "with its GPU labels", func(n *corev1.Node) bool {
		return n.Labels[api.LabelDeployDRADriver] == "true"
	})
	if node.Labels[corev1.LabelTopologyZone] != "us-east-1b" || node.Labels[api.LabelCapacityType] != "on-demand" {
		t.Fatalf("fallback node labels %v", node.Labels)
	}
	if len(apiSlices(ctx, t, client, nodeName)) != 1 {
		t.Fatal("no ResourceSlice before Delete")
	}

	if err := e.p.Delete(ctx, inst.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err == nil {
		t.Fatal("node survived Delete")
	}
	if s := apiSlices(ctx, t, client, nodeName); len(s) != 0 {
		t.Fatalf("ResourceSlices survived Delete: %+v", s)
	}
	events := e.events()
	if l, d := CountEvents(events, EventLaunched), CountEvents(events, EventDeleted); l != 1 || d != 1 {
		t.Fatalf("event log has %d launches and %d deletions, want 1 and 1: %+v", l, d, events)
	}
}

// gpuPod returns a pod pinned to the node that asks for one nvidia.com/gpu and tolerates the
// GPU pool's taint.
func gpuPod(namespace, name, nodeName string) *corev1.Pod {
	requests := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"),
		api.ResourceGPU:    resource.MustParse("1"),
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: nodeName},
			Tolerations:  []corev1.Toleration{{Key: gpuTaint.Key, Operator: corev1.TolerationOpExists, Effect: gpuTaint.Effect}},
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests},
			}},
		},
	}
}

// testMIGRelayout: a p4d.24xlarge in all-1g.5gb whose slices the scheduler gave to seven pods
// (seven GPUs' worth) cannot take a pod asking for a 3g.20gb slice; once its nvidia.com/mig.config
// names the eighth GPU in all-3g.20gb (the simulator's plan for it), the simulated MIG manager
// re-partitions that GPU after its delay — finding the running pods through the real API server —
// and the scheduler binds the pod there. A change of a GPU in use is then refused.
func testMIGRelayout(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	e := newEnv(t, client, func(c *Config) { c.MIGReconfigureDelay = testMIGDelay })
	const nodeName = "sim-a100-1"
	layout := make([][]string, 8)
	for i := range layout {
		layout[i] = slices.Repeat([]string{"1g.5gb"}, 7)
	}
	req := gpuRequest("launch-a100-1", nodeName)
	req.Offering = a100OD1c
	req.Labels[corev1.LabelTopologyZone] = a100OD1c.Zone
	req.GPU = api.GPUConfig{Sharing: api.MIG, MIGStrategy: MIGStrategyMixed, MIGLayout: layout, MIGConfig: "all-1g.5gb"}
	e.create(req)
	e.step(testBootDelay + testDeviceDelay)
	waitForNode(ctx, t, client, nodeName, "56 1g.5gb slices", func(n *corev1.Node) bool {
		return quantity(n.Status.Allocatable, "nvidia.com/mig-1g.5gb") == 56
	})
	migPod := func(name, profile string, n int) *corev1.Pod {
		pod := gpuPod("default", name, nodeName)
		q := *resource.NewQuantity(int64(n), resource.DecimalSI)
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceName(ResourceMIGPrefix + profile): q}
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
		return pod
	}
	for i := range 7 {
		p := migPod(fmt.Sprint("small-", i), "1g.5gb", 7)
		waitForPod(ctx, t, client, "default", p.Name, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	}
	mid := migPod("mid", "3g.20gb", 1)
	waitForPod(ctx, t, client, "default", mid.Name, "unschedulable for lack of 3g.20gb", func(p *corev1.Pod) bool {
		return isUnschedulable(p) && strings.Contains(scheduledMessage(p), "Insufficient nvidia.com/mig-3g.20gb")
	})
	relabel := func(config string) {
		n, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels[api.LabelMIGConfig] = config
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabel("tiler-7xall-1g.5gb_all-3g.20gb")
	e.step(time.Second)
	if n := e.node(nodeName); n.Labels[api.LabelMIGConfigState] != api.MIGConfigPending {
		t.Fatalf("after the relabel: %v", n.Labels)
	}
	e.step(testMIGDelay)
	got := waitForPod(ctx, t, client, "default", mid.Name, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if got.Spec.NodeName != nodeName {
		t.Fatalf("mid bound to %s", got.Spec.NodeName)
	}
	n := e.node(nodeName)
	if n.Labels[api.LabelMIGConfigState] != api.MIGConfigSuccess || fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:49 nvidia.com/mig-3g.20gb:2]" {
		t.Errorf("after the change: %v, %v", nodeMIG(n), n.Labels)
	}
	relabel("all-3g.20gb")
	e.step(time.Second)
	if n := e.node(nodeName); n.Labels[api.LabelMIGConfigState] != api.MIGConfigFailed || fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:49 nvidia.com/mig-3g.20gb:2]" {
		t.Errorf("a change of GPUs in use: %v, %v", nodeMIG(n), n.Labels)
	}
}
