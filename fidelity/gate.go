package fidelity

import (
	"context"
	"errors"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// errHeld is what the simulated kubelet gets while the gate holds its Node status updates.
var errHeld = errors.New("fidelity: the kubelet is held before posting Ready")

// readyGate holds the simulated cloud's kubelets between registering a Node and posting Ready
// (and then the devices), the window in which a real node's kubelet, CNI and device plugin start.
// While the gate is closed, a Node is registered with the Ready condition False, as a real
// kubelet registers a node whose runtime or network is not up yet (a Node without conditions
// would lose its not-ready taint to the node lifecycle controller at once), and the simulated
// kubelet's status updates fail. The simulated cloud retries at every step, so opening the gate
// lets every node through at its next step.
type readyGate struct{ open atomic.Bool }

// client returns kube with Node status updates failing while the gate is closed.
func (g *readyGate) client(kube kubernetes.Interface) kubernetes.Interface {
	return gatedClient{Interface: kube, gate: g}
}

type gatedClient struct {
	kubernetes.Interface
	gate *readyGate
}

func (c gatedClient) CoreV1() typedcorev1.CoreV1Interface {
	return gatedCore{CoreV1Interface: c.Interface.CoreV1(), gate: c.gate}
}

type gatedCore struct {
	typedcorev1.CoreV1Interface
	gate *readyGate
}

func (c gatedCore) Nodes() typedcorev1.NodeInterface {
	return gatedNodes{NodeInterface: c.CoreV1Interface.Nodes(), gate: c.gate}
}

type gatedNodes struct {
	typedcorev1.NodeInterface
	gate *readyGate
}

func (n gatedNodes) Create(ctx context.Context, node *corev1.Node, opts metav1.CreateOptions) (*corev1.Node, error) {
	if !n.gate.open.Load() {
		node = node.DeepCopy()
		now := metav1.Now()
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
			Reason: "KubeletNotReady", Message: "container runtime network not ready (held by the fidelity harness)",
			LastHeartbeatTime: now, LastTransitionTime: now}}
	}
	return n.NodeInterface.Create(ctx, node, opts)
}

func (n gatedNodes) UpdateStatus(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error) {
	if !n.gate.open.Load() {
		return nil, errHeld
	}
	return n.NodeInterface.UpdateStatus(ctx, node, opts)
}
