package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// TestInFlightUntilDevicesShow: a Ready GPU node stays in flight (planned with the GPUs it will
// have) until its devices show — device-plugin resources in its allocatable or, for GPUs only the
// DRA driver publishes (consumable memory, dynamic MIG), its ResourceSlices; slices alone do not
// make a node whose plan counted device-plugin GPUs usable ("slices-first": its DRA driver
// published before its device plugin). A CPU node leaves as soon as it is Ready.
func TestInFlightUntilDevicesShow(t *testing.T) {
	draOnly := api.GPUConfig{Sharing: api.Exclusive, ConsumableMemory: true}
	readyNode := func(name string, alloc corev1.ResourceList) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	withGPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1")}
	recs := []LaunchRecord{
		{LaunchID: "cpu", NodeName: "cpu", GPUs: 0},
		{LaunchID: "plugin", NodeName: "plugin", GPUs: 1},
		{LaunchID: "plugin-waiting", NodeName: "plugin-waiting", GPUs: 1},
		{LaunchID: "dra", NodeName: "dra", GPUs: 1, GPU: &draOnly},
		{LaunchID: "dra-waiting", NodeName: "dra-waiting", GPUs: 1, GPU: &draOnly},
		{LaunchID: "slices-first", NodeName: "slices-first", GPUs: 1},
		{LaunchID: "unregistered", NodeName: "unregistered", GPUs: 1},
	}
	idx := newNodeIndex([]*corev1.Node{readyNode("cpu", cpu), readyNode("plugin", withGPU), readyNode("plugin-waiting", cpu),
		readyNode("dra", cpu), readyNode("dra-waiting", cpu), readyNode("slices-first", cpu)})
	name, first := "dra", "slices-first"
	slices := []*resourcev1.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: "dra-gpu.nvidia.com-0"},
		Spec: resourcev1.ResourceSliceSpec{NodeName: &name, Driver: "gpu.nvidia.com"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "slices-first-gpu.nvidia.com-0"},
			Spec: resourcev1.ResourceSliceSpec{NodeName: &first, Driver: "gpu.nvidia.com"}}}
	var got []string
	flying, _ := inFlight(recs, idx, slices)
	for _, f := range flying {
		got = append(got, f.Name)
	}
	want := []string{"plugin-waiting", "dra-waiting", "slices-first", "unregistered"}
	if len(got) != len(want) {
		t.Fatalf("in flight %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("in flight %v, want %v", got, want)
		}
	}
}

// TestNominationPlanFindsNodeByInstance: a Node that registers under another name than the
// planned one is found by its provider ID's instance.
func TestNominationPlanFindsNodeByInstance(t *testing.T) {
	pl := newNominationPlan([]LaunchRecord{{LaunchID: "tiler-gpu-abcde", NodeName: "tiler-gpu-abcde", InstanceID: "i-0123", Pods: []string{"ml/a"}}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-23.ec2.internal"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123"}}
	if pl.nodes[n.Name] != nil {
		t.Fatal("found by name")
	}
	pn := pl.byInstance[cloudprovider.InstanceIDOfNode(n)]
	if pn == nil || !pn.pods["ml/a"] {
		t.Fatalf("not found by instance: %+v", pn)
	}
}
