package simtest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/catalog"
)

// Controlled gives the pod a controller (kind, name), as a ReplicaSet or Job owns its pods: the
// disruption plan moves only pods something recreates.
func (b *PodBuilder) Controlled(kind, name string) *PodBuilder {
	yes := true
	b.p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name,
		UID: types.UID(kind + "-" + name), Controller: &yes}}
	return b
}

// Annotate sets an annotation.
func (b *PodBuilder) Annotate(k, v string) *PodBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

// WithControllers gives every pod without owner a ReplicaSet controller named after its app
// label (or itself), so that random scenarios are movable.
func WithControllers(pods []*corev1.Pod) {
	for _, p := range pods {
		if len(p.OwnerReferences) > 0 {
			continue
		}
		name := p.Labels["app"]
		if name == "" {
			name = p.Name
		}
		(&PodBuilder{p}).Controlled("ReplicaSet", name)
	}
}

// ManagedNode builds a Ready node of the catalog type as Tiler would have bought it for pool:
// the offering's labels (zone, region, capacity type, instance type, GPU count), allocatable
// from the catalog's overhead formula plus the GPUs as nvidia.com/gpu (whole GPUs), created at
// created. It panics on a type the catalog lacks (a test bug).
func ManagedNode(cat *catalog.Catalog, name, pool string, typ api.InstanceTypeName, zone string, ct api.CapacityType, created time.Time) *corev1.Node {
	it, ok := cat.Type(typ)
	if !ok {
		panic(fmt.Sprintf("simtest: catalog %s has no type %s", cat.Name, typ))
	}
	cpu, mem, pods := catalog.Allocatable(cat.Provider, it)
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	n := Node(name, string(typ), zone, alloc)
	n.CreationTimestamp = metav1.NewTime(created)
	n.Labels[corev1.LabelTopologyRegion] = cat.Region
	n.Labels[api.LabelPool] = pool
	n.Labels[api.LabelCapacityType] = string(ct)
	if it.GPU.Count > 0 {
		n.Labels[api.LabelGPUCount] = strconv.Itoa(it.GPU.Count)
		n.Labels[api.LabelGPUModel] = it.GPU.Model
		n.Status.Allocatable[api.ResourceGPU] = *resource.NewQuantity(int64(it.GPU.Count), resource.DecimalSI)
	}
	n.Status.Capacity = n.Status.Allocatable
	return n
}
