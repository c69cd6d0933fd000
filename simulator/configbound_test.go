package simulator_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// boundPod is a pod of the brute-force instances: CPU, memory, GPUs (device-plugin units: whole
// GPUs, or time-sliced replicas) and an app; pods with anti set repel their app by hostname,
// with zoneAnti by zone; pods with spread carry a hard hostname spread of maxSkew 1 over their
// app (spread pods have an app of their own, so every pod it selects carries it); pods of one
// gang (gang > 0) run on one node (tiler.dev/topology: node); a pod with zone set may only run in
// that zone (a zone node selector), one with family set only on that instance family.
type boundPod struct {
	cpu, mem int64
	gpu      int
	app      string
	anti     bool
	zoneAnti bool
	spread   bool
	gang     int
	zone     string
	family   string
	// plain (draBoundSnapshot): the pod asks for gpu as plain nvidia.com/gpu, which the DRA
	// DeviceClass serves as its extendedResourceName, instead of a claim.
	plain bool
}

// bruteForceOptimum is the cheapest set of nodes holding the pods, by enumerating every
// partition of them into nodes and pricing each block at the cheapest available offering of the
// families on which it fits: CPU, memory and pods within the catalog's allocatable, GPU units
// within GPUs × replicas, no two pods of one app together when either repels it (by hostname;
// by zone too, which the brute force relaxes to the node, its blocks having no zone: a
// relaxation, so its optimum stays at most the true one) or both carry its spread, a gang whole
// in one block or absent from it, the pods of a block in at most one zone (a block is priced at
// its shape's cheapest zone, whichever zone it is pinned to: a relaxation too) and of at most one
// pinned family, priced among that family's shapes. It shares no code with the simulator's bound.
func bruteForceOptimum(pods []boundPod, cat *catalog.Catalog, replicas int, families ...string) float64 {
	shapes := catalogShapes(cat, replicas, families...)
	byFamily := map[string][]nodeShape{}
	for _, f := range families {
		byFamily[f] = catalogShapes(cat, replicas, f)
	}
	gangSize := map[int]int{}
	for _, p := range pods {
		if p.gang > 0 {
			gangSize[p.gang]++
		}
	}
	blockPrice := func(block []int) float64 {
		var c, m int64
		g := 0
		gangs := map[int]int{}
		zone, family := "", ""
		for x, i := range block {
			if z := pods[i].zone; z != "" {
				if zone != "" && zone != z {
					return math.Inf(1)
				}
				zone = z
			}
			if f := pods[i].family; f != "" {
				if family != "" && family != f {
					return math.Inf(1)
				}
				family = f
			}
			c += pods[i].cpu
			m += pods[i].mem
			g += pods[i].gpu
			if pods[i].gang > 0 {
				gangs[pods[i].gang]++
			}
			for _, j := range block[:x] {
				a, b := pods[i], pods[j]
				if a.app == b.app && (a.anti || b.anti || a.zoneAnti || b.zoneAnti || a.spread && b.spread) {
					return math.Inf(1)
				}
			}
		}
		for id, n := range gangs {
			if n != gangSize[id] {
				return math.Inf(1)
			}
		}
		best := math.Inf(1)
		fit := shapes
		if family != "" {
			fit = byFamily[family]
		}
		for _, s := range fit {
			if s.cpu >= c && s.mem >= m && s.pods >= int64(len(block)) && s.gpu >= g && s.price < best {
				best = s.price
			}
		}
		return best
	}
	return minOverPartitions(len(pods), blockPrice)
}

