package controlplane_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
)

// TestDRAStaticGPUs publishes two full A100 GPUs the way the NVIDIA DRA driver does, and checks
// that the resourceclaim controller creates claims from templates, that kube-scheduler allocates
// and binds (also for a pod asking for the nvidia.com/gpu extended resource, which the
// gpu.nvidia.com DeviceClass backs), and that CEL selectors and exhaustion keep pods pending.
func TestDRAStaticGPUs(t *testing.T) {
	start := time.Now()
	cp := cptest.Start(t, controlplane.Options{})
	t.Logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	const nodeName, ns = "gpu-node", "gpu-example"
	node := createReadyNode(ctx, t, client, nodeName)
	createNamespace(ctx, t, client, ns)
	createDeviceClasses(ctx, t, client)

	// The first slice of the file is a node with one full GPU (gpu-0); add a second one.
	slice := decodeFile[resourcev1.ResourceSlice](t, "testdata/resourceslice-static.yaml")[0]
	gpu1 := *slice.Spec.Devices[0].DeepCopy()
	gpu1.Name = "gpu-1"
	gpu1.Attributes["uuid"] = resourcev1.DeviceAttribute{StringValue: new("GPU-6b1c4e2d-0d0f-4c35-9d55-3a1f0e6c9b21")}
	gpu1.Attributes["resource.kubernetes.io/pciBusID"] = resourcev1.DeviceAttribute{StringValue: new("0000:66:00.0")}
	slice.Spec.Devices = append(slice.Spec.Devices, gpu1)
	publishSlices(ctx, t, client, node, []resourcev1.ResourceSlice{slice})

	// a100-gpu selects by product name; large-gpu wants more than 40Gi, which no A100-40GB has.
	for _, tmpl := range decodeFile[resourcev1.ResourceClaimTemplate](t, "testdata/resourceclaimtemplate-gpu-selectors.yaml") {
		if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, &tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceClaimTemplate %s: %v", tmpl.Name, err)
		}
	}

	createPod(ctx, t, client, podWithClaim(ns, "a100", nodeName, "a100-gpu"))
	pod := waitForPod(ctx, t, client, ns, "a100", "bound", isBound)
	first := onlyDevice(t, waitForAllocation(ctx, t, client, pod), nodeName)

	// KEP-5004: a plain extended-resource request is satisfied from the DeviceClass that names it.
	extended := newPod(ns, "extended", nodeName, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	createPod(ctx, t, client, extended)
	pod = waitForPod(ctx, t, client, ns, "extended", "bound", isBound)
	if pod.Status.ExtendedResourceClaimStatus == nil {
		t.Fatalf("pod %s has no extendedResourceClaimStatus: %+v", pod.Name, pod.Status)
	}
	second := onlyDevice(t, waitForAllocation(ctx, t, client, pod), nodeName)
	if first == second {
		t.Fatalf("both pods got device %s", first)
	}

	// Both GPUs are taken now.
	createPod(ctx, t, client, podWithClaim(ns, "third", nodeName, "a100-gpu"))
	pod = waitForPod(ctx, t, client, ns, "third", "unschedulable", isUnschedulable)
	t.Logf("third pod: %s", podScheduledMessage(pod))

	createPod(ctx, t, client, podWithClaim(ns, "large", nodeName, "large-gpu"))
	pod = waitForPod(ctx, t, client, ns, "large", "unschedulable", isUnschedulable)
	t.Logf("large pod: %s", podScheduledMessage(pod))
	if err := cp.Err(); err != nil {
		t.Fatalf("a component exited: %v", err)
	}
}

// TestDRAPartitionableDevices publishes an A100 in dynamic-MIG form: a slice holding the GPU's
// shared counters and a slice of MIG placements consuming them (KEP-4815, beta and on by default
// in v1.37). A 7g.40gb placement uses every counter, so a 1g.5gb pod waits until the first pod is
// gone and its claim deallocated.
func TestDRAPartitionableDevices(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	const nodeName, ns = "a100-node", "mig"
	node := createReadyNode(ctx, t, client, nodeName)
	createNamespace(ctx, t, client, ns)
	createDeviceClasses(ctx, t, client)
	created := publishSlices(ctx, t, client, node,
		decodeFile[resourcev1.ResourceSlice](t, "testdata/resourceslice-dynamic-mig-a100-40gb.constructed.yaml"))
	// The API server drops fields of disabled features silently; make sure both halves survived.
	if len(created) != 2 || len(created[0].Spec.SharedCounters) != 1 || len(created[1].Spec.Devices) == 0 ||
		len(created[1].Spec.Devices[0].ConsumesCounters) != 1 {
		t.Fatalf("stored slices lost sharedCounters or consumesCounters (DRAPartitionableDevices off?): %+v", created)
	}

	for name, profile := range map[string]string{"mig-7g": "7g.40gb", "mig-1g": "1g.5gb"} {
		tmpl := claimTemplate(ns, name, "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '"+profile+"'")
		if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceClaimTemplate %s: %v", name, err)
		}
	}

	createPod(ctx, t, client, podWithClaim(ns, "whole", nodeName, "mig-7g"))
	whole := waitForPod(ctx, t, client, ns, "whole", "bound", isBound)
	if dev := onlyDevice(t, waitForAllocation(ctx, t, client, whole), nodeName); dev != "gpu-0-mig-7g40gb-0-0" {
		t.Fatalf("7g.40gb pod got %s", dev)
	}

	createPod(ctx, t, client, podWithClaim(ns, "small", nodeName, "mig-1g"))
	small := waitForPod(ctx, t, client, ns, "small", "unschedulable while the 7g.40gb placement holds the counters", isUnschedulable)
	t.Logf("small pod: %s", podScheduledMessage(small))

	// No kubelet will ever confirm termination, so delete the bound pod immediately; the
	// resourceclaim controller then releases and deletes its generated claim.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "whole", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatalf("deleting pod whole: %v", err)
	}
	small = waitForPod(ctx, t, client, ns, "small", "bound after the 7g.40gb claim is released", isBound)
	dev := onlyDevice(t, waitForAllocation(ctx, t, client, small), nodeName)
	if !strings.HasPrefix(dev, "gpu-0-mig-1g5gb-19-") {
		t.Fatalf("1g.5gb pod got %s", dev)
	}
	if err := cp.Err(); err != nil {
		t.Fatalf("a component exited: %v", err)
	}
}
