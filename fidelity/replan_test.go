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
//
// With DRA, the in-flight nodes carry the first plan's claim allocations: before they did, the
// re-plan of seeds 99 and 250 put the pods of a dynamic-MIG node back in another order, their
// 1g.5gb partitions took the slots the last 2g.10gb needed, and it bought a node for that pod.
//
// With narrow zones (the general pool in two zones, the GPU pool in three), the re-plans of seeds
// 137, 144 and 239 (and 249 with DRA) had no place for zone-spread pods the first plan placed: a
// GPU node whose zone its own pods' spread or anti-affinity chose opened a third domain with none
// of the spread pods, which the re-plan counted from the start (an in-flight node) and the first
// plan had not (simulator.brokenDomains; regression gpu-spread-opens-a-domain).
func TestReplanWithPlanInFlightBuysNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		opts GenOptions
	}{{"plain", GenOptions{}}, {"dra", GenOptions{DRA: true}},
		{"narrow", GenOptions{NarrowZones: true, Soft: true}}, {"dra-narrow", GenOptions{DRA: true, NarrowZones: true, Soft: true}}} {
		t.Run(c.name, func(t *testing.T) {
			bad := 0
			const seeds = 300
			for seed := uint64(1); seed <= seeds; seed++ {
				if replanBuysAgain(t, Generate(seed, c.opts), 1) {
					bad++
				}
			}
			t.Logf("%d of %d re-plans disagree with the first plan", bad, seeds)
		})
	}
}

// TestReplanAfterArrivalsBuysNothing is the same with pods arriving between the two plans, as at
// a thousand pods created over several batches (TestE2ELatency): the first plan sees half of the
// pending pods, the re-plan all of them with the first plan's nodes in flight, and it must put
// back every pod the first plan placed. Before the fix, pods spread over zones (DoNotSchedule)
// were put back on their in-flight nodes node by node, a node's pods of a group exceeded the skew
// before the other zones' nodes held theirs, and the re-plan bought new nodes for them.
func TestReplanAfterArrivalsBuysNothing(t *testing.T) {
	bad := 0
	const seeds = 300
	for seed := uint64(1); seed <= seeds; seed++ {
		if replanBuysAgain(t, Generate(seed, GenOptions{}), 2) {
			bad++
		}
	}
	t.Logf("%d of %d re-plans after arrivals disagree with the first plan", bad, seeds)
}

// replanBuysAgain plans the scenario's pending pods with every k-th of them (from the first on)
// held back, then plans all of them again with the first plan's new nodes in flight, and reports
// (as a test error) whether the re-plan buys a node for, or has no place for, a pod the first
// plan placed.
func replanBuysAgain(t *testing.T, sc *Scenario, k int) bool {
	t.Helper()
	cat, err := sc.LoadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := sc.ParsedPolicy()
	if err != nil {
		t.Fatal(err)
	}
	early := *sc.Snapshot
	if k > 1 {
		early.Pods = nil
		pending := 0
		for _, p := range sc.Snapshot.Pods {
			if p.Spec.NodeName == "" {
				pending++
				if pending%k == 0 {
					continue // arrives later
				}
			}
			early.Pods = append(early.Pods, p)
		}
	}
	first, err := simulator.Simulate(simulator.Input{Snapshot: &early, Catalog: cat, Policy: pol,
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
			Claims:         n.Claims,
		})
	}
	later := *sc.Snapshot
	if k > 1 {
		// By the re-plan, the pods the first plan put on existing Ready nodes are bound there.
		onExisting := map[string]string{}
		for _, n := range first.ExistingNodes {
			for _, p := range n.Pods {
				onExisting[p] = n.Name
			}
		}
		later.Pods = nil
		for _, p := range sc.Snapshot.Pods {
			if node, ok := onExisting[p.Namespace+"/"+p.Name]; ok && p.Spec.NodeName == "" {
				p = p.DeepCopy()
				p.Spec.NodeName = node
			}
			later.Pods = append(later.Pods, p)
		}
	}
	again, err := simulator.Simulate(simulator.Input{Snapshot: &later, Catalog: cat, Policy: pol,
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
	// With arrivals, only the pods of the nodes in flight are checked: one the first plan put on
	// an existing Ready node would be bound there by the time the re-plan runs.
	for _, n := range first.ExistingNodes {
		for _, p := range n.Pods {
			placed[p] = k == 1
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
		t.Errorf("%s: with the %d nodes of the first plan in flight, the re-plan %v", sc.Name, len(first.NewNodes), problems)
		return true
	}
	if len(again.Unschedulable) < len(first.Unschedulable) && k == 1 {
		t.Logf("%s: the re-plan places %d pods the first plan had no place for", sc.Name,
			len(first.Unschedulable)-len(again.Unschedulable))
	}
	return false
}
