package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/mig"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestMIGMixedLayoutsPerNode: pods asking 4 1g.5gb, 17 2g.10gb and 10 3g.20gb slices (the
// consolidation property test's fleet seed 28) need 11 A100s when each GPU takes its own
// layout (five 3g+3g, six 2g+2g+2g+1g), so they fit two p4d.24xlarge nodes of 8 GPUs. One
// layout vector for every node of the offering forces a third node; the planner must give the
// second node the layouts of what the first leaves over. The plan must pass the independent
// checker, and every node's migLayout must name one layout per GPU.
func TestMIGMixedLayoutsPerNode(t *testing.T) {
	in := migMixInput(t, 1)
	snap := in.Snapshot
	plan, err := simulator.Simulate(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %+v", plan.Unschedulable)
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Error(v)
	}
	var layouts []string
	for _, n := range plan.NewNodes {
		if len(n.MIGLayout) != 8 {
			t.Errorf("node %s: migLayout has %d GPUs, want 8 (one layout per GPU)", n.Name, len(n.MIGLayout))
		}
		layouts = append(layouts, fmt.Sprint(n.MIGLayout))
	}
	if len(plan.NewNodes) != 2 {
		t.Errorf("%d nodes ($%.2f/h, lower bound $%.2f/h), want 2 p4d.24xlarge; layouts %v",
			len(plan.NewNodes), plan.CostPerHour, plan.LowerBoundPerHour, layouts)
	}
}

// migMixInput is the pod set of TestMIGMixedLayoutsPerNode repeated scale times (one slice a
// pod) under a mixed-strategy MIG pool of p4d.24xlarge.
func migMixInput(tb testing.TB, scale int) simulator.Input {
	tb.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		tb.Fatal(err)
	}
	pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{{
		Name: "pool", InstanceTypes: []api.InstanceTypeName{"p4d.24xlarge"}, GPU: &policy.GPUPolicy{Sharing: api.MIG, MIGStrategy: "mixed"}}}}
	snap := &snapshot.Snapshot{}
	for _, d := range []struct {
		profile mig.MIGProfile
		n       int
	}{{"1g.5gb", 4}, {"2g.10gb", 17}, {"3g.20gb", 10}} {
		for i := 0; i < d.n*scale; i++ {
			snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprintf("%s-%d", d.profile, i)).CPU("500m").Mem("2Gi").
				Req(mig.ResourceName(d.profile), "1").Obj())
		}
	}
	return simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol}
}

// BenchmarkSimulateMIG times planning the MIG pod set of TestMIGMixedLayoutsPerNode at one and
// eight times its size, and reports the nodes and $/h of the plan.
func BenchmarkSimulateMIG(b *testing.B) {
	for _, scale := range []int{1, 8} {
		b.Run(fmt.Sprintf("scale=%d", scale), func(b *testing.B) {
			in := migMixInput(b, scale)
			plan, err := simulator.Simulate(in)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := simulator.Simulate(in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
			b.ReportMetric(plan.CostPerHour, "$/h")
		})
	}
}
