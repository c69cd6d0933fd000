package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testMIGDelay = 20 * time.Second

// migNode launches a p4d.24xlarge (8 × A100-40GB) in all-1g.5gb, steps it past its device delay
// and runs pods on it using usedSlices of its 56 1g.5gb slices. It returns the instance ID.
func migNode(t *testing.T, e *env, usedSlices int) string {
	t.Helper()
	layout := make([][]string, 8)
	for i := range layout {
		layout[i] = []string{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}
	}
	req := gpuRequest("launch-mig", "a100")
	req.Offering = a100OD1c
	req.GPU = api.GPUConfig{Sharing: api.MIG, MIGStrategy: MIGStrategyMixed, MIGLayout: layout, MIGConfig: "all-1g.5gb"}
	inst := e.create(req)
	e.step(testBootDelay + testDeviceDelay)
	for i := 0; usedSlices > 0; i++ {
		k := min(usedSlices, 7)
		usedSlices -= k
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("small-", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "a100", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/mig-1g.5gb": *resource.NewQuantity(int64(k), resource.DecimalSI)}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if _, err := e.kube.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return inst.ID
}

// relabel sets the node's nvidia.com/mig.config, as the controller does.
func (e *env) relabel(node, config string) {
	e.t.Helper()
	n := e.node(node)
	n.Labels[api.LabelMIGConfig] = config
	if _, err := e.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// TestMIGManagerApplies: a new nvidia.com/mig.config whose changed GPU is idle is applied — the
// MIG devices withdrawn and the state pending for the delay (across a restart of the provider),
// then the new devices published and the state success.
func TestMIGManagerApplies(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.MIGReconfigureDelay = testMIGDelay })
	migNode(t, e, 49)
	n := e.node("a100")
	if quantity(n.Status.Allocatable, "nvidia.com/mig-1g.5gb") != 56 || n.Labels[api.LabelMIGConfigState] != api.MIGConfigSuccess {
		t.Fatalf("before: allocatable %v, labels %v", n.Status.Allocatable, n.Labels)
	}
	e.relabel("a100", "tiler-7xall-1g.5gb_all-3g.20gb")
	e.step(time.Second)
	n = e.node("a100")
	if n.Labels[api.LabelMIGConfigState] != api.MIGConfigPending || quantity(n.Status.Allocatable, "nvidia.com/mig-1g.5gb") != -1 ||
		quantity(n.Status.Capacity, "nvidia.com/mig-1g.5gb") != -1 {
		t.Fatalf("pending: allocatable %v, labels %v", n.Status.Allocatable, n.Labels)
	}
	e.p = e.restart()
	e.step(testMIGDelay - time.Second)
	if n = e.node("a100"); n.Labels[api.LabelMIGConfigState] != api.MIGConfigPending || len(nodeMIG(n)) != 0 {
		t.Fatalf("1s before the delay: %v, %v", n.Status.Allocatable, n.Labels)
	}
	e.step(time.Second)
	n = e.node("a100")
	if n.Labels[api.LabelMIGConfigState] != api.MIGConfigSuccess || fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:49 nvidia.com/mig-3g.20gb:2]" {
		t.Errorf("after the delay: %v, %v", nodeMIG(n), n.Labels)
	}
	if c := quantity(n.Status.Capacity, "nvidia.com/mig-3g.20gb"); c != 2 {
		t.Errorf("capacity of 3g.20gb %d", c)
	}
	// Stable: further steps change nothing; the node stays in its new layout.
	e.step(time.Minute)
	if n2 := e.node("a100"); n2.ResourceVersion != n.ResourceVersion {
		t.Errorf("node rewritten after the change: %v", nodeMIG(n2))
	}
}

// TestMIGManagerAdvertisesLater: with MIGAdvertiseDelay, the state is success with no MIG device
// advertised until the delay is over (a restart in between keeps it), then the new devices.
func TestMIGManagerAdvertisesLater(t *testing.T) {
	const advertise = 5 * time.Second
	e := newEnv(t, nil, func(c *Config) { c.MIGReconfigureDelay, c.MIGAdvertiseDelay = testMIGDelay, advertise })
	migNode(t, e, 49)
	e.relabel("a100", "tiler-7xall-1g.5gb_all-3g.20gb")
	e.step(time.Second)
	e.step(testMIGDelay)
	if n := e.node("a100"); n.Labels[api.LabelMIGConfigState] != api.MIGConfigSuccess || len(nodeMIG(n)) != 0 {
		t.Fatalf("at success: %v, %v; want success and no MIG device yet", nodeMIG(n), n.Labels)
	}
	e.p = e.restart()
	e.step(advertise - time.Second)
	if n := e.node("a100"); len(nodeMIG(n)) != 0 {
		t.Fatalf("1s before the advertise delay: %v", nodeMIG(n))
	}
	e.step(time.Second)
	if n := e.node("a100"); fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:49 nvidia.com/mig-3g.20gb:2]" {
		t.Errorf("after the advertise delay: %v", nodeMIG(n))
	}
}

