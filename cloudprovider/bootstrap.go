package cloudprovider

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
)

// SharedTaints returns the taints with the reservation taint's per-launch value replaced by
// api.ReservationPending, for a bootstrap that nodes of many launches share.
func SharedTaints(taints []corev1.Taint) []corev1.Taint {
	out := append([]corev1.Taint(nil), taints...)
	for i := range out {
		if out[i].Key == api.TaintReserved {
			out[i].Value = api.ReservationPending
		}
	}
	return out
}

// GPU configuration labels that the NVIDIA GPU operator's components read from the Node.
const ()

// Labels the kubelet registers a node with only because the kubelet or the cloud sets them
// itself: the hostname (the node's own, so a label here would make the bootstrap per node), and
// the topology, instance-type, architecture and OS labels that the cloud provider (EKS's and
// GKE's cloud controller managers) sets from the instance.
var cloudSetLabels = map[string]bool{
	corev1.LabelHostname:           true,
	corev1.LabelTopologyZone:       true,
	corev1.LabelTopologyRegion:     true,
	corev1.LabelInstanceTypeStable: true,
	corev1.LabelArchStable:         true,
	corev1.LabelOSStable:           true,
}

// KubeletLabels returns the labels a node's bootstrap passes to the kubelet (--node-labels): the
// node's planned labels, less those the kubelet or the cloud sets itself (cloudSetLabels) and
// less any other label of the kubernetes.io and k8s.io namespaces outside node.kubernetes.io and
// kubelet.kubernetes.io, which the kubelet refuses to start with; plus the labels that make the
// GPU operator configure the GPUs as planned: api.LabelMIGConfig for a MIG layout, and
// api.LabelDevicePluginConfig (DevicePluginConfig) for time-slicing and MPS; and which of the
// device plugin and the DRA driver publishes the GPUs (api.LabelDeployDevicePlugin,
// api.LabelDeployDRADriver), never both.
func KubeletLabels(labels map[string]string, gpu api.GPUConfig) map[string]string {
	out := make(map[string]string, len(labels)+2)
	for k, v := range labels {
		if !cloudSetLabels[k] && kubeletMaySet(k) {
			out[k] = v
		}
	}
	if gpu.MIGConfig != "" {
		out[api.LabelMIGConfig] = gpu.MIGConfig
	}
	if name := DevicePluginConfig(gpu); name != "" {
		out[api.LabelDevicePluginConfig] = name
	}
	switch {
	case gpu.DRAPublishes():
		out[api.LabelDeployDevicePlugin] = "false"
		out[api.LabelDeployDRADriver] = "true"
	case gpu.Sharing != "":
		// A GPU node of the device plugin: the DRA driver must not publish its GPUs too.
		out[api.LabelDeployDRADriver] = "false"
	}
	return out
}

// kubeletMaySet reports whether the kubelet accepts the label key in --node-labels: keys outside
// the kubernetes.io and k8s.io namespaces, and those under node.kubernetes.io and
// kubelet.kubernetes.io (the kubelet's own list of well-known labels is excluded by the caller).
func kubeletMaySet(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	domain := strings.ToLower(prefix)
	reserved := domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") ||
		domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io")
	if !reserved {
		return true
	}
	for _, ns := range []string{"node.kubernetes.io", "kubelet.kubernetes.io"} {
		if domain == ns || strings.HasSuffix(domain, "."+ns) {
			return true
		}
	}
	return false
}

// DevicePluginConfig names the NVIDIA device plugin configuration a node's GPU sharing needs:
// "tiler-<sharing>-<replicas>", with "-renamed" when the replicas are advertised as
// nvidia.com/gpu.shared, e.g. "tiler-time-slicing-4"; "" for whole GPUs, MIG and no GPUs. The
// cluster's device-plugin ConfigMap (the GPU operator's devicePlugin.config) must hold a
// configuration of that name for each sharing the cost policy's pools use.
func DevicePluginConfig(gpu api.GPUConfig) string {
	if gpu.Sharing != "time-slicing" && gpu.Sharing != "mps" || gpu.Replicas <= 0 {
		return ""
	}
	name := "tiler-" + string(gpu.Sharing) + "-" + strconv.Itoa(gpu.Replicas)
	if gpu.RenameShared {
		name += "-renamed"
	}
	return name
}

// LabelsFlag renders labels as the kubelet's --node-labels takes them: key=value pairs, sorted,
// comma-separated.
func LabelsFlag(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// TaintsFlag renders taints as the kubelet's --register-with-taints takes them: key=value:Effect
// (key:Effect without a value), sorted, comma-separated.
func TaintsFlag(taints []corev1.Taint) string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		if t.Value == "" {
			out = append(out, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		} else {
			out = append(out, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
