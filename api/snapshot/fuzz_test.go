package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxFuzzInput bounds a fuzzed snapshot, so that a slow input is a finding about the decoder, not
// about size.
const maxFuzzInput = 64 << 10

// FuzzDecode checks that Decode never panics and that what it accepts holds the decoder's
// promises: every object named and listed once, every quantity valid (CheckQuantity), and the
// snapshot written back as a JSON stream decodes to the same objects.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(nodeA + nodeB))
	f.Add([]byte(listYAML("a") + "---\n" + pod("{requests: {cpu: 500m, nvidia.com/gpu: 1}}")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		s, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		objs := s.objects()
		seen := map[string]bool{}
		for _, o := range objs {
			acc, err := meta.Accessor(o)
			if err != nil {
				t.Fatalf("%T: %v", o, err)
			}
			key := fmt.Sprintf("%T/%s/%s", o, acc.GetNamespace(), acc.GetName())
			if acc.GetName() == "" || seen[key] {
				t.Fatalf("%s: unnamed or listed twice", key)
			}
			seen[key] = true
			if err := validateObject(o); err != nil {
				t.Fatalf("%s accepted with %v", key, err)
			}
		}
		var buf bytes.Buffer
		for _, o := range objs {
			gvks, _, err := scheme.ObjectKinds(o)
			if err != nil {
				t.Fatal(err)
			}
			o.GetObjectKind().SetGroupVersionKind(gvks[0])
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatalf("%s: %v", key(o), err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		again, err := Decode(&buf)
		if err != nil {
			t.Fatalf("the accepted snapshot does not decode again: %v\n%s", err, buf.String())
		}
		if got, want := len(again.objects()), len(objs); got != want {
			t.Fatalf("decoded again: %d objects, want %d", got, want)
		}
		for i, p := range again.Pods {
			if !equalRequests(p, s.Pods[i]) {
				t.Fatalf("pod %s: requests changed in the round trip", key(p))
			}
		}
	})
}

// objects lists every object of the snapshot.
func (s *Snapshot) objects() []runtime.Object {
	var out []runtime.Object
	for _, o := range s.Nodes {
		out = append(out, o)
	}
	for _, o := range s.Pods {
		out = append(out, o)
	}
	for _, o := range s.PriorityClasses {
		out = append(out, o)
	}
	for _, o := range s.DaemonSets {
		out = append(out, o)
	}
	for _, o := range s.DeviceClasses {
		out = append(out, o)
	}
	for _, o := range s.ResourceClaims {
		out = append(out, o)
	}
	for _, o := range s.ResourceClaimTemplates {
		out = append(out, o)
	}
	for _, o := range s.ResourceSlices {
		out = append(out, o)
	}
	return out
}

func key(o runtime.Object) string {
	acc, _ := meta.Accessor(o)
	return acc.GetNamespace() + "/" + acc.GetName()
}

func equalRequests(a, b *corev1.Pod) bool {
	if len(a.Spec.Containers) != len(b.Spec.Containers) {
		return false
	}
	for i := range a.Spec.Containers {
		ra, rb := a.Spec.Containers[i].Resources.Requests, b.Spec.Containers[i].Resources.Requests
		if len(ra) != len(rb) {
			return false
		}
		for n, q := range ra {
			if q.Cmp(rb[n]) != 0 {
				return false
			}
		}
	}
	return true
}
