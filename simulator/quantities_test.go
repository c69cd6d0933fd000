package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestExtremeQuantitiesFromTheAPIServer: the controller plans objects the API server admitted,
// which bounds no quantity from above; 1e30 CPU read as 0 milli-CPU and fit a 2-vCPU node, and a
// negative request (a hand-built snapshot) freed room. They are clamped: the huge pod fits
// nowhere, the negative request counts as nothing.
func TestExtremeQuantitiesFromTheAPIServer(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{}
	snap.Nodes = append(snap.Nodes, simtest.Node("small", "m7i.large", "us-east-1a", simtest.Resources("cpu", "2", "memory", "8Gi", "pods", "110")))
	for _, q := range []string{"1e30", "1Ei", "9e18"} {
		p := simtest.Pod("huge-" + q).Obj()
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		snap.Pods = append(snap.Pods, p)
	}
	hog := simtest.Pod("hog").On("small").Obj()
	hog.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-8")}
	snap.Pods = append(snap.Pods, hog, simtest.Pod("fits").CPU("1500m").Obj(), simtest.Pod("too-much").CPU("1500m").Obj())
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, u := range plan.Unschedulable {
		codes[u.Pod] = string(u.Code)
	}
	for _, q := range []string{"1e30", "1Ei", "9e18"} {
		if codes["default/huge-"+q] != "NeverFits" {
			t.Errorf("huge-%s: %q, want NeverFits", q, codes["default/huge-"+q])
		}
	}
	onSmall := 0
	for _, n := range plan.ExistingNodes {
		onSmall += len(n.Pods)
	}
	if onSmall != 1 {
		t.Errorf("%d pods planned onto the 2-vCPU node, want 1: -8 CPU frees no room", onSmall)
	}
}
