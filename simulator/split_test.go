package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestSplitPartsSplitAgain: the split pass re-packs a big node's pods under one price cap, so
// every part gets the same size limit, right for a part holding one large pod and too big for the
// others; the parts are split in turn. On the GPU pods of TestConsolidationQuality's fleet 16
// (whole GPUs on g6, g5 and g4dn), first fit puts seven of them on a g4dn.metal (8 GPUs,
// $3.834/h); the split under the 12xlarge's cap gave [2+1+1 GPUs] and [1+1+1+1 GPUs] on two 12xlarges, and the
// second of those, split again, is four xlarges: $0.65/h less. The LP re-pack, run on every
// class, did not find it.
func TestSplitPartsSplitAgain(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu
  instanceFamilies: [g6, g5, g4dn]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`))
	if err != nil {
		t.Fatal(err)
	}
	pods := []struct {
		cpu, mem string
		gpus     int
	}{
		{"1213m", "6733Mi", 4}, {"1322m", "7869Mi", 4}, {"1072m", "1618Mi", 4}, {"3823m", "4986Mi", 4},
		{"1624m", "10987Mi", 3}, {"3955m", "7728Mi", 1}, {"1876m", "9757Mi", 2}, {"474m", "1966Mi", 2},
		{"171m", "694Mi", 2}, {"3323m", "13154Mi", 1}, {"3700m", "14417Mi", 1}, {"2213m", "9773Mi", 1},
		{"2624m", "9694Mi", 1}, {"3081m", "11501Mi", 1}, {"1455m", "14511Mi", 1}, {"370m", "10950Mi", 1},
		{"439m", "12942Mi", 1}, {"1115m", "3723Mi", 1}, {"2985m", "620Mi", 1}, {"2105m", "9742Mi", 1},
	}
	snap := &snapshot.Snapshot{}
	for i, p := range pods {
		snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprintf("g-%02d", i)).Label("app", fmt.Sprintf("gpu-%d", i%6)).
			CPU(p.cpu).Mem(p.mem).GPU(p.gpus).Tolerate("nvidia.com/gpu").Obj())
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	// Four 4-GPU pods: four 12xlarges; 3+1 and 2+2: two more; the third 2-GPU pod with two
	// 1-GPU pods: one more; the other nine 1-GPU pods fit an xlarge each (the 3955m one, on the
	// 3+1 node, does not).
	big, small := price(t, cat, "g4dn.12xlarge"), price(t, cat, "g4dn.xlarge")
	want := 7*big + 9*small
	if len(plan.Unschedulable) > 0 || plan.CostPerHour > want+1e-6 {
		var nodes []string
		for _, n := range plan.NewNodes {
			nodes = append(nodes, fmt.Sprintf("%s%v", n.InstanceType, n.Pods))
		}
		t.Errorf("the plan costs $%.3f/h (%d unschedulable), seven 12xlarges and nine xlarges $%.3f/h: %v", plan.CostPerHour, len(plan.Unschedulable), want, nodes)
	}
}

// price is the cheapest spot price of an instance type in the catalog.
func price(t *testing.T, cat *catalog.Catalog, name string) float64 {
	t.Helper()
	best := 0.0
	for _, ty := range cat.Types {
		if string(ty.Name) != name {
			continue
		}
		for _, o := range ty.Offerings {
			if o.CapacityType == "spot" && !o.Unavailable && (best == 0 || o.PricePerHour < best) {
				best = o.PricePerHour
			}
		}
	}
	if best == 0 {
		t.Fatalf("no spot offering of %s", name)
	}
	return best
}