// TestMIGManagerRefusesBusyGPU: a configuration that changes GPUs in use is refused (state
// failed, devices kept, one event), and an unknown name too; a later good one is applied.
func TestMIGManagerRefusesBusyGPU(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.MIGReconfigureDelay = testMIGDelay })
	migNode(t, e, 50)
	e.relabel("a100", "tiler-7xall-1g.5gb_all-3g.20gb")
	e.step(time.Second)
	e.step(testMIGDelay)
	n := e.node("a100")
	if n.Labels[api.LabelMIGConfigState] != api.MIGConfigFailed || fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:56]" {
		t.Errorf("busy GPU: %v, %v", nodeMIG(n), n.Labels)
	}
	if got := CountEvents(e.events(), EventMIGReconfigureFailed); got != 1 {
		t.Errorf("%d refusal events, want 1", got)
	}
	e.relabel("a100", "no-such-layout")
	e.step(time.Second)
	if got := CountEvents(e.events(), EventMIGReconfigureFailed); got != 2 {
		t.Errorf("%d refusal events after an unknown name, want 2", got)
	}
	// Back to the applied configuration: success again, nothing changed.
	e.relabel("a100", "all-1g.5gb")
	e.step(time.Second)
	if n := e.node("a100"); n.Labels[api.LabelMIGConfigState] != api.MIGConfigSuccess || fmt.Sprint(nodeMIG(n)) != "map[nvidia.com/mig-1g.5gb:56]" {
		t.Errorf("reverted: %v, %v", nodeMIG(n), n.Labels)
	}
}

// nodeMIG returns the node's allocatable MIG devices.
func nodeMIG(n *corev1.Node) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for name, q := range n.Status.Allocatable {
		if len(name) > len(ResourceMIGPrefix) && string(name[:len(ResourceMIGPrefix)]) == ResourceMIGPrefix {
			out[name] = q.Value()
		}
	}
	return out
}

// TestGPUFaults: a lost GPU stays in capacity and leaves allocatable; an XID fault turns
// AcceleratedHardwareReady False; clearing the fault heals both; a fault survives a restart.
func TestGPUFaults(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.create(gpuRequest("launch-1", "gpu-node-1"))
	e.step(testBootDelay + testDeviceDelay)
	if err := e.p.InjectGPUFault(inst.ID, GPUFaultLost); err != nil {
		t.Fatal(err)
	}
	e.p = e.restart()
	e.step(time.Second)
	n := e.node("gpu-node-1")
	if quantity(n.Status.Capacity, api.ResourceGPU) != 1 || quantity(n.Status.Allocatable, api.ResourceGPU) != 0 {
		t.Errorf("lost: capacity %v allocatable %v", n.Status.Capacity, n.Status.Allocatable)
	}
	if err := e.p.InjectGPUFault(inst.ID, GPUFaultXID); err != nil {
		t.Fatal(err)
	}
	e.step(time.Second)
	n = e.node("gpu-node-1")
	if quantity(n.Status.Allocatable, api.ResourceGPU) != 1 || conditionOf(n, ConditionAcceleratedHardwareReady) != corev1.ConditionFalse {
		t.Errorf("xid: allocatable %v, conditions %+v", n.Status.Allocatable, n.Status.Conditions)
	}
	if err := e.p.InjectGPUFault(inst.ID, GPUFaultNone); err != nil {
		t.Fatal(err)
	}
	e.step(time.Second)
	if n = e.node("gpu-node-1"); conditionOf(n, ConditionAcceleratedHardwareReady) != corev1.ConditionTrue {
		t.Errorf("cleared: conditions %+v", n.Status.Conditions)
	}
	if err := e.p.InjectGPUFault(inst.ID, "melted"); err == nil {
		t.Error("an unknown fault was accepted")
	}
	if err := e.p.InjectGPUFault("sim-999999", GPUFaultXID); err == nil {
		t.Error("a fault in an unknown instance was accepted")
	}
}

// TestImageFault: the instances launched from an image set bad (SetImageFault) boot with its GPU
// fault; those launched from another image, or before, do not.
func TestImageFault(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.Image = "good" })
	e.create(gpuRequest("launch-1", "gpu-node-1"))
	e.p.SetImageFault("bad", GPUFaultXID)
	e.p.SetImage("bad")
	e.create(gpuRequest("launch-2", "gpu-node-2"))
	e.step(testBootDelay + testDeviceDelay)
	if c := conditionOf(e.node("gpu-node-1"), ConditionAcceleratedHardwareReady); c == corev1.ConditionFalse {
		t.Errorf("node booted from the good image: AcceleratedHardwareReady %q, want it not False", c)
	}
	if c := conditionOf(e.node("gpu-node-2"), ConditionAcceleratedHardwareReady); c != corev1.ConditionFalse {
		t.Errorf("node booted from the bad image: AcceleratedHardwareReady %q, want False", c)
	}
}

// TestImageNeverRegisters: an instance launched from an image that does not boot never creates a
// Node; one launched from another image does.
func TestImageNeverRegisters(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.Image = "good" })
	e.p.SetImageNeverRegisters("bad")
	e.create(gpuRequest("launch-1", "gpu-node-1"))
	e.p.SetImage("bad")
	e.create(gpuRequest("launch-2", "gpu-node-2"))
	e.step(testBootDelay + testDeviceDelay)
	if e.node("gpu-node-1") == nil {
		t.Error("the node booted from the good image did not register")
	}
	if e.node("gpu-node-2") != nil {
		t.Error("the node launched from the bad image registered")
	}
}

func conditionOf(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