// TestLowerBoundNeverAboveOptimum: on small random instances — CPU pods, whole-GPU pods and
// time-sliced GPU pods (some shapes all GPU pods, unconstrained), some repelling their app by hostname or zone, some spread by hostname,
// some in gangs that share a node — the plan's lower bound (the
// larger of the resource LP and the configuration LP) never exceeds the exact optimum of an
// independent brute-force search, and the configuration LP makes it close: the mean bound /
// optimum is logged and must stay above what the resource LP alone reached on these shapes.
func TestLowerBoundNeverAboveOptimum(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		name     string
		families []string
		gpu      *policy.GPUPolicy
		replicas int
		maxGPU   int
		pins     bool
		allGPU   bool // every pod asks GPUs, and none repels or spreads: the integer GPU cover binds
	}
	shapes := []shape{
		{name: "cpu", families: []string{"m7i", "c7i", "r7i"}, replicas: 1},
		{name: "exclusive", families: []string{"g4dn", "g5", "g6"}, replicas: 1, maxGPU: 4},
		{name: "time-slicing", families: []string{"g5", "g6"}, gpu: &policy.GPUPolicy{Sharing: api.TimeSlicing, Replicas: 4}, replicas: 4, maxGPU: 6},
		{name: "gpu-only", families: []string{"g4dn", "g5", "g6"}, replicas: 1, maxGPU: 2, allGPU: true},
		{name: "time-sliced-only", families: []string{"g4dn", "g5", "g6"}, gpu: &policy.GPUPolicy{Sharing: api.TimeSlicing, Replicas: 4}, replicas: 4, maxGPU: 8, allGPU: true},
		// Pods pinned to zones and families: the bound's split of a group's offerings.
		{name: "pinned", families: []string{"m7i", "c7i", "r7i"}, replicas: 1, pins: true},
	}
	cases := 25
	if testing.Short() {
		cases = 8
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{{
				Name: "pool", InstanceFamilies: sh.families, GPU: sh.gpu}}}
			r := rand.New(rand.NewPCG(11, uint64(len(sh.name))))
			var ratios, resRatios []float64
			for c := 0; c < cases; c++ {
				n := 3 + r.IntN(6) // 3–8 pods
				snap := &snapshot.Snapshot{}
				pods := make([]boundPod, n)
				for i := range pods {
					p := boundPod{cpu: int64(250 * (1 + r.IntN(24))), mem: int64(512*(1+r.IntN(48))) << 20, app: fmt.Sprint("a", r.IntN(3))}
					if sh.maxGPU > 0 && (sh.allGPU || r.IntN(3) > 0) {
						p.gpu = 1 + r.IntN(sh.maxGPU)
					}
					if sh.pins {
						// Half the pods in a zone, a quarter on a family; some repel their app
						// or spread by hostname (no gangs or zone anti-affinity, which zone pins
						// could make unschedulable).
						if r.IntN(2) == 0 {
							p.zone = fmt.Sprint("us-east-1", string(rune('a'+r.IntN(3))))
						}
						if r.IntN(4) == 0 {
							p.family = sh.families[r.IntN(len(sh.families))]
						}
					}
					switch k := r.IntN(8); {
					case sh.pins && k >= 2, sh.allGPU:
					case k == 0, k == 1:
						p.anti = true
					case k == 2:
						p.zoneAnti = true
					case k == 3:
						p.spread, p.app = true, "s"+p.app
					case k == 4, k == 5:
						if p.gpu <= 1 {
							p.gang = 1 + r.IntN(2)
						}
					}
					pods[i] = p
					b := simtest.Pod(fmt.Sprintf("p%d", i)).CPU(fmt.Sprintf("%dm", p.cpu)).Mem(fmt.Sprint(p.mem)).Label("app", p.app)
					if p.gpu > 0 {
						b.GPU(p.gpu)
					}
					if p.zone != "" {
						b.NodeSelector(corev1.LabelTopologyZone, p.zone)
					}
					if p.family != "" {
						b.NodeSelector(api.LabelInstanceFamily, p.family)
					}
					switch {
					case p.anti:
						b.AntiAffinity(corev1.LabelHostname, p.app)
					case p.zoneAnti:
						b.AntiAffinity(corev1.LabelTopologyZone, p.app)
					case p.spread:
						b.Spread(corev1.LabelHostname, 1, true)
					case p.gang > 0:
						b.Gang(fmt.Sprint("g", p.gang), 0, "node")
					}
					snap.Pods = append(snap.Pods, b.Obj())
				}
				plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				opt := bruteForceOptimum(pods, cat, sh.replicas, sh.families...)
				if len(plan.Unschedulable) > 0 || math.IsInf(opt, 1) {
					t.Fatalf("case %d: unschedulable (plan %+v, brute force %v)", c, plan.Unschedulable, opt)
				}
				if plan.CostPerHour < opt-1e-6 {
					t.Fatalf("case %d: plan $%.4f below the exact optimum $%.4f: the brute force or the checker is wrong", c, plan.CostPerHour, opt)
				}
				_, res, conf, err := simulator.RawLowerBounds(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				if plan.LowerBoundPerHour > opt+1e-6 || res > opt+1e-6 || conf > opt+1e-6 {
					t.Fatalf("case %d: a lower bound above the exact optimum $%.4f: plan's $%.4f, resource LP $%.4f, configuration LP $%.4f (pods %+v)",
						c, opt, plan.LowerBoundPerHour, res, conf, pods)
				}
				ratios = append(ratios, conf/opt)
				resRatios = append(resRatios, res/opt)
			}
			t.Logf("configuration LP / exact optimum: %s", distribution(ratios))
			t.Logf("resource LP / exact optimum:      %s", distribution(resRatios))
			if median(ratios) < median(resRatios) {
				t.Errorf("the configuration LP is below the resource LP at the median")
			}
		})
	}
}

