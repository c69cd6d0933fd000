package snapshot

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxQuantity bounds every request, limit, capacity and allocatable, in the unit the simulator
// counts the resource in: milli-CPU for cpu, bytes for memory, whole units for pods and
// extended resources. 2^46 is 70 billion cores, 64 TiB or 7·10^13 devices — beyond any machine —
// and 2^17 such values still add up within an int64, so no sum the simulator forms overflows
// (1e30 CPU would wrap around and fit a 2-vCPU node).
const MaxQuantity = 1 << 46

// CheckQuantity reports why q cannot be a request, limit, capacity or allocatable of the
// resource name, as the API server does and for what the simulator can count: negative values,
// values beyond MaxQuantity, and fractions of an extended resource (nvidia.com/gpu: 500m), which
// the API server rejects because devices are counted whole.
func CheckQuantity(name corev1.ResourceName, q resource.Quantity) error {
	if q.Sign() < 0 {
		return fmt.Errorf("%s must not be negative", q.String())
	}
	v, unit := q.AsApproximateFloat64(), ""
	if name == corev1.ResourceCPU {
		v, unit = v*1000, "m"
	}
	if v > MaxQuantity || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Errorf("%s is too large: at most %d%s", q.String(), int64(MaxQuantity), unit)
	}
	if IsExtendedResource(name) && q.MilliValue()%1000 != 0 {
		return fmt.Errorf("%s is not a whole number: extended resources are counted in whole devices", q.String())
	}
	return nil
}

// IsExtendedResource reports whether name is an extended resource (nvidia.com/gpu,
// example.com/foo): a name with a domain outside kubernetes.io, not a quota name (requests.*).
// Such resources are integers, the API server's rule.
func IsExtendedResource(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "requests.")
}

// CheckResourceList checks every quantity of l (CheckQuantity) in name order; the error names
// field.name (spec.containers[0].resources.requests.cpu).
func CheckResourceList(field string, l corev1.ResourceList) error {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		if err := CheckQuantity(corev1.ResourceName(n), l[corev1.ResourceName(n)]); err != nil {
			return fmt.Errorf("%s.%s: %w", field, n, err)
		}
	}
	return nil
}

// CheckPodSpec checks what the simulation reads of a pod spec: the requests and limits of every
// container, the pod-level resources and overhead (CheckResourceList), and the host ports. field
// is the spec's path ("spec", "spec.template.spec").
func CheckPodSpec(field string, spec *corev1.PodSpec) error {
	for _, group := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range group.cs {
			c := &group.cs[i]
			at := fmt.Sprintf("%s.%s[%d]", field, group.name, i)
			if err := CheckResourceList(at+".resources.requests", c.Resources.Requests); err != nil {
				return err
			}
			if err := CheckResourceList(at+".resources.limits", c.Resources.Limits); err != nil {
				return err
			}
			for j, p := range c.Ports {
				if p.HostPort < 0 || p.HostPort > 65535 {
					return fmt.Errorf("%s.ports[%d].hostPort: %d must be in 0..65535", at, j, p.HostPort)
				}
			}
		}
	}
	if r := spec.Resources; r != nil {
		if err := CheckResourceList(field+".resources.requests", r.Requests); err != nil {
			return err
		}
		if err := CheckResourceList(field+".resources.limits", r.Limits); err != nil {
			return err
		}
	}
	return CheckResourceList(field+".overhead", spec.Overhead)
}

// validateObject checks the quantities of the kinds whose resources the simulation counts.
func validateObject(obj runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.Pod:
		return CheckPodSpec("spec", &o.Spec)
	case *corev1.Node:
		if err := CheckResourceList("status.capacity", o.Status.Capacity); err != nil {
			return err
		}
		return CheckResourceList("status.allocatable", o.Status.Allocatable)
	case *appsv1.DaemonSet:
		return CheckPodSpec("spec.template.spec", &o.Spec.Template.Spec)
	case *schedulingv1beta1.PodGroup:
		return CheckPodGroup(o)
	}
	return nil
}

// CheckPodGroup checks what the simulation reads of a PodGroup: exactly one scheduling policy,
// and a gang's minCount at least 1.
func CheckPodGroup(g *schedulingv1beta1.PodGroup) error {
	pol := g.Spec.SchedulingPolicy
	switch {
	case pol.Gang != nil && pol.Basic != nil:
		return errors.New("spec.schedulingPolicy: set basic or gang, not both")
	case pol.Gang == nil && pol.Basic == nil:
		return errors.New("spec.schedulingPolicy: one of basic or gang is required")
	case pol.Gang != nil && pol.Gang.MinCount < 1:
		return fmt.Errorf("spec.schedulingPolicy.gang.minCount: %d, must be at least 1", pol.Gang.MinCount)
	}
	return nil
}
