package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// waitTimeout bounds every wait for the scheduler or a controller to act.
const waitTimeout = 60 * time.Second

// newNode returns a node as a kubelet registers it: 4 CPUs, 16Gi, 110 pods, a hostname label and
// Ready=False until its runtime and network are up. (Without the Ready condition the node
// lifecycle controller would drop the not-ready taint the API server adds.)
func newNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
				Message: "container runtime network not ready", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
}

// markNodeReady does what a healthy kubelet and the node lifecycle controller do: it sets the
// Ready condition to True and removes the not-ready taint. The controllers write to the node too,
// so each write is retried on conflict.
func markNodeReady(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	nodes := client.CoreV1().Nodes()
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "test kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		node, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating status of node %s: %v", name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, taint := range n.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			node = n
			return nil
		}
		n.Spec.Taints = kept
		node, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("removing the not-ready taint of node %s: %v", name, err)
	}
	return node
}

// createReadyNode registers a node and marks it ready.
func createReadyNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	if _, err := client.CoreV1().Nodes().Create(ctx, newNode(name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return markNodeReady(ctx, t, client, name)
}

// newPod returns a pod of one pause container pinned to nodeName by node affinity (so pods of
// different tests never share a node), with the given requests.
func newPod(namespace, name, nodeName string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: nodeName},
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests},
			}},
		},
	}
}

// createNamespace creates a namespace and waits for its default ServiceAccount, without which
// the ServiceAccount admission plugin rejects pods.
func createNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for ServiceAccount %s/default: %v", name, err)
	}
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
		status := "pod never read"
		if pod != nil {
			b, _ := json.MarshalIndent(pod.Status, "", "  ")
			status = string(b)
		}
		t.Fatalf("waiting for pod %s/%s to be %s: %v; last status:\n%s", namespace, name, what, err, status)
	}
	return pod
}

// isBound reports whether the scheduler has bound the pod.
func isBound(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }

// isUnschedulable reports whether the scheduler has tried the pod and found no fitting node.
func isUnschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// podScheduledMessage returns the message of the PodScheduled condition.
func podScheduledMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// decodeFile decodes every object in a YAML file — a stream of documents, or one `kind: List` —
// into T.
func decodeFile[T any](t *testing.T, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	objs, err := decodeAll[T](data)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return objs
}

func decodeAll[T any](data []byte) ([]T, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []T
	for {
		var doc struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding YAML document: %w", err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("decoding kind: %w", err)
		}
		items := []json.RawMessage{raw}
		if doc.Kind == "List" {
			items = doc.Items
		}
		for _, item := range items {
			var obj T
			if err := json.Unmarshal(item, &obj); err != nil {
				return nil, fmt.Errorf("decoding %s item: %w", doc.Kind, err)
			}
			out = append(out, obj)
		}
	}
}