// TestConfigBoundBelowPlansOnFleets: on random fleets of every GPU shape (MIG slices and DRA
// claims included, which the brute force does not model), neither bound exceeds the cost of the
// plan Simulate makes for the same pods, and the configuration LP is at least the resource LP's
// on most of them.
func TestConfigBoundBelowPlansOnFleets(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 15
	if testing.Short() {
		seeds = 5
	}
	var res, conf []float64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		sc := simtest.RandomFleet(seed, 60+int(seed%5)*20)
		pol, err := policy.Parse([]byte(sc.Policy))
		if err != nil {
			t.Fatal(err)
		}
		cost, r, c, err := simulator.RawLowerBounds(simulator.Input{Snapshot: sc.Snapshot, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if r > cost+1e-6 || c > cost+1e-6 {
			t.Errorf("seed %d (%s): a bound above the plan: cost $%.4f, resource LP $%.4f, configuration LP $%.4f", seed, sc.Shape, cost, r, c)
		}
		res, conf = append(res, r/cost), append(conf, c/cost)
	}
	t.Logf("resource LP / plan:      %s", distribution(res))
	t.Logf("configuration LP / plan: %s", distribution(conf))
	if median(conf) <= median(res) {
		t.Errorf("the configuration LP is not above the resource LP at the median")
	}
}

// TestLowerBoundDeterministic: planning the same pods again gives the same lower bound. The
// configuration LP's columns came from maps, whose order changed the float sums of the simplex
// and so the bound (seed 2's shrunk fleet: five plans, four bounds between $5.931 and $5.951).
func TestLowerBoundDeterministic(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	f := buildShrunkFleet(t, cat, 2)
	first := purchaseFor(t, cat, f.snap, f.pol).LowerBoundPerHour
	for i := 0; i < 5; i++ {
		if lb := purchaseFor(t, cat, f.snap, f.pol).LowerBoundPerHour; lb != first {
			t.Fatalf("plan %d: lower bound $%v, the first plan's $%v", i+2, lb, first)
		}
	}
}

// TestLowerBoundSplitsZones: nine one-CPU pods on m7i.xlarge nodes (three fit one node), four
// pinned to us-east-1a, four to us-east-1b and one free, which puts them in one group of the
// resource bound. Each zone needs two nodes, so the optimum is four; covering the nine CPUs with
// whole nodes of any zone takes three, and the configuration LP, fractional, is three. The bound
// splits the offerings by zone (each side bought in whole nodes, each covering its own zone's pods)
// and reaches the optimum; without the zone selectors the same pods need three nodes, and the
// bound says three.
func TestLowerBoundSplitsZones(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{{
		Name: "pool", InstanceTypes: []api.InstanceTypeName{"m7i.xlarge"}}}}
	price, ok := cat.Price(api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand})
	if !ok {
		t.Fatal("no on-demand m7i.xlarge in us-east-1a")
	}
	for _, pinned := range []bool{true, false} {
		snap := &snapshot.Snapshot{}
		for i := 0; i < 9; i++ {
			b := simtest.Pod(fmt.Sprintf("p%d", i)).CPU("1").Mem("1Gi")
			if pinned && i < 8 {
				b.NodeSelector(corev1.LabelTopologyZone, []string{"us-east-1a", "us-east-1b"}[i%2])
			}
			snap.Pods = append(snap.Pods, b.Obj())
		}
		in := simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol}
		plan, err := simulator.Simulate(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range simtest.Check(snap, plan) {
			t.Error(v)
		}
		nodes := 3.0
		if pinned {
			nodes = 4
		}
		if math.Abs(plan.CostPerHour-nodes*price) > 1e-6 || math.Abs(plan.LowerBoundPerHour-nodes*price) > 1e-6 {
			t.Errorf("pinned %v: plan $%.4f, bound $%.4f, want both %v nodes ($%.4f)", pinned, plan.CostPerHour, plan.LowerBoundPerHour, nodes, nodes*price)
		}
		_, res, _, err := simulator.RawLowerBounds(in)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res-nodes*price) > 1e-6 {
			t.Errorf("pinned %v: resource bound $%.4f, want %v nodes ($%.4f)", pinned, res, nodes, nodes*price)
		}
	}
}

