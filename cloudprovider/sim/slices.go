package sim

import (
	"context"
	"fmt"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// DRADriver is the driver name of the DRA Driver for NVIDIA GPUs.
const DRADriver = dra.DriverName

// NodeSlices returns the ResourceSlices the NVIDIA DRA driver publishes on the node of a launch
// of the type configured as g: simulator/dra's NodeSlices, the function the simulator plans the
// node with, so the scheduler allocates from exactly the devices the plan did. Full GPUs when
// the driver alone publishes them (g.DRA, or g.ConsumableMemory: shareable GPUs whose memory is
// consumable capacity), every MIG partition over shared counters under dynamic-mig, nothing where
// the device plugin publishes the GPUs (whole, time-slicing, MPS, static MIG) or for a type
// without GPUs. The slices
// have no owner reference; ensureSlices adds the Node's.
func NodeSlices(nodeName string, it *catalog.InstanceType, g api.GPUConfig) []*resourcev1.ResourceSlice {
	return dra.NodeSlices(nodeName, it, g)
}

// ensureSlices publishes the node's ResourceSlices (NodeSlices), owned by the Node so that the
// garbage collector removes them with it, unless they exist. One List per call finds the
// slices already published.
func (p *Provider) ensureSlices(ctx context.Context, r *record, it *catalog.InstanceType, node *corev1.Node) error {
	want := NodeSlices(node.Name, it, r.GPU)
	if len(want) == 0 {
		return nil
	}
	have, err := p.publishedSlices(ctx, node.Name)
	if err != nil {
		return err
	}
	api := p.kube.ResourceV1().ResourceSlices()
	for _, slice := range want {
		if have[slice.Name] {
			continue
		}
		slice.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: new(true),
		}}
		if _, err := api.Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("publishing ResourceSlice %s: %w", slice.Name, err)
		}
	}
	return nil
}

// publishedSlices returns the names of the driver's ResourceSlices of the node.
func (p *Provider) publishedSlices(ctx context.Context, nodeName string) (map[string]bool, error) {
	if have, ok := p.cachedSlices(nodeName); ok {
		return have, nil
	}
	list, err := p.kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorNodeName, nodeName),
		fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorDriver, DRADriver),
	).String()})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices of node %s: %w", nodeName, err)
	}
	out := make(map[string]bool, len(list.Items))
	for _, s := range list.Items {
		// Filter again: not every client (the fake clientset) honours field selectors.
		if s.Spec.NodeName != nil && *s.Spec.NodeName == nodeName && s.Spec.Driver == DRADriver {
			out[s.Name] = true
		}
	}
	return out, nil
}
