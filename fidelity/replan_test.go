package fidelity

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/simulator"
)

// TestReplanWithPlanInFlightBuysNothing is the offline side of the regression case
// testdata/replan-with-in-flight-buys-again.txt: planning the same pending pods again, with the
// nodes of the first plan in flight and the pods they were bought for (as the controller does at
// its next batch, before the nodes are Ready), must place again every pod the first plan placed,
// and buy no node for any of them.
// (The re-plan may place pods the first plan had no place for: that shows a pessimistic first
// plan, which TestFidelity's regression cases cover, and is only logged.)
func TestReplanWithPlanInFlightBuysNothing(t *testing.T) {
	bad := 0
	const seeds = 300
	for seed := uint64(1); seed <= seeds; seed++ {
		sc := Generate(seed, GenOptions{})
		cat, err := sc.LoadCatalog()
		if err != nil {
			t.Fatal(err)
		}
		pol, err := sc.ParsedPolicy()
		if err != nil {
			t.Fatal(err)
		}
		first, err := simulator.Simulate(simulator.Input{Snapshot: sc.Snapshot, Catalog: cat, Policy: pol,
			Options: simulator.Options{Seed: "first"}})
		if err != nil {
			t.Fatal(err)
		}
		var inFlight []simulator.InFlightNode
		for _, n := range first.NewNodes {
			inFlight = append(inFlight, simulator.InFlightNode{
				PricedOffering: n.PricedOffering,
				Name:           n.Name,
				Pool:           n.Pool,
				GPU:            n.GPU,
				Pods:           n.Pods,
			})
		}
		again, err := simulator.Simulate(simulator.Input{Snapshot: sc.Snapshot, Catalog: cat, Policy: pol,
			Options: simulator.Options{Seed: "again", InFlight: inFlight}})
		if err != nil {
			t.Fatal(err)
		}
		placed := map[string]bool{}
		for _, n := range first.NewNodes {
			for _, p := range n.Pods {
				placed[p] = true
			}
		}
		for _, n := range first.ExistingNodes {
			for _, p := range n.Pods {
				placed[p] = true
			}
		}
		var problems []string
		for _, n := range again.NewNodes {
			for _, p := range n.Pods {
				if placed[p] {
					problems = append(problems, fmt.Sprintf("buys %s in %s for %s", n.InstanceType, n.Zone, p))
				}
			}
		}
		for _, u := range again.Unschedulable {
			if placed[u.Pod] {
				problems = append(problems, fmt.Sprintf("has no place for %s (%s)", u.Pod, u.Code))
			}
		}
		if len(problems) > 0 {
			bad++
			t.Errorf("seed %d: with the %d nodes of the first plan in flight, the re-plan %v", seed, len(first.NewNodes), problems)
		} else if len(again.Unschedulable) < len(first.Unschedulable) {
			t.Logf("seed %d: the re-plan places %d pods the first plan had no place for", seed,
				len(first.Unschedulable)-len(again.Unschedulable))
		}
	}
	t.Logf("%d of %d re-plans disagree with the first plan", bad, seeds)
}
