package simulator_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/mig"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// migProfiles are the A100-40GB slices the MIG brute force asks for.
var migProfiles = []mig.MIGProfile{"1g.5gb", "2g.10gb", "3g.20gb"}

// migPod is a pod of the MIG brute force: slices of one profile (migProfiles[profile]), with
// CPU and memory.
type migPod struct {
	cpu, mem int64
	profile  int
	slices   int
}

// migBruteForceOptimum is the cheapest set of nodes of the instance type holding the pods, by
// enumerating every partition of them into nodes: a block fits when its CPU, memory and pods are
// within the catalog's allocatable and some choice of one MIG layout per GPU (any layout of the
// GPU model, not only those the simulator offers for the demand) gives at least the slices of
// each profile it asks; each node costs the type's cheapest available price. It shares no code
// with the simulator's bound.
func migBruteForceOptimum(t *testing.T, pods []migPod, cat *catalog.Catalog, typ string) float64 {
	t.Helper()
	var it *catalog.InstanceType
	for i := range cat.Types {
		if string(cat.Types[i].Name) == typ {
			it = &cat.Types[i]
		}
	}
	tab, err := mig.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := tab.Model(it.GPU.Model)
	if it == nil || !ok {
		t.Fatalf("%s: no MIG model", typ)
	}
	// caps is the most slices of each profile any block may ask: the whole demand.
	var caps [3]int
	for _, p := range pods {
		caps[p.profile] += p.slices
	}
	var perGPU [][3]int
	for _, l := range m.Layouts() {
		var c [3]int
		for _, p := range l.Profiles {
			for k, q := range migProfiles {
				if p == q {
					c[k]++
				}
			}
		}
		perGPU = append(perGPU, c)
	}
	// reach is every slice count (capped at caps) one node's GPUs may give together.
	reach := map[[3]int]bool{{}: true}
	for range it.GPU.Count {
		next := map[[3]int]bool{}
		for a := range reach {
			for _, b := range perGPU {
				var s [3]int
				for k := range s {
					s[k] = min(a[k]+b[k], caps[k])
				}
				next[s] = true
			}
		}
		reach = next
	}
	cpu, mem, maxPods := catalog.Allocatable(cat.Provider, it)
	price := math.Inf(1)
	for _, o := range it.Offerings {
		if !o.Unavailable {
			price = min(price, o.PricePerHour)
		}
	}
	return minOverPartitions(len(pods), func(block []int) float64 {
		var c, mm int64
		var need [3]int
		for _, i := range block {
			c += pods[i].cpu
			mm += pods[i].mem
			need[pods[i].profile] += pods[i].slices
		}
		if c > cpu || mm > mem || len(block) > maxPods {
			return math.Inf(1)
		}
		for r := range reach {
			if r[0] >= need[0] && r[1] >= need[1] && r[2] >= need[2] {
				return price
			}
		}
		return math.Inf(1)
	})
}

// TestMIGBoundNeverAboveOptimum: on small random instances of pods asking device-plugin MIG
// slices of three profiles (several per pod, so that they need one to three p4d.24xlarge nodes),
// the resource bound (whose integer cover pairs the profiles' slices) and the configuration LP
// (whose node patterns may use any layout per GPU) never exceed the exact optimum of a brute
// force over nodes of any MIG layout, the plan's bound never exceeds the plan, and on
// three pods of six 3g.20gb slices each (18 slices, 16 to a node) the bound is the two nodes
// they need, which the integer cover over MIG slices gives and the fractional LPs did not (1.5
// nodes).
func TestMIGBoundNeverAboveOptimum(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{{
		Name: "pool", InstanceTypes: []api.InstanceTypeName{"p4d.24xlarge"}, GPU: &policy.GPUPolicy{Sharing: api.MIG, MIGStrategy: "mixed"}}}}
	bounds := func(pods []migPod) (plan *api.Plan, res, conf float64) {
		snap := &snapshot.Snapshot{}
		for i, p := range pods {
			snap.Pods = append(snap.Pods, simtest.Pod(fmt.Sprintf("p%d", i)).CPU(fmt.Sprintf("%dm", p.cpu)).Mem(fmt.Sprint(p.mem)).
				Req(mig.ResourceName(migProfiles[p.profile]), fmt.Sprint(p.slices)).Obj())
		}
		return planAndBounds(t, simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	}
	maxSlices := []int{14, 8, 6}
	r := rand.New(rand.NewPCG(3, 17))
	cases := 60
	if testing.Short() {
		cases = 20
	}
	var ratios, confRatios []float64
	for c := 0; c < cases; c++ {
		pods := make([]migPod, 3+r.IntN(5)) // 3–7 pods
		for i := range pods {
			k := r.IntN(3)
			pods[i] = migPod{cpu: int64(500 * (1 + r.IntN(16))), mem: int64(1+r.IntN(64)) << 30, profile: k, slices: 1 + r.IntN(maxSlices[k])}
		}
		opt := migBruteForceOptimum(t, pods, cat, "p4d.24xlarge")
		plan, res, conf := bounds(pods)
		if len(plan.Unschedulable) > 0 || math.IsInf(opt, 1) {
			t.Fatalf("case %d: unschedulable (plan %+v, brute force %v)", c, plan.Unschedulable, opt)
		}
		if plan.CostPerHour < opt-1e-6 {
			t.Fatalf("case %d: plan $%.4f below the exact optimum $%.4f: the brute force is wrong", c, plan.CostPerHour, opt)
		}
		if res > opt+1e-6 {
			t.Fatalf("case %d: the resource bound $%.4f is above the exact optimum $%.4f (pods %+v)", c, res, opt, pods)
		}
		if plan.LowerBoundPerHour > plan.CostPerHour+1e-6 {
			t.Fatalf("case %d: the lower bound $%.4f is above the plan's $%.4f", c, plan.LowerBoundPerHour, plan.CostPerHour)
		}
		if conf > opt+1e-6 {
			t.Fatalf("case %d: the configuration LP $%.4f is above the exact optimum $%.4f (pods %+v)", c, conf, opt, pods)
		}
		ratios = append(ratios, res/opt)
		confRatios = append(confRatios, conf/opt)
	}
	t.Logf("resource bound / exact optimum: %s", distribution(ratios))
	t.Logf("configuration LP / exact optimum: %s", distribution(confRatios))

	pods := []migPod{{cpu: 1000, mem: 4 << 30, profile: 2, slices: 6}, {cpu: 1000, mem: 4 << 30, profile: 2, slices: 6}, {cpu: 1000, mem: 4 << 30, profile: 2, slices: 6}}
	opt := migBruteForceOptimum(t, pods, cat, "p4d.24xlarge")
	plan, res, conf := bounds(pods)
	if math.Abs(res-opt) > 1e-6 || math.Abs(plan.LowerBoundPerHour-opt) > 1e-6 || math.Abs(plan.CostPerHour-opt) > 1e-6 {
		t.Errorf("three pods of six 3g.20gb slices: resource bound $%.4f, configuration LP $%.4f, plan's bound $%.4f, plan $%.4f; want the optimum $%.4f (two nodes)",
			res, conf, plan.LowerBoundPerHour, plan.CostPerHour, opt)
	}
}

// planAndBounds plans the input and returns the plan with the input's raw resource and
// configuration bounds.
func planAndBounds(t *testing.T, in simulator.Input) (plan *api.Plan, res, conf float64) {
	t.Helper()
	plan, err := simulator.Simulate(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, res, conf, err = simulator.RawLowerBounds(in); err != nil {
		t.Fatal(err)
	}
	return plan, res, conf
}
