package dra

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ExtendedResourceClasses returns DeviceClasses that set spec.extendedResourceName, so plain
// nvidia.com/gpu requests can be satisfied by DRA devices (KEP-5004), keyed by that name. When
// several classes name the same resource, the newest class wins and, at equal age, the first by
// name.
func (a *Allocator) ExtendedResourceClasses() map[corev1.ResourceName]*resourcev1.DeviceClass {
	out := map[corev1.ResourceName]*resourcev1.DeviceClass{}
	for _, c := range a.classes.sorted {
		if c.Spec.ExtendedResourceName == nil {
			continue
		}
		name := corev1.ResourceName(*c.Spec.ExtendedResourceName)
		if old, ok := out[name]; !ok || old.CreationTimestamp.Before(&c.CreationTimestamp) {
			out[name] = c
		}
	}
	return out
}

// extendedResourceClass maps an extended resource to the class that serves it: an explicit
// spec.extendedResourceName, or the implicit "deviceclass.resource.kubernetes.io/<class>" every
// class has.
func (a *Allocator) extendedResourceClass(name corev1.ResourceName, explicit map[corev1.ResourceName]*resourcev1.DeviceClass) (*resourcev1.DeviceClass, bool) {
	if c, ok := explicit[name]; ok {
		return c, true
	}
	if className, ok := strings.CutPrefix(string(name), resourcev1.ResourceDeviceClassPrefix); ok && className != "" {
		c, ok := a.classes.byName[className]
		return c, ok
	}
	return nil, false
}

// ExtendedResourceClaim returns the claim kube-scheduler's DynamicResources plugin makes for the
// pod's extended resources that DRA serves on the node, or nil if there are none. A resource is
// served by DRA when a DeviceClass maps to it and the node's allocatable does not list it (a
// device plugin takes precedence); node may be nil for a hypothetical node without device
// plugins. The claim has one ExactCount request per resource, for the pod's effective request
// (the larger of the largest init container and the sum of the others), named
// "extended-resource-<i>" in resource-name order; the scheduler splits the count per container,
// which allocates the same devices. Put it next to PodClaims' claims in Fit.
func (a *Allocator) ExtendedResourceClaim(pod *corev1.Pod, node *corev1.Node) *resourcev1.ResourceClaim {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	explicit := a.ExtendedResourceClasses()
	names := make([]corev1.ResourceName, 0, len(requests))
	for name := range requests {
		names = append(names, name)
	}
	slices.Sort(names)
	var reqs []resourcev1.DeviceRequest
	for _, name := range names {
		q := requests[name]
		count, ok := q.AsInt64()
		if !ok || count <= 0 {
			continue
		}
		class, ok := a.extendedResourceClass(name, explicit)
		if !ok || servedByDevicePlugin(node, name) {
			continue
		}
		reqs = append(reqs, resourcev1.DeviceRequest{
			Name: fmt.Sprintf("extended-resource-%d", len(reqs)),
			Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class.Name,
				AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
				Count:           count,
			},
		})
	}
	if len(reqs) == 0 {
		return nil
	}
	controller := true
	name := pod.Name + "-extended-resources"
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   pod.Namespace,
			UID:         types.UID("tiler-" + pod.Namespace + "-" + name),
			Annotations: map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &controller,
			}},
		},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}},
	}
}

// servedByDevicePlugin reports whether the node advertises the resource itself.
func servedByDevicePlugin(node *corev1.Node, name corev1.ResourceName) bool {
	if node == nil {
		return false
	}
	q, ok := node.Status.Allocatable[name]
	return ok && !q.IsZero()
}
