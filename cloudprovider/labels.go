package cloudprovider

import (
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
)

// Labels that name a node's instance type besides node.kubernetes.io/instance-type.
const ()

// InstanceTypeLabels returns the labels naming the instance type of a node launched as the
// catalog type name. They are the simulator's (simulator.InstanceTypeLabels), which plans with
// them: the catalog name as node.kubernetes.io/instance-type, except for GCP's attached-accelerator
// shapes, "n1-standard-4+1xnvidia-tesla-t4", whose name is not a label value ('+'). A node of
// such a shape is labelled as GKE labels it, with the machine type (n1-standard-4) and
// cloud.google.com/gke-accelerator (nvidia-tesla-t4), plus tiler.dev/instance-type
// (n1-standard-4_1xnvidia-tesla-t4) to tell it from other shapes of the machine type.
func InstanceTypeLabels(name api.InstanceTypeName) map[string]string {
	machine, attached, ok := strings.Cut(string(name), "+")
	if !ok {
		return map[string]string{corev1.LabelInstanceTypeStable: string(name)}
	}
	l := map[string]string{corev1.LabelInstanceTypeStable: machine,
		api.LabelCatalogInstanceType: strings.ReplaceAll(string(name), "+", "_")}
	if _, accelerator, ok := strings.Cut(attached, "x"); ok && accelerator != "" {
		l[api.LabelGKEAccelerator] = accelerator
	}
	return l
}

// WithInstanceTypeLabels returns a copy of labels whose instance-type labels are those of name,
// dropping the ones of another type (a fallback offering launches another type than the one the
// request's labels were planned for).
func WithInstanceTypeLabels(labels map[string]string, name api.InstanceTypeName) map[string]string {
	out := make(map[string]string, len(labels)+3)
	for k, v := range labels {
		switch k {
		case corev1.LabelInstanceTypeStable, api.LabelCatalogInstanceType, api.LabelGKEAccelerator:
		default:
			out[k] = v
		}
	}
	for k, v := range InstanceTypeLabels(name) {
		out[k] = v
	}
	return out
}
