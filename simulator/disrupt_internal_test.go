package simulator

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// WithCAStyleRule makes PlanDisruption decide with the Cluster Autoscaler's rule instead of
// Tiler's (see DisruptionOptions.caStyle), for the comparisons of the quality test.
func WithCAStyleRule(o *DisruptionOptions) { o.caStyle = true }

// usePod is a running pod with the requests (name, quantity pairs).
func usePod(kv ...string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return p
}

// useNode is a node with the allocatable (name, quantity pairs).
func useNode(kv ...string) *corev1.Node {
	n := &corev1.Node{}
	n.Status.Allocatable = corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Status.Allocatable[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return n
}

// TestUtilisationIsGPUAware: a GPU node is as used as its GPUs — whole GPUs, time-sliced
// replicas, MIG slices by compute share (7 on A100, 4 on A30), DRA devices and consumable memory —
// whatever its CPU; a CPU node as the larger of its CPU and memory shares.
func TestUtilisationIsGPUAware(t *testing.T) {
	dev := func(name, mem string) resourcev1.DeviceRequestAllocationResult {
		d := resourcev1.DeviceRequestAllocationResult{Device: name}
		if mem != "" {
			d.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse(mem)}
		}
		return d
	}
	cpuNode := useNode("cpu", "4", "memory", "16Gi")
	cases := []struct {
		name    string
		node    *corev1.Node
		pods    []*corev1.Pod
		devices []resourcev1.DeviceRequestAllocationResult
		gpus    int
		model   string
		want    float64
		gpuPods bool
	}{
		{"CPU node, memory the larger", cpuNode, []*corev1.Pod{usePod("cpu", "1", "memory", "8Gi")}, nil, 0, "", 0.5, false},
		{"CPU node, CPU the larger", cpuNode, []*corev1.Pod{usePod("cpu", "3", "memory", "1Gi")}, nil, 0, "", 0.75, false},
		{"one of four whole GPUs, CPU full", useNode("cpu", "4", "nvidia.com/gpu", "4"),
			[]*corev1.Pod{usePod("cpu", "4", "nvidia.com/gpu", "1")}, nil, 4, "L4", 0.25, true},
		{"GPU node with only CPU pods", useNode("cpu", "4", "nvidia.com/gpu", "1"), []*corev1.Pod{usePod("cpu", "3")}, nil, 1, "L4", 0, false},
		{"two of four time-sliced replicas", useNode("nvidia.com/gpu", "4"),
			[]*corev1.Pod{usePod("nvidia.com/gpu", "1"), usePod("nvidia.com/gpu", "1")}, nil, 1, "L4", 0.5, true},
		{"a 3g slice of eight A100s", useNode("nvidia.com/mig-3g.20gb", "16"),
			[]*corev1.Pod{usePod("nvidia.com/mig-3g.20gb", "1")}, nil, 8, "A100-40GB", 3.0 / 7 / 8, true},
		{"a 2g slice of an A30", useNode("nvidia.com/mig-2g.12gb", "2"),
			[]*corev1.Pod{usePod("nvidia.com/mig-2g.12gb", "1")}, nil, 1, "A30", 0.5, true},
		{"DRA: a whole GPU, a MIG partition, half a GPU's memory", useNode("cpu", "48"), nil,
			[]resourcev1.DeviceRequestAllocationResult{dev("gpu-0", ""), dev("gpu-1-mig-1g5gb-19-0", ""), dev("gpu-2", "12Gi")}, 4, "A100-40GB",
			(1 + 1.0/7 + 0.5) / 4, false},
	}
	for _, c := range cases {
		got := utilisationOf(c.node, c.pods, c.devices, c.gpus, c.model, 24576)
		if math.Abs(got.util-c.want) > 1e-9 || got.gpuPods != c.gpuPods {
			t.Errorf("%s: utilisation %.4f (GPU pods %v), want %.4f (%v)", c.name, got.util, got.gpuPods, c.want, c.gpuPods)
		}
	}
}

// TestDisruptionNeedsTime: time is data; a decision without it (or without a snapshot) is an
// input error, and the snapshot's time serves when the options have none.
func TestDisruptionNeedsTime(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PlanDisruption(DisruptionInput{Snapshot: &snapshot.Snapshot{}, Catalog: cat}); err == nil {
		t.Error("a decision without a time was planned")
	}
	if _, err := PlanDisruption(DisruptionInput{Catalog: cat}); err == nil {
		t.Error("a decision without a snapshot was planned")
	}
	p, err := PlanDisruption(DisruptionInput{Snapshot: &snapshot.Snapshot{Now: time.Unix(1e9, 0)}, Catalog: cat})
	if err != nil || len(p.Actions) != 0 || p.Kept == nil || p.Candidates == nil {
		t.Errorf("an empty cluster: %+v, %v", p, err)
	}
}
