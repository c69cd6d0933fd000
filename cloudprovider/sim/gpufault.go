package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// GPUFault is a fault injected into an instance's GPUs, for the repair path to find.
type GPUFault string

// The GPU faults.
const (
	// GPUFaultNone: the GPUs are healthy (clears a fault).
	GPUFaultNone GPUFault = ""
	// GPUFaultLost: the device plugin reports every GPU unhealthy — the GPU resources stay in
	// capacity and drop to 0 in allocatable, as a GPU that fell off the bus does.
	GPUFaultLost GPUFault = "gpu-lost"
	// GPUFaultXID: a health agent reports critical XID errors — the Node condition
	// AcceleratedHardwareReady turns False (the EKS node monitoring agent's), the devices stay.
	GPUFaultXID GPUFault = "xid"
)

// ConditionAcceleratedHardwareReady is the Node condition GPUFaultXID sets False.
const ConditionAcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"

// InjectGPUFault injects the fault into the instance's GPUs (GPUFaultNone clears it); Step shows
// it on the Node once its devices are up, and keeps showing it across restarts.
func (p *Provider) InjectGPUFault(id string, f GPUFault) error {
	switch f {
	case GPUFaultNone, GPUFaultLost, GPUFaultXID:
	default:
		return fmt.Errorf("GPU fault %q is not %q, %q or empty", f, GPUFaultLost, GPUFaultXID)
	}
	err := p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		if r == nil {
			return &cloudprovider.NotFoundError{ID: id}
		}
		r.GPUFault = f
		return nil
	})
	if err != nil {
		return fmt.Errorf("injecting GPU fault %q into instance %s: %w", f, id, err)
	}
	return nil
}

// ensureGPUFault shows the XID fault (or its absence) as the AcceleratedHardwareReady condition
// of a GPU node; GPUFaultLost is shown by ensureDevices.
func (p *Provider) ensureGPUFault(ctx context.Context, r *record, it *catalog.InstanceType, node *corev1.Node) (*corev1.Node, error) {
	if it.GPU.Count == 0 {
		return node, nil
	}
	want := corev1.ConditionTrue
	reason, msg := "AcceleratedHardwareReady", "simulated GPUs are healthy"
	if r.GPUFault == GPUFaultXID {
		want, reason, msg = corev1.ConditionFalse, "NvidiaXID79Error", "simulated XID 79: GPU has fallen off the bus"
	}
	has := func(n *corev1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == ConditionAcceleratedHardwareReady {
				return c.Status == want
			}
		}
		return want == corev1.ConditionTrue // no condition: nothing reported, as on a node without the agent
	}
	if has(node) {
		return node, nil
	}
	out, err := p.mutateNode(ctx, node.Name, true, func(n *corev1.Node) bool {
		if has(n) {
			return false
		}
		now := metav1.NewTime(p.clk.Now())
		cond := corev1.NodeCondition{Type: ConditionAcceleratedHardwareReady, Status: want, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now}
		for i, c := range n.Status.Conditions {
			if c.Type == ConditionAcceleratedHardwareReady {
				n.Status.Conditions[i] = cond
				return true
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, cond)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("posting %s=%s: %w", ConditionAcceleratedHardwareReady, want, err)
	}
	return out, nil
}
