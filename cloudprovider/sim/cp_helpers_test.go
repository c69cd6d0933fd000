package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// waitTimeout bounds every wait for the scheduler or a controller to act.
const waitTimeout = 60 * time.Second

// waitForNode polls the Node until cond holds and returns it; on timeout it fails the test with
// the Node's last state.
func waitForNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name, what string,
	cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		node = n
		return cond(n), nil
	})
	if err != nil {
		b, _ := json.MarshalIndent(node, "", "  ")
		t.Fatalf("waiting for node %s to be %s: %v; last:\n%s", name, what, err, b)
	}
	return node
}

// waitForPod polls the pod until cond holds and returns it; on timeout it fails the test with
// the pod's last status.
func waitForPod(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, name, what string,
	cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		var status []byte
		if pod != nil {
			status, _ = json.MarshalIndent(pod.Status, "", "  ")
		}
		t.Fatalf("waiting for pod %s/%s to be %s: %v; last status:\n%s", namespace, name, what, err, status)
	}
	return pod
}

// isUnschedulable reports whether the scheduler has tried the pod and found no fitting node.
func isUnschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// scheduledMessage returns the message of the pod's PodScheduled condition.
func scheduledMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// apiSlices lists the GPU driver's ResourceSlices of the node through the API server's field
// selectors.
func apiSlices(ctx context.Context, t *testing.T, client kubernetes.Interface, nodeName string) []resourcev1.ResourceSlice {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorNodeName, nodeName),
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorDriver, DRADriver),
	).String()})
	if err != nil {
		t.Fatalf("listing ResourceSlices of %s: %v", nodeName, err)
	}
	return list.Items
}

// decodeList decodes every document of a multi-document YAML file into T.
func decodeList[T any](t *testing.T, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []T
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var obj T
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		out = append(out, obj)
	}
}
