package fidelity

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api"
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
		KindTimeSlicedGPU, KindMIG, KindGang, KindGangNode, KindGangZone, KindDRA, KindDRAConsumable, KindDRADynamicMIG, KindGPUDriver} {
		if kinds[k] == 0 {
			t.Errorf("no pod of kind %s in 200 scenarios", k)
		}
	}
	t.Logf("pods per kind: %v", kinds)
}

// TestGenerateNarrowZones: GenOptions.NarrowZones confines the general pool to two zones in most
// scenarios that have one (about a fifth without it), and changes nothing else of the scenario.
func TestGenerateNarrowZones(t *testing.T) {
	narrowed := func(s *Scenario) bool {
		general := strings.Index(s.Policy, "- name: general\n")
		if general < 0 {
			return false
		}
		rest := s.Policy[general+len("- name: general\n"):]
		if next := strings.Index(rest, "- name:"); next >= 0 {
			rest = rest[:next]
		}
		return strings.Contains(rest, "  zones: [")
	}
	var withPool, plain, narrow int
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := Generate(seed, GenOptions{}), Generate(seed, GenOptions{NarrowZones: true})
		if !strings.Contains(a.Policy, "- name: general\n") {
			continue
		}
		withPool++
		if narrowed(a) {
			plain++
		}
		if narrowed(b) {
			narrow++
		}
		if len(a.Snapshot.Pods) != len(b.Snapshot.Pods) || len(a.Snapshot.Nodes) != len(b.Snapshot.Nodes) {
			t.Fatalf("seed %d: NarrowZones changed the workload: %d/%d pods, %d/%d nodes", seed,
				len(a.Snapshot.Pods), len(b.Snapshot.Pods), len(a.Snapshot.Nodes), len(b.Snapshot.Nodes))
		}
	}
	t.Logf("general pool limited to two zones: %d of %d scenarios by default, %d with NarrowZones", plain, withPool, narrow)
	if plain*100 > withPool*35 || narrow*100 < withPool*65 {
		t.Errorf("general pool narrowed in %d (default) and %d (NarrowZones) of %d scenarios; want about 20 %% and 80 %%", plain, narrow, withPool)
	}
}

// TestGenerateSoft: GenOptions.Soft gives some workloads soft constraints (KindSoft) and changes
// nothing else of the scenario; their plans hold under the checker and, under the default policy
// (softConstraints premium 0), cost no more than the plans of the same scenarios without them.
func TestGenerateSoft(t *testing.T) {
	soft := 0
	for seed := uint64(1); seed <= 40; seed++ {
		a, b := Generate(seed, GenOptions{}), Generate(seed, GenOptions{Soft: true})
		if len(a.Snapshot.Pods) != len(b.Snapshot.Pods) || len(a.Snapshot.Nodes) != len(b.Snapshot.Nodes) || a.Policy != b.Policy {
			t.Fatalf("seed %d: Soft changed the scenario beyond soft constraints", seed)
		}
		pol, err := b.ParsedPolicy()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Snapshot.Pods {
			if p.Spec.NodeName == "" && slices.Contains(Kinds(p, pol), KindSoft) {
				soft++
			}
		}
		cat, err := b.LoadCatalog()
		if err != nil {
			t.Fatal(err)
		}
		plan := func(s *Scenario) *api.Plan {
			p, err := simulator.Simulate(simulator.Input{Snapshot: s.Snapshot, Catalog: cat, Policy: pol,
				Options: simulator.Options{Seed: "fidelity"}})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, v := range simtest.Check(s.Snapshot, p) {
				t.Errorf("seed %d: checker: %s", seed, v)
			}
			return p
		}
		pa, pb := plan(a), plan(b)
		if pb.CostPerHour > pa.CostPerHour+1e-6 || len(pb.Unschedulable) > len(pa.Unschedulable) {
			t.Errorf("seed %d: with soft constraints $%v/h and %d unschedulable, without $%v/h and %d", seed,
				pb.CostPerHour, len(pb.Unschedulable), pa.CostPerHour, len(pa.Unschedulable))
		}
	}
	if soft == 0 {
		t.Error("no pending pod of kind soft in 40 scenarios")
	}
	t.Logf("%d pending pods of kind soft in 40 scenarios", soft)
}

// TestGeneratePreemption: every generated preemption scenario preempts (its PriorityClasses may)
// and its plan serves at least one pending pod by preemption, naming victims, with nothing bought
// for that pod.
func TestGeneratePreemption(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		sc := GeneratePreemption(seed)
		if !sc.Preempts() {
			t.Fatalf("%s does not preempt", sc.Name)
		}
		cat, err := sc.LoadCatalog()
		if err != nil {
			t.Fatal(err)
		}
		pol, err := sc.ParsedPolicy()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: sc.Snapshot, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Preemptions) == 0 || len(plan.Preemptions[0].Victims) == 0 {
			t.Errorf("%s: no preemption planned: %+v", sc.Name, plan)
		}
		for _, n := range plan.NewNodes {
			for _, p := range n.Pods {
				for _, pr := range plan.Preemptions {
					if pr.Pod == p {
						t.Errorf("%s: %s preempts and is bought for", sc.Name, p)
					}
				}
			}
		}
		if Generate(seed, GenOptions{}).Preempts() {
			t.Errorf("seed-%d: generated scenarios must not preempt", seed)
		}
	}
}
