package dra

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrClaimNotFound is wrapped by PodClaims when a pod names a ResourceClaim that does not exist;
// the scheduler keeps such a pod pending.
var ErrClaimNotFound = errors.New("resource claim not found")

// ErrTemplateNotFound is wrapped by PodClaims when a pod names a ResourceClaimTemplate that does
// not exist; the resource claim controller cannot create the pod's claim.
var ErrTemplateNotFound = errors.New("resource claim template not found")

// podClaimNameAnnotation is set by the resource claim controller on a claim generated for a pod,
// naming the pod's entry in spec.resourceClaims.
const podClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// ClaimIndex finds claims and templates by namespace and name, so that resolving the claims of
// many pods does not scan the snapshot each time.
type ClaimIndex struct {
	claims    map[string]*resourcev1.ResourceClaim
	templates map[string]*resourcev1.ResourceClaimTemplate
}

// NewClaimIndex indexes a snapshot's ResourceClaims and ResourceClaimTemplates. Nil entries are
// skipped; of two objects with the same namespace and name the last wins.
func NewClaimIndex(claims []*resourcev1.ResourceClaim, templates []*resourcev1.ResourceClaimTemplate) *ClaimIndex {
	x := &ClaimIndex{claims: map[string]*resourcev1.ResourceClaim{}, templates: map[string]*resourcev1.ResourceClaimTemplate{}}
	for _, c := range claims {
		if c != nil {
			x.claims[c.Namespace+"/"+c.Name] = c
		}
	}
	for _, t := range templates {
		if t != nil {
			x.templates[t.Namespace+"/"+t.Name] = t
		}
	}
	return x
}

// PodClaims resolves a pod's spec.resourceClaims to claims: existing ResourceClaims by name, or
// claims generated from ResourceClaimTemplates (named <pod>-<claim> in the pod's namespace) —
// shared claims (several pods naming one ResourceClaim) must be allocated once, which Fit and
// Commit do by claim name. It builds a ClaimIndex; to resolve many pods, build one and call
// its PodClaims.
func PodClaims(pod *corev1.Pod, claims []*resourcev1.ResourceClaim, templates []*resourcev1.ResourceClaimTemplate) ([]*resourcev1.ResourceClaim, error) {
	return NewClaimIndex(claims, templates).PodClaims(pod)
}

// PodClaims resolves the pod's spec.resourceClaims in order. A template entry uses the claim the
// resource claim controller already generated when the pod's status or an owned claim named
// <pod>-<claim> points to it, and generates that claim from the template otherwise; an entry
// whose status says no claim is needed is skipped. Errors name the pod and the entry and wrap
// ErrClaimNotFound or ErrTemplateNotFound.
func (x *ClaimIndex) PodClaims(pod *corev1.Pod) ([]*resourcev1.ResourceClaim, error) {
	var out []*resourcev1.ResourceClaim
	for i, pc := range pod.Spec.ResourceClaims {
		where := fmt.Sprintf("pod %s/%s: spec.resourceClaims[%d] (%s)", pod.Namespace, pod.Name, i, pc.Name)
		switch {
		case pc.ResourceClaimName != nil:
			c, ok := x.claims[pod.Namespace+"/"+*pc.ResourceClaimName]
			if !ok {
				return nil, fmt.Errorf("%s: resourceClaimName %s: %w", where, *pc.ResourceClaimName, ErrClaimNotFound)
			}
			out = append(out, c)
		case pc.ResourceClaimTemplateName != nil:
			c, needed, err := x.templateClaim(pod, pc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if needed {
				out = append(out, c)
			}
		default:
			return nil, fmt.Errorf("%s: neither resourceClaimName nor resourceClaimTemplateName is set", where)
		}
	}
	return out, nil
}

// templateClaim returns the claim generated for a template entry, and false if the pod's status
// records that the entry needs no claim.
func (x *ClaimIndex) templateClaim(pod *corev1.Pod, pc corev1.PodResourceClaim) (*resourcev1.ResourceClaim, bool, error) {
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.Name != pc.Name {
			continue
		}
		if st.ResourceClaimName == nil {
			return nil, false, nil
		}
		if c, ok := x.claims[pod.Namespace+"/"+*st.ResourceClaimName]; ok {
			return c, true, nil
		}
	}
	name := pod.Name + "-" + pc.Name
	if c, ok := x.claims[pod.Namespace+"/"+name]; ok && ownedBy(c, pod) {
		return c, true, nil
	}
	t, ok := x.templates[pod.Namespace+"/"+*pc.ResourceClaimTemplateName]
	if !ok {
		return nil, false, fmt.Errorf("resourceClaimTemplateName %s: %w", *pc.ResourceClaimTemplateName, ErrTemplateNotFound)
	}
	return generateClaim(pod, pc.Name, name, t), true, nil
}

// generateClaim is the claim the resource claim controller would create from the template: the
// template's spec, labels and annotations, owned by the pod and annotated with the entry name.
// Its UID is derived from namespace and name so that results do not depend on randomness.
func generateClaim(pod *corev1.Pod, entry, name string, t *resourcev1.ResourceClaimTemplate) *resourcev1.ResourceClaim {
	annotations := map[string]string{podClaimNameAnnotation: entry}
	for k, v := range t.Spec.Annotations {
		annotations[k] = v
	}
	controller := true
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   pod.Namespace,
			UID:         types.UID("tiler-" + pod.Namespace + "-" + name),
			Labels:      copyMap(t.Spec.Labels),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &controller,
			}},
		},
		Spec: *t.Spec.Spec.DeepCopy(),
	}
}

// ownedBy reports whether the pod controls the claim.
func ownedBy(c *resourcev1.ResourceClaim, pod *corev1.Pod) bool {
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" && o.Name == pod.Name && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// withDefaults applies the API server's defaulting of device requests that a hand-written
// snapshot may lack (allocationMode ExactCount, count 1, toleration operator Equal); the
// allocator rejects a request without allocation mode. It returns the claim itself when nothing
// is missing and a defaulted copy otherwise.
func withDefaults(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	if !needsDefaults(c) {
		return c
	}
	c = c.DeepCopy()
	for i := range c.Spec.Devices.Requests {
		r := &c.Spec.Devices.Requests[i]
		if r.Exactly != nil {
			defaultCount(&r.Exactly.AllocationMode, &r.Exactly.Count)
			defaultTolerations(r.Exactly.Tolerations)
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			defaultCount(&sub.AllocationMode, &sub.Count)
			defaultTolerations(sub.Tolerations)
		}
	}
	return c
}

func needsDefaults(c *resourcev1.ResourceClaim) bool {
	missing := func(mode resourcev1.DeviceAllocationMode, count int64, tol []resourcev1.DeviceToleration) bool {
		if mode == "" || mode == resourcev1.DeviceAllocationModeExactCount && count == 0 {
			return true
		}
		for _, t := range tol {
			if t.Operator == "" {
				return true
			}
		}
		return false
	}
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil && missing(r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.Tolerations) {
			return true
		}
		for _, sub := range r.FirstAvailable {
			if missing(sub.AllocationMode, sub.Count, sub.Tolerations) {
				return true
			}
		}
	}
	return false
}

func defaultCount(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultTolerations(tol []resourcev1.DeviceToleration) {
	for i := range tol {
		if tol[i].Operator == "" {
			tol[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}
