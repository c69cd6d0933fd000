package provisioner

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
)

// TestRelayouts: a node's tiler.dev/mig-relayout annotation is a re-layout under way until the
// MIG manager reports success or failure of the configuration it names; another configuration
// set meanwhile ends it as failed; an annotation that does not parse is ignored.
func TestRelayouts(t *testing.T) {
	ann := func(cfg string) string {
		b, _ := json.Marshal(api.NodeRelayout{Node: "x", MIGConfig: cfg, GPUs: []int{7}})
		return string(b)
	}
	node := func(name, annotation, config, state string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
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
	going, ended := relayouts([]*corev1.Node{
		node("plain", "", "all-1g.5gb", api.MIGConfigSuccess),
		node("pending", ann("new-a"), "new-a", api.MIGConfigPending),
		node("no-state-yet", ann("new-b"), "new-b", ""),
		node("done", ann("new-c"), "new-c", api.MIGConfigSuccess),
		node("refused", ann("new-d"), "new-d", api.MIGConfigFailed),
		node("overridden", ann("new-e"), "someone-else", api.MIGConfigPending),
		node("garbage", "{not json", "new-f", api.MIGConfigPending),
	})
	if len(going) != 2 || going[0].MIGConfig != "new-a" || going[1].MIGConfig != "new-b" {
		t.Errorf("under way: %+v, want new-a and new-b", going)
	}
	want := map[string]bool{"done": false, "refused": true, "overridden": true}
	if len(ended) != len(want) {
		t.Fatalf("ended: %+v, want %v", ended, want)
	}
	for _, e := range ended {
		if failed, ok := want[e.Node.Name]; !ok || failed != e.Failed {
			t.Errorf("ended %s failed=%v, want %v", e.Node.Name, e.Failed, want)
		}
	}
}