// TestLowerBoundBelowCheckedPlans: on random fleets whose unconstrained CPU pods are partly pinned
// to a zone or an instance family (what splits the bound's offerings), neither bound exceeds the
// cost of any of three plans for the same pods (Simulate under three seeds), each checked by the
// independent checker.
func TestLowerBoundBelowCheckedPlans(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 10
	if testing.Short() {
		seeds = 4
	}
	var ratios []float64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		sc := simtest.RandomFleet(seed, 40+int(seed%3)*20)
		pol, err := policy.Parse([]byte(sc.Policy))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 0x21))
		pinned := 0
		for _, p := range sc.Snapshot.Pods {
			if p.Spec.Affinity != nil || len(p.Spec.NodeSelector) > 0 || len(p.Spec.TopologySpreadConstraints) > 0 ||
				p.Labels[api.LabelGang] != "" || len(p.Spec.Tolerations) > 0 {
				continue
			}
			switch r.IntN(6) {
			case 0, 1:
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: fmt.Sprint("us-east-1", string(rune('a'+r.IntN(3))))}
				pinned++
			case 2:
				p.Spec.NodeSelector = map[string]string{api.LabelInstanceFamily: []string{"m7i", "c6i", "r6i"}[r.IntN(3)]}
				pinned++
			}
		}
		in := simulator.Input{Snapshot: sc.Snapshot, Catalog: cat, Policy: pol}
		_, res, conf, err := simulator.RawLowerBounds(in)
		if err != nil {
			t.Fatal(err)
		}
		cheapest := math.Inf(1)
		for _, s := range []string{"a", "b", "c"} {
			in.Options.Seed = s
			plan, err := simulator.Simulate(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("seed %d/%s: %d pods unschedulable, first %+v", seed, s, len(plan.Unschedulable), plan.Unschedulable[0])
			}
			for _, v := range simtest.Check(sc.Snapshot, plan) {
				t.Errorf("seed %d/%s: %s", seed, s, v)
			}
			cheapest = min(cheapest, plan.CostPerHour)
		}
		if res > cheapest+1e-6 || conf > cheapest+1e-6 {
			t.Errorf("seed %d (%s, %d pods pinned): a bound above a checked plan: $%.4f, resource bound $%.4f, configuration LP $%.4f",
				seed, sc.Shape, pinned, cheapest, res, conf)
		}
		ratios = append(ratios, max(res, conf)/cheapest)
	}
	t.Logf("bound / cheapest checked plan: %s", distribution(ratios))
}
