package controlplane_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// gpuDriver is the driver name of the DRA Driver for NVIDIA GPUs.
const gpuDriver = "gpu.nvidia.com"

// createDeviceClasses installs the DeviceClasses of the NVIDIA DRA driver's Helm chart.
func createDeviceClasses(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	for _, dc := range decodeFile[resourcev1.DeviceClass](t, "testdata/deviceclasses.yaml") {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, &dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DeviceClass %s: %v", dc.Name, err)
		}
	}
}

// publishSlices adapts ResourceSlices captured for another node to node — name, nodeName, pool
// and owner, as the driver's kubelet plugin would publish them there — and creates them.
func publishSlices(ctx context.Context, t *testing.T, client kubernetes.Interface, node *corev1.Node,
	slices []resourcev1.ResourceSlice) []*resourcev1.ResourceSlice {
	t.Helper()
	var created []*resourcev1.ResourceSlice
	for _, slice := range slices {
		slice.ObjectMeta = metav1.ObjectMeta{
			GenerateName: node.Name + "-" + gpuDriver + "-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: new(true),
			}},
		}
		slice.Spec.NodeName = &node.Name
		slice.Spec.Pool.Name = node.Name
		got, err := client.ResourceV1().ResourceSlices().Create(ctx, &slice, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ResourceSlice for %s: %v", node.Name, err)
		}
		created = append(created, got)
	}
	return created
}

// podWithClaim returns a pod pinned to nodeName whose container uses one ResourceClaim generated
// from the template.
func podWithClaim(namespace, name, nodeName, template string) *corev1.Pod {
	pod := newPod(namespace, name, nodeName, nil)
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return pod
}

// claimTemplate returns a template of one request for a device of class deviceClass matching
// the CEL expression.
func claimTemplate(namespace, name, deviceClass, expression string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{
			Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{
					DeviceClassName: deviceClass,
					Selectors:       []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expression}}},
				},
			}}},
		}},
	}
}

// createPod creates the pod and fails the test on error.
func createPod(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// claimOf returns the name of the ResourceClaim backing the pod's claim (template-generated) or
// the scheduler-generated claim for DRA-backed extended resources.
func claimOf(pod *corev1.Pod) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		return s.ResourceClaimName
	}
	return ""
}

// waitForAllocation waits until the claim is allocated and reserved for the pod, and returns the
// allocated devices.
func waitForAllocation(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod) []resourcev1.DeviceRequestAllocationResult {
	t.Helper()
	name := claimOf(pod)
	if name == "" {
		t.Fatalf("pod %s/%s has no generated ResourceClaim in its status: %+v", pod.Namespace, pod.Name, pod.Status)
	}
	var claim *resourcev1.ResourceClaim
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		c, err := client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		claim = c
		if c.Status.Allocation == nil {
			return false, nil
		}
		for _, ref := range c.Status.ReservedFor {
			if ref.UID == pod.UID {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		status, _ := json.MarshalIndent(claim, "", "  ")
		t.Fatalf("waiting for ResourceClaim %s/%s to be allocated and reserved for its pod: %v; last:\n%s",
			pod.Namespace, name, err, status)
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		t.Logf("claim %s/%s: request %s -> %s/%s/%s", pod.Namespace, name, r.Request, r.Driver, r.Pool, r.Device)
	}
	return claim.Status.Allocation.Devices.Results
}

// onlyDevice asserts that exactly one device of the GPU driver from node's pool was allocated,
// and returns its name.
func onlyDevice(t *testing.T, results []resourcev1.DeviceRequestAllocationResult, node string) string {
	t.Helper()
	if len(results) != 1 {
		t.Fatalf("got %d allocated devices, want 1: %+v", len(results), results)
	}
	r := results[0]
	if r.Driver != gpuDriver || r.Pool != node {
		t.Fatalf("allocated %s/%s/%s, want driver %s and pool %s", r.Driver, r.Pool, r.Device, gpuDriver, node)
	}
	return r.Device
}
