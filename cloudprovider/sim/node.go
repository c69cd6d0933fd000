package sim

import (
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Labels the simulated cloud puts on its Nodes besides the request's.
const ()

// KubeletVersion is the version the simulated kubelet reports.
const KubeletVersion = "v1.37.2-sim"

// ProviderID returns the Node's spec.providerID for an instance: sim:///<zone>/<id>.
func ProviderID(zone, id string) string { return fmt.Sprintf("sim:///%s/%s", zone, id) }

// buildNode returns the Node a kubelet registers for the instance: the request's labels under the
// well-known labels of the offering actually launched (a fallback may differ from the request),
// the request's taints plus node.kubernetes.io/not-ready:NoSchedule, and capacity and allocatable
// without GPUs, which appear only after the device delay.
func buildNode(r *record, cat *catalog.Catalog, it *catalog.InstanceType) *corev1.Node {
	taints := append([]corev1.Taint(nil), r.Taints...)
	if !hasTaint(taints, notReadyTaint) {
		taints = append(taints, notReadyTaint)
	}
	capacity, allocatable := baseResources(cat, it)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: r.NodeName, Labels: nodeLabels(r, cat, it)},
		Spec:       corev1.NodeSpec{ProviderID: ProviderID(r.Offering.Zone, r.ID), Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: internalIP(r.ID)},
				{Type: corev1.NodeHostName, Address: r.NodeName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: it.Arch, OperatingSystem: "linux", KubeletVersion: KubeletVersion,
				ContainerRuntimeVersion: "containerd://2.1.0", OSImage: "Tiler simulated node",
				MachineID: r.ID, SystemUUID: r.ID,
			},
		},
	}
}

// internalIP derives a unique 10.0.0.0/8 address from the instance number: sim-000258 is 10.0.1.2.
func internalIP(id string) string {
	var n int
	_, _ = fmt.Sscanf(id, "sim-%d", &n)
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

// nodeLabels merges the request's labels with the well-known ones of the launched offering.
func nodeLabels(r *record, cat *catalog.Catalog, it *catalog.InstanceType) map[string]string {
	labels := cloudprovider.WithInstanceTypeLabels(r.Labels, r.Offering.InstanceType)
	for k, v := range map[string]string{
		corev1.LabelHostname:       r.NodeName,
		corev1.LabelTopologyZone:   r.Offering.Zone,
		corev1.LabelTopologyRegion: cat.Region,
		corev1.LabelArchStable:     it.Arch,
		corev1.LabelOSStable:       "linux",
		api.LabelCapacityType:      string(r.Offering.CapacityType),
		api.LabelInstanceID:        r.ID,
	} {
		if v != "" {
			labels[k] = v
		}
	}
	if r.Pool != "" {
		labels[api.TagPool] = r.Pool
	}
	if r.GPU.MIGConfig != "" && it.GPU.Count > 0 {
		labels[api.LabelMIGConfig] = r.GPU.MIGConfig
	}
	return labels
}

// baseResources returns the capacity (the raw shape) and allocatable (capacity minus the
// provider's kubelet and system reservations, catalog.Allocatable) of CPU, memory and pods.
func baseResources(cat *catalog.Catalog, it *catalog.InstanceType) (capacity, allocatable corev1.ResourceList) {
	cpuMilli, memBytes, pods := catalog.Allocatable(cat.Provider, it)
	maxPods := *resource.NewQuantity(int64(pods), resource.DecimalSI)
	capacity = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(it.VCPU), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(it.MemoryMiB*1024*1024, resource.BinarySI),
		corev1.ResourcePods:   maxPods,
	}
	allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memBytes, resource.BinarySI),
		corev1.ResourcePods:   maxPods,
	}
	return capacity, allocatable
}

// notReadyTaint is the taint a Node carries until it is Ready.
var notReadyTaint = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}

// hasTaint reports whether taints hold one with t's key and effect.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// withoutTaint returns taints minus those with t's key and effect.
func withoutTaint(taints []corev1.Taint, t corev1.Taint) []corev1.Taint {
	var kept []corev1.Taint
	for _, x := range taints {
		if x.Key != t.Key || x.Effect != t.Effect {
			kept = append(kept, x)
		}
	}
	return kept
}

// readyConditions returns the conditions a healthy kubelet posts.
func readyConditions(now time.Time) []corev1.NodeCondition {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg,
			LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "simulated kubelet is posting ready status"),
	}
}

// hasResources reports whether the Node's capacity holds capacity and its allocatable alloc
// exactly, for every resource of capacity.
func hasResources(node *corev1.Node, capacity, alloc corev1.ResourceList) bool {
	for name, q := range capacity {
		c, okc := node.Status.Capacity[name]
		a, oka := node.Status.Allocatable[name]
		if !okc || !oka || c.Cmp(q) != 0 || a.Cmp(alloc[name]) != 0 {
			return false
		}
	}
	return true
}
