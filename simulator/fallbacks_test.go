package simulator_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestFallbacks checks the fallback rule on single-node plans: every fallback is another offering
// of the node's pool, no dearer than 1.25× the node, cheapest first, at most eight, and holds what
// the case says it must.
func TestFallbacks(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(doc string) *policy.CostPolicy {
		p, err := policy.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name   string
		pods   []*corev1.Pod
		policy *policy.CostPolicy
		// check is asked about every fallback f of the only new node n.
		check func(t *testing.T, n api.NewNode, f api.PricedOffering)
		// none: the node must have no fallback at all.
		none bool
	}{{
		name: "cpu pod: other types, zones and capacity types",
		pods: []*corev1.Pod{simtest.Pod("a").CPU("3").Mem("6Gi").Obj()},
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if it, _ := cat.Type(f.InstanceType); it.GPU.Count > 0 {
				t.Errorf("fallback %s has GPUs; the node's pool has none", f.InstanceType)
			}
		},
	}, {
		name: "node selector: only accepted families",
		pods: []*corev1.Pod{simtest.Pod("a").CPU("3").Mem("6Gi").NodeSelector("tiler.dev/instance-family", "c7i").Obj()},
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if !strings.HasPrefix(string(f.InstanceType), "c7i.") {
				t.Errorf("fallback %s is not of family c7i", f.InstanceType)
			}
		},
	}, {
		name: "zone spread pins the zone",
		pods: []*corev1.Pod{simtest.Pod("a").Label("app", "s").CPU("3").Mem("6Gi").Spread(corev1.LabelTopologyZone, 1, true).Obj()},
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if f.Zone != n.Zone {
				t.Errorf("fallback in %s, node pinned to %s", f.Zone, n.Zone)
			}
		},
	}, {
		name: "gang sharing a zone pins the zone",
		pods: []*corev1.Pod{simtest.Pod("g-0").CPU("1").Mem("1Gi").Gang("g", 2, "zone").Obj(),
			simtest.Pod("g-1").CPU("1").Mem("1Gi").Gang("g", 2, "zone").Obj()},
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if f.Zone != n.Zone {
				t.Errorf("fallback in %s, the gang's node in %s", f.Zone, n.Zone)
			}
		},
	}, {
		name: "spread over instance families keeps the family",
		pods: []*corev1.Pod{simtest.Pod("a").Label("app", "fam").CPU("3").Mem("6Gi").Spread(api.LabelInstanceFamily, 1, true).Obj()},
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if got, want := strings.Split(string(f.InstanceType), ".")[0], n.Labels[api.LabelInstanceFamily]; got != want {
				t.Errorf("fallback %s is of family %s, the node of %s", f.InstanceType, got, want)
			}
		},
	}, {
		name: "time-sliced GPUs: GPU types holding the replicas",
		pods: []*corev1.Pod{simtest.Pod("a").CPU("1").Mem("4Gi").GPU(5).Tolerate("nvidia.com/gpu").Obj()},
		policy: parse(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: shared
  gpu: {sharing: time-slicing, replicas: 4}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  requirements: [{key: tiler.dev/gpu-count, operator: Exists}]
`),
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			// 5 replicas at 4 per GPU need 2 GPUs.
			if it, _ := cat.Type(f.InstanceType); it.GPU.Count < 2 {
				t.Errorf("fallback %s has %d GPUs; 5 replicas need 2", f.InstanceType, it.GPU.Count)
			}
		},
	}, {
		name: "pool price limit at the node's price leaves no dearer fallback",
		pods: []*corev1.Pod{simtest.Pod("a").CPU("3").Mem("6Gi").Obj()},
		policy: func() *policy.CostPolicy {
			// The default plan's node costs p; a limit of p allows nothing dearer.
			n := planOne(t, cat, nil, simtest.Pod("a").CPU("3").Mem("6Gi").Obj())
			return parse(fmt.Sprintf(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: default
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
  limits: {maxPricePerHour: %v}
`, n.PricePerHour))
		}(),
		check: func(t *testing.T, n api.NewNode, f api.PricedOffering) {
			if f.PricePerHour > n.PricePerHour+1e-9 {
				t.Errorf("fallback at $%v breaks the pool's limit of $%v", f.PricePerHour, n.PricePerHour)
			}
		},
	}, {
		name: "instance-types pool of one type in one zone: none",
		pods: []*corev1.Pod{simtest.Pod("a").CPU("1").Mem("1Gi").Obj()},
		policy: parse(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: one
  instanceTypes: [m7i.large]
  zones: [us-east-1a]
  capacityTypes: [on-demand]
`),
		none: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			n := planOne(t, cat, tt.policy, tt.pods...)
			if tt.none {
				if len(n.Fallbacks) != 0 {
					t.Errorf("fallbacks %+v, want none", n.Fallbacks)
				}
				return
			}
			if len(n.Fallbacks) == 0 {
				t.Fatalf("node %s (%s %s %s $%v) has no fallback", n.Name, n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour)
			}
			checkFallbackOrder(t, cat, n)
			for _, f := range n.Fallbacks {
				tt.check(t, n, f)
			}
		})
	}
}

// checkFallbackOrder checks what every node's fallbacks share: cheapest first, at most
// MaxFallbacks, none the node's own offering or repeated, each in the catalog at its price and
// within FallbackPriceTolerance.
func checkFallbackOrder(t *testing.T, cat *catalog.Catalog, n api.NewNode) {
	t.Helper()
	if len(n.Fallbacks) > simulator.MaxFallbacks {
		t.Errorf("%s: %d fallbacks > %d", n.Name, len(n.Fallbacks), simulator.MaxFallbacks)
	}
	seen := map[api.Offering]bool{n.Offering: true}
	prev := n.PricePerHour
	for _, f := range n.Fallbacks {
		key := f.Offering
		if seen[key] {
			t.Errorf("%s: fallback %+v repeats the node or another fallback", n.Name, f)
		}
		seen[key] = true
		if f.PricePerHour < prev-1e-9 {
			t.Errorf("%s: fallback %+v is cheaper than the one before ($%v)", n.Name, f, prev)
		}
		prev = f.PricePerHour
		if f.PricePerHour > n.PricePerHour*simulator.FallbackPriceTolerance+1e-9 {
			t.Errorf("%s: fallback $%v > %v × $%v", n.Name, f.PricePerHour, simulator.FallbackPriceTolerance, n.PricePerHour)
		}
		if got := offeringPrice(cat, f); got != f.PricePerHour {
			t.Errorf("%s: fallback %+v: catalog price %v", n.Name, f, got)
		}
	}
}

func offeringPrice(cat *catalog.Catalog, f api.PricedOffering) float64 {
	it, ok := cat.Type(f.InstanceType)
	if !ok {
		return -1
	}
	for _, o := range it.Offerings {
		if o.Zone == f.Zone && o.CapacityType == f.CapacityType {
			return o.PricePerHour
		}
	}
	return -1
}

func planOne(t *testing.T, cat *catalog.Catalog, pol *policy.CostPolicy, pods ...*corev1.Pod) api.NewNode {
	t.Helper()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: pods}, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) != 1 {
		t.Fatalf("plan has %d new nodes, want 1: %+v", len(plan.NewNodes), plan)
	}
	return plan.NewNodes[0]
}

// TestFallbacksHoldThePlan: in random scenarios, the plan with every new node bought as its first
// fallback, and then as its last, still passes the independent checker. Each node is relabelled
// with WithOfferingLabels and given the fallback type's allocatable, as the cloud would launch it.
func TestFallbacksHoldThePlan(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	withFallbacks := 0
	for seed := 1; seed <= seeds; seed++ {
		snap := simtest.RandomSnapshot(uint64(seed), 5+seed%40)
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range plan.NewNodes {
			checkFallbackOrder(t, cat, n)
			if len(n.Fallbacks) > 0 {
				withFallbacks++
			}
		}
		for _, pick := range []string{"first", "last"} {
			alt := *plan
			alt.NewNodes = nil
			for _, n := range plan.NewNodes {
				if len(n.Fallbacks) > 0 {
					f := n.Fallbacks[0]
					if pick == "last" {
						f = n.Fallbacks[len(n.Fallbacks)-1]
					}
					n = boughtAs(t, cat, n, f)
				}
				alt.NewNodes = append(alt.NewNodes, n)
			}
			for _, v := range simtest.Check(snap, &alt) {
				t.Errorf("seed %d, every node bought as its %s fallback: %s", seed, pick, v)
			}
		}
	}
	if withFallbacks == 0 {
		t.Error("no new node of any scenario has a fallback")
	}
}

// boughtAs returns n as the cloud would launch it as fallback f: relabelled, with f's type's
// allocatable (the default policy's GPUs are whole, so nvidia.com/gpu is the GPU count).
func boughtAs(t *testing.T, cat *catalog.Catalog, n api.NewNode, f api.PricedOffering) api.NewNode {
	t.Helper()
	from, ok1 := simulator.OfferingLabels(cat, n.InstanceType, n.Zone, n.CapacityType)
	to, ok2 := simulator.OfferingLabels(cat, f.InstanceType, f.Zone, f.CapacityType)
	it, ok3 := cat.Type(f.InstanceType)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("%s or %s is not in the catalog", n.InstanceType, f.InstanceType)
	}
	cpu, mem, pods := catalog.Allocatable(cat.Provider, it)
	n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour = f.InstanceType, f.Zone, f.CapacityType, f.PricePerHour
	n.Labels = simulator.WithOfferingLabels(n.Labels, from, to)
	n.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	if it.GPU.Count > 0 {
		n.Allocatable[api.ResourceGPU] = *resource.NewQuantity(int64(it.GPU.Count), resource.DecimalSI)
	}
	return n
}

func TestWithOfferingLabels(t *testing.T) {
	from := map[string]string{"zone": "a", "type": "m7i.large", "cpu": "2"}
	to := map[string]string{"zone": "b", "type": "c7i.xlarge", "cpu": "4", "family-only-in-to": "c7i"}
	labels := map[string]string{"zone": "a", "type": "m7i.large", "cpu": "8", "team": "web", "kubernetes.io/hostname": "n1"}
	got := simulator.WithOfferingLabels(labels, from, to)
	// zone and type follow the offering; cpu=8 was the pool's own and stays; to's new key is added.
	want := map[string]string{"zone": "b", "type": "c7i.xlarge", "cpu": "8", "team": "web",
		"kubernetes.io/hostname": "n1", "family-only-in-to": "c7i"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if labels["zone"] != "a" {
		t.Error("WithOfferingLabels changed its input")
	}
}

// TestFallbacksJSON: the plan's JSON lists a node's fallbacks under "fallbacks" with the
// offering's fields, and leaves the field out when there are none.
func TestFallbacksJSON(t *testing.T) {
	plan := &api.Plan{NewNodes: []api.NewNode{
		{Name: "a", Fallbacks: []api.PricedOffering{{Offering: api.Offering{InstanceType: "c7i.xlarge", Zone: "us-east-1b", CapacityType: api.Spot}, PricePerHour: 0.07}}},
		{Name: "b"},
	}}
	var buf bytes.Buffer
	if err := plan.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `"fallbacks": [`) || !strings.Contains(out, `"instanceType": "c7i.xlarge"`) ||
		!strings.Contains(out, `"capacityType": "spot"`) || !strings.Contains(out, `"pricePerHour": 0.07`) {
		t.Errorf("JSON lacks the fallback:\n%s", out)
	}
	if strings.Count(out, `"fallbacks"`) != 1 {
		t.Errorf("a node without fallbacks renders the field:\n%s", out)
	}
}
