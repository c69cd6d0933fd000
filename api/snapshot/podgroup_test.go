package snapshot

import (
	"strings"
	"testing"
)

// TestPodGroupDecoded: a snapshot file's PodGroup is read, and a gang without minCount is an
// error naming the field.
func TestPodGroupDecoded(t *testing.T) {
	doc := `apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: lab}
spec:
  schedulingPolicy:
    gang: {minCount: 4}
`
	snap, err := Decode(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.PodGroups) != 1 || snap.PodGroups[0].Spec.SchedulingPolicy.Gang.MinCount != 4 || len(snap.Warnings) != 0 {
		t.Fatalf("decoded %+v, warnings %v", snap.PodGroups, snap.Warnings)
	}
	_, err = Decode(strings.NewReader(strings.Replace(doc, "minCount: 4", "minCount: 0", 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.schedulingPolicy.gang.minCount") {
		t.Errorf("minCount 0: %v; want an error naming spec.schedulingPolicy.gang.minCount", err)
	}
}
