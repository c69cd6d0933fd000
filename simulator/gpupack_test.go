package simulator_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestGPUPodsOnExistingNodesUseTilerPack: two existing GPU nodes have one free GPU (or two free
// time-sliced replicas) each; node-a has 16 free cores, node-b 4. The memory-heavy GPU pod sorts
// first and first fit would put it on node-a, leaving node-b's GPU to a pod that needs 12 cores
// it does not have, and buy a node. TilerPack, which counts GPU that a node's CPU can no longer
// feed, puts it on node-b and both pods fit in the cluster.
func TestGPUPodsOnExistingNodesUseTilerPack(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		replicas      string // nvidia.com/gpu per node and label value; "" for exclusive
		alloc, perPod int
	}{
		{"exclusive", "", 2, 1},
		{"time-sliced x4", "4", 4, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{}
			for _, name := range []string{"node-a", "node-b"} {
				n := simtest.Node(name, "g4dn.12xlarge", "us-east-1a", simtest.Resources("cpu", "20", "memory", "100Gi", "pods", "50", "nvidia.com/gpu", itoa(c.alloc)))
				n.Labels["nvidia.com/gpu.count"] = "2"
				if c.replicas != "" {
					n.Labels["nvidia.com/gpu.count"] = "1"
					n.Labels["nvidia.com/gpu.replicas"] = c.replicas
				}
				snap.Nodes = append(snap.Nodes, n)
			}
			snap.Pods = append(snap.Pods,
				simtest.Pod("bound-a").CPU("4").Mem("8Gi").GPU(c.perPod).On("node-a").Obj(),
				simtest.Pod("bound-b").CPU("16").Mem("8Gi").GPU(c.perPod).On("node-b").Obj(),
				simtest.Pod("memory-heavy").CPU("2").Mem("60Gi").GPU(c.perPod).Obj(),
				simtest.Pod("cpu-heavy").CPU("12").Mem("1Gi").GPU(c.perPod).Obj(),
			)
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 0 {
				t.Fatalf("bought %d nodes, %d unschedulable; want both pods on existing nodes", len(plan.NewNodes), len(plan.Unschedulable))
			}
			got := map[string]string{}
			for _, e := range plan.ExistingNodes {
				for _, p := range e.Pods {
					got[p] = e.Name
				}
			}
			if got["default/memory-heavy"] != "node-b" || got["default/cpu-heavy"] != "node-a" {
				t.Errorf("placements %v; want memory-heavy on node-b, cpu-heavy on node-a", got)
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Error(v)
			}
		})
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
