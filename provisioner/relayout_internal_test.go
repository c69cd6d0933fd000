package provisioner

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
)

// TestRelayouts: a node's tiler.dev/mig-relayout annotation is a re-layout under way until the
// MIG manager reports failure of the configuration it names, or success once the node advertises
// the new slices (or the wait after the start is over); another configuration set meanwhile ends
// it as failed; an annotation that does not parse is ignored.
func TestRelayouts(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	const wait = 10 * time.Minute
	advertised := corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("49"), "nvidia.com/mig-3g.20gb": resource.MustParse("2"),
		corev1.ResourceCPU: resource.MustParse("96")}
	ann := func(cfg string) string {
		b, _ := json.Marshal(api.NodeRelayout{Node: "x", MIGConfig: cfg, GPUs: []int{7}, Allocatable: advertised, Started: now.Add(-time.Minute)})
		return string(b)
	}
	annStarted := func(cfg string, started time.Time) string {
		b, _ := json.Marshal(api.NodeRelayout{Node: "x", MIGConfig: cfg, GPUs: []int{7}, Allocatable: advertised, Started: started})
		return string(b)
	}
	// advertising sets the node's allocatable.
	advertising := func(n *corev1.Node, l corev1.ResourceList) *corev1.Node {
		n.Status.Allocatable = l
		return n
	}
	node := func(name, annotation, config, state string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
			Status: corev1.NodeStatus{Allocatable: advertised}}
		if annotation != "" {
			n.Annotations[api.AnnotationMIGRelayout] = annotation
		}
		if config != "" {
			n.Labels[api.LabelMIGConfig] = config
		}
		if state != "" {
			n.Labels[api.LabelMIGConfigState] = state
		}
		return n
	}
	old := corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("56"), corev1.ResourceCPU: resource.MustParse("96")}
	going, ended := relayouts([]*corev1.Node{
		node("plain", "", "all-1g.5gb", api.MIGConfigSuccess),
		node("pending", ann("new-a"), "new-a", api.MIGConfigPending),
		node("no-state-yet", ann("new-b"), "new-b", ""),
		node("done", ann("new-c"), "new-c", api.MIGConfigSuccess),
		node("refused", ann("new-d"), "new-d", api.MIGConfigFailed),
		node("overridden", ann("new-e"), "someone-else", api.MIGConfigPending),
		node("garbage", "{not json", "new-f", api.MIGConfigPending),
		// Success reported while the old slices, or none, are still advertised: still under way.
		advertising(node("success-old-slices", ann("new-g"), "new-g", api.MIGConfigSuccess), old),
		advertising(node("success-no-slices", ann("new-h"), "new-h", api.MIGConfigSuccess), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96")}),
		// ... until the wait is over, or when the annotation has no start (an older controller's).
		advertising(node("success-too-long", annStarted("new-i", now.Add(-wait-time.Second)), "new-i", api.MIGConfigSuccess), old),
		advertising(node("success-no-start", annStarted("new-j", time.Time{}), "new-j", api.MIGConfigSuccess), old),
	}, now, wait)
	var names []string
	for _, r := range going {
		names = append(names, r.MIGConfig)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"new-a", "new-b", "new-g", "new-h"}) {
		t.Errorf("under way: %v, want new-a, new-b, new-g and new-h", names)
	}
	want := map[string]bool{"done": false, "refused": true, "overridden": true, "success-too-long": false, "success-no-start": false}
	if len(ended) != len(want) {
		var got []string
		for _, e := range ended {
			got = append(got, e.Node.Name)
		}
		t.Fatalf("ended: %v, want %v", got, want)
	}
	for _, e := range ended {
		if failed, ok := want[e.Node.Name]; !ok || failed != e.Failed {
			t.Errorf("ended %s failed=%v, want %v", e.Node.Name, e.Failed, want)
		}
	}
}
