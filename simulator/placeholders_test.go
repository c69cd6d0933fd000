package simulator_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestPlaceholdersLeftOut: a one-GPU node held by a bound placeholder pod takes a pending GPU pod
// (the scheduler preempts the placeholder for it), and a pending placeholder buys nothing: the
// reservation it stands for is planned by the controller as a pod of its own.
func TestPlaceholdersLeftOut(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	node := simtest.Node("gpu-0", "g6.xlarge", "us-east-1a", simtest.Resources("cpu", "4", "memory", "15Gi", "pods", "110", "nvidia.com/gpu", "1"))
	held := simtest.Pod("tiler-placeholder-llm-chat-0").Namespace("tiler-system").Label(api.LabelPlaceholder, "llm.chat").
		CPU("2").Mem("8Gi").GPU(1).On("gpu-0").Obj()
	waiting := simtest.Pod("tiler-placeholder-llm-chat-1").Namespace("tiler-system").Label(api.LabelPlaceholder, "llm.chat").
		CPU("2").Mem("8Gi").GPU(1).Obj()
	replica := simtest.Pod("chat-0").Namespace("llm").CPU("2").Mem("8Gi").GPU(1).Obj()
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{held, waiting, replica}}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 0 || len(plan.ExistingNodes) != 1 ||
		len(plan.ExistingNodes[0].Pods) != 1 || plan.ExistingNodes[0].Pods[0] != "llm/chat-0" {
		t.Errorf("plan %+v: want llm/chat-0 on gpu-0, in the room its placeholder holds, and nothing bought", plan)
	}
	if len(snap.Pods) != 3 {
		t.Errorf("the caller's snapshot lost pods: %d", len(snap.Pods))
	}
}
