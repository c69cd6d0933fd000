package controlplane_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
)

func TestStartNamesMissingBinary(t *testing.T) {
	dir := t.TempDir()
	_, err := controlplane.Start(context.Background(), controlplane.Options{BinDir: dir})
	if !errors.Is(err, controlplane.ErrMissingBinary) {
		t.Fatalf("Start with an empty bin dir: got %v, want ErrMissingBinary", err)
	}
	for _, want := range []string{filepath.Join(dir, controlplane.EtcdBinary), "make controlplane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// A directory where the binary should be is not a binary.
	for _, name := range controlplane.Binaries {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := controlplane.CheckBinaries(dir); !errors.Is(err, controlplane.ErrMissingBinary) {
		t.Fatalf("CheckBinaries with directories: got %v, want ErrMissingBinary", err)
	}
}

// TestStartRetriesTakenPort holds etcd's client port; every attempt fails to bind it, so Start
// gives up after its retries with an error that says so and names the cause.
func TestStartRetriesTakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping control-plane test in -short mode")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var retries int
	_, err = controlplane.Start(context.Background(), controlplane.Options{
		EtcdArgs: []string{"--listen-client-urls=http://" + l.Addr().String()},
		Logf: func(format string, args ...any) {
			if strings.HasPrefix(format, "controlplane: retrying") {
				retries++
			}
		},
	})
	if err == nil || !strings.Contains(err.Error(), "port was taken") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start with etcd's port taken: got %v, want a port-taken error", err)
	}
	if retries != 2 {
		t.Errorf("Start retried %d times, want 2", retries)
	}
}

// TestSchedulerBindsPodToReadyNode registers a node the way a kubelet does, checks that the API
// server taints it not-ready and that the real scheduler refuses to place a pod on it, then marks
// it Ready and checks that the scheduler binds the pod.
func TestSchedulerBindsPodToReadyNode(t *testing.T) {
	start := time.Now()
	cp := cptest.Start(t, controlplane.Options{})
	t.Logf("control plane ready in %s (logs in %s)", time.Since(start).Round(time.Millisecond), cp.LogDir())
	ctx := t.Context()

	// The kubeconfig file works as well as the REST config.
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig())
	if err != nil {
		t.Fatalf("loading kubeconfig %s: %v", cp.Kubeconfig(), err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("building clientset: %v", err)
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	t.Logf("server version %s", version.GitVersion)

	const nodeName = "node-1"
	node, err := client.CoreV1().Nodes().Create(ctx, newNode(nodeName), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	// The TaintNodesByCondition admission plugin taints every new node not-ready; the node
	// lifecycle controller keeps the taint while Ready is False.
	if !hasTaint(node, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule) {
		t.Fatalf("new node %s lacks the %s:NoSchedule taint: %v", nodeName, corev1.TaintNodeNotReady, node.Spec.Taints)
	}

	pod := newPod(metav1.NamespaceDefault, "one-cpu", nodeName, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	})
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got := waitForPod(ctx, t, client, pod.Namespace, pod.Name, "unschedulable on the not-ready node", isUnschedulable)
	if msg := podScheduledMessage(got); !strings.Contains(msg, "untolerated taint") {
		t.Errorf("unschedulable message %q does not blame the taint", msg)
	}

	markNodeReady(ctx, t, client, nodeName)
	got = waitForPod(ctx, t, client, pod.Namespace, pod.Name, "bound", isBound)
	if got.Spec.NodeName != nodeName {
		t.Fatalf("pod bound to %q, want %q", got.Spec.NodeName, nodeName)
	}

	// A second pod that does not fit the remaining 3 CPUs stays pending.
	big := newPod(metav1.NamespaceDefault, "four-cpu", nodeName, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	if _, err := client.CoreV1().Pods(big.Namespace).Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	got = waitForPod(ctx, t, client, big.Namespace, big.Name, "unschedulable for lack of CPU", isUnschedulable)
	if msg := podScheduledMessage(got); !strings.Contains(msg, "Insufficient cpu") {
		t.Errorf("unschedulable message %q does not say Insufficient cpu", msg)
	}
	if err := cp.Err(); err != nil {
		t.Fatalf("a component exited: %v", err)
	}
}

func hasTaint(node *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key == key && taint.Effect == effect {
			return true
		}
	}
	return false
}
