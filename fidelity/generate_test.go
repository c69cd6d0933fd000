package fidelity

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestGenerateIsDeterministicAndRoundTrips: the same seed gives the same scenario, and Encode then
// DecodeScenario gives it back.
func TestGenerateIsDeterministicAndRoundTrips(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		a, err := Generate(seed, GenOptions{DRA: seed%2 == 0}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(seed, GenOptions{DRA: seed%2 == 0}).Encode()
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two scenarios differ", seed)
		}
		s, err := DecodeScenario(a)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, a)
		}
		if len(s.Snapshot.PriorityClasses) != 2 {
			t.Fatalf("seed %d: %d PriorityClasses after decoding, want 2", seed, len(s.Snapshot.PriorityClasses))
		}
		c, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, c) {
			t.Fatalf("seed %d: encode(decode(x)) != x:\n%s\n---\n%s", seed, a, c)
		}
	}
}

// TestGeneratedScenariosPlan: every generated scenario is valid input (names, labels, policy) and
// the simulation's plan passes the independent checker.
func TestGeneratedScenariosPlan(t *testing.T) {
	kinds := map[Kind]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		s := Generate(seed, GenOptions{DRA: seed%3 == 0})
		pol, err := s.ParsedPolicy()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cat, err := s.LoadCatalog()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Snapshot.Pods {
			if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
				t.Errorf("seed %d: pod name %q: %v", seed, p.Name, errs)
			}
			for k, v := range p.Labels {
				if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
					t.Errorf("seed %d: pod %s label %s=%s: %v", seed, p.Name, k, v, errs)
				}
			}
			if p.Spec.NodeName == "" {
				for _, k := range Kinds(p, pol) {
					kinds[k]++
				}
			}
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: s.Snapshot, Catalog: cat, Policy: pol,
			Options: simulator.Options{Seed: "fidelity"}})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, v := range simtest.Check(s.Snapshot, plan) {
			t.Errorf("seed %d: checker: %s", seed, v)
		}
	}
	for _, k := range []Kind{KindPlain, KindNodeSelector, KindNodeAffinity, KindToleration, KindZoneSpread,
		KindHostnameSpread, KindAntiAffinity, KindZoneAntiAffinity, KindPodAffinity, KindPriority, KindGPU,
		KindTimeSlicedGPU, KindMIG, KindGang, KindGangNode, KindGangZone, KindDRA, KindDRAConsumable, KindDRADynamicMIG} {
		if kinds[k] == 0 {
			t.Errorf("no pod of kind %s in 200 scenarios", k)
		}
	}
	t.Logf("pods per kind: %v", kinds)
}
