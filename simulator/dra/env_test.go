package dra

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// podBuilder builds pods for the tests: namespace "sim" unless set.
type podBuilder struct{ pod *corev1.Pod }

func newPod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "sim", Name: name, UID: types.UID("uid-" + name)}}}
}

func (b *podBuilder) ns(ns string) *podBuilder { b.pod.Namespace = ns; return b }

// template adds a spec.resourceClaims entry backed by a ResourceClaimTemplate.
func (b *podBuilder) template(entry, template string) *podBuilder {
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims,
		corev1.PodResourceClaim{Name: entry, ResourceClaimTemplateName: &template})
	return b
}

// claim adds a spec.resourceClaims entry naming a ResourceClaim.
func (b *podBuilder) claim(entry, claim string) *podBuilder {
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims,
		corev1.PodResourceClaim{Name: entry, ResourceClaimName: &claim})
	return b
}

// gpus adds a container requesting n nvidia.com/gpu.
func (b *podBuilder) gpus(n int64) *podBuilder {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: "main",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q}}})
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

// env is an allocator over the test claims, with the steps a simulation takes per pod.
type env struct {
	t     testing.TB
	alloc *Allocator
	index *ClaimIndex
}

// newEnv loads the classes and claims and adds extra claims and slices (snapshot state).
func newEnv(t testing.TB, slices []*resourcev1.ResourceSlice, claims ...*resourcev1.ResourceClaim) *env {
	t.Helper()
	s := loadSnapshot(t, claimFiles...)
	claims = append(append([]*resourcev1.ResourceClaim(nil), s.ResourceClaims...), claims...)
	a, err := NewAllocator(s.DeviceClasses, slices, claims)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, alloc: a, index: NewClaimIndex(claims, s.ResourceClaimTemplates)}
}

// podClaims resolves the pod's claims plus its extended-resource claim.
func (e *env) podClaims(p *corev1.Pod, n *corev1.Node) []*resourcev1.ResourceClaim {
	e.t.Helper()
	claims, err := e.index.PodClaims(p)
	if err != nil {
		e.t.Fatalf("PodClaims(%s): %v", p.Name, err)
	}
	if c := e.alloc.ExtendedResourceClaim(p, n); c != nil {
		claims = append(claims, c)
	}
	return claims
}

// place fits the pod's claims on the node and commits them when they fit.
func (e *env) place(p *corev1.Pod, n *corev1.Node, slices []*resourcev1.ResourceSlice) ([]resourcev1.AllocationResult, *Reason) {
	e.t.Helper()
	claims := e.podClaims(p, n)
	results, reason, err := e.alloc.Fit(n, slices, claims)
	if err != nil {
		e.t.Fatalf("Fit(%s on %s): %v", p.Name, n.Name, err)
	}
	if reason == nil {
		for i, c := range claims {
			e.alloc.Commit(c, results[i])
		}
	}
	return results, reason
}

// devicesOf lists "request → pool/device" of the results, for failure messages and checks.
func devicesOf(results []resourcev1.AllocationResult) []string {
	var out []string
	for _, r := range results {
		for _, d := range r.Devices.Results {
			out = append(out, d.Request+"="+d.Pool+"/"+d.Device)
		}
	}
	return out
}
