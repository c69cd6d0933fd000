package simulator_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"

	corev1 "k8s.io/api/core/v1"
)

// spotCatalog is the embedded aws-us-east-1 catalog cut to m7i and c7i types, with spot offerings
// added in every zone (the embedded one prices spot for GPU types only): 30 % of on-demand in
// us-east-1a, 32 % in 1b, 34 % in 1c, so spot always wins on price and zones differ.
func spotCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	base, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cat := *base
	cat.Types = nil
	for _, it := range base.Types {
		if f, _, _ := strings.Cut(string(it.Name), "."); f != "m7i" && f != "c7i" {
			continue
		}
		var offs []catalog.ZonePrice
		for _, o := range it.Offerings {
			offs = append(offs, o)
			if o.CapacityType == api.OnDemand {
				share := map[string]float64{"us-east-1a": 0.30, "us-east-1b": 0.32, "us-east-1c": 0.34}[o.Zone]
				offs = append(offs, catalog.ZonePrice{Zone: o.Zone, CapacityType: api.Spot, PricePerHour: o.PricePerHour * share})
			}
		}
		it.Offerings = offs
		cat.Types = append(cat.Types, it)
	}
	if err := cat.Validate(); err != nil {
		t.Fatal(err)
	}
	return &cat
}

func mixPolicy(t *testing.T, pool string) *policy.CostPolicy {
	t.Helper()
	pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n" + pool))
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// webPods are n replicas of Deployment (ReplicaSet) name, each too big to share an m7i.large or
// c7i.large with another (1.5 CPU).
func webPods(name string, n int, annotations ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		b := simtest.Pod(fmt.Sprintf("%s-%d", name, i)).CPU("1500m").Mem("1Gi").Label("app", name).Controlled("ReplicaSet", name)
		for j := 0; j+1 < len(annotations); j += 2 {
			b.Annotate(annotations[j], annotations[j+1])
		}
		out = append(out, b.Obj())
	}
	return out
}

func simulateMix(t *testing.T, cat *catalog.Catalog, pol *policy.CostPolicy, snap *snapshot.Snapshot) *api.Plan {
	t.Helper()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if errs := simtest.Check(snap, plan); len(errs) > 0 {
		t.Fatalf("plan check:\n%s", strings.Join(errs, "\n"))
	}
	if errs := simtest.CheckPurchasing(snap, pol, plan); len(errs) > 0 {
		t.Fatalf("purchasing check:\n%s\nwarnings: %v", strings.Join(errs, "\n"), plan.Warnings)
	}
	return plan
}

func countCT(plan *api.Plan, ct api.CapacityType) int {
	n := 0
	for _, nn := range plan.NewNodes {
		if nn.CapacityType == ct {
			n++
		}
	}
	return n
}

// TestOnDemandBase: onDemandBase 1 and spotAbove 100 buy the pool's first node on-demand and the
// rest spot; an existing on-demand node of the pool is the base already.
func TestOnDemandBase(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, "- name: web\n  instanceTypes: [m7i.large]\n  mix: {onDemandBase: 1, spotAbove: 100}\n")
	snap := &snapshot.Snapshot{Pods: webPods("web", 3)}
	plan := simulateMix(t, cat, pol, snap)
	if len(plan.NewNodes) != 3 || countCT(plan, api.OnDemand) != 1 || countCT(plan, api.Spot) != 2 {
		t.Fatalf("plan buys %v, want 1 on-demand and 2 spot m7i.large", plan.NewNodes)
	}
	// The cost is two spot nodes and the cheapest on-demand one.
	if want := 0.1008 + 2*0.1008*0.30; !near(plan.CostPerHour, want) {
		t.Errorf("cost $%v/h, want $%v/h", plan.CostPerHour, want)
	}

	existing := simtest.ManagedNode(cat, "web-od", "web", "m7i.large", "us-east-1b", api.OnDemand, time.Unix(0, 0))
	snap = &snapshot.Snapshot{Nodes: []*corev1.Node{existing}, Pods: webPods("web", 3)}
	plan = simulateMix(t, cat, pol, snap)
	if countCT(plan, api.OnDemand) != 0 {
		t.Errorf("with an on-demand node in the pool, plan buys %d more on-demand", countCT(plan, api.OnDemand))
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// TestSpotAbove: above the base, at most spotAbove % of the pool's nodes are spot, the rest
// on-demand rounded up.
func TestSpotAbove(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, "- name: web\n  instanceTypes: [m7i.large]\n  mix: {onDemandBase: 1, spotAbove: 60}\n")
	plan := simulateMix(t, cat, pol, &snapshot.Snapshot{Pods: webPods("web", 6)})
	// 1 + ceil(5 × 40 %) = 3 on-demand.
	if countCT(plan, api.OnDemand) != 3 || countCT(plan, api.Spot) != 3 {
		t.Errorf("plan buys %d on-demand and %d spot, want 3 and 3", countCT(plan, api.OnDemand), countCT(plan, api.Spot))
	}
}

// TestMaxSpotShare: a Deployment annotated tiler.dev/max-spot-share 50% keeps at most half its
// replicas on spot; an unannotated one beside it stays all spot; a bad value is InvalidRequest.
func TestMaxSpotShare(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, "- name: web\n  instanceTypes: [m7i.large]\n")
	pods := append(webPods("db", 5, api.AnnotationMaxSpotShare, "50%"), webPods("web", 2)...)
	pods = append(pods, simtest.Pod("bad").CPU("1").Annotate(api.AnnotationMaxSpotShare, "half").Obj())
	snap := &snapshot.Snapshot{Pods: pods}
	plan := simulateMix(t, cat, pol, snap)
	spotOf := map[string]int{}
	for _, nn := range plan.NewNodes {
		for _, p := range nn.Pods {
			if nn.CapacityType == api.Spot {
				spotOf[strings.Split(strings.TrimPrefix(p, "default/"), "-")[0]]++
			}
		}
	}
	if spotOf["db"] != 2 || spotOf["web"] != 2 {
		t.Errorf("spot replicas %v, want db 2 (floor of 5 × 50 %%) and web 2", spotOf)
	}
	i := slices.IndexFunc(plan.Unschedulable, func(u api.UnschedulablePod) bool { return u.Pod == "default/bad" })
	if i < 0 || plan.Unschedulable[i].Code != api.InvalidRequest || !strings.Contains(plan.Unschedulable[i].Reason, api.AnnotationMaxSpotShare) {
		t.Errorf("pod with max-spot-share \"half\": %v", plan.Unschedulable)
	}
}

// TestSpotDiversity: six replicas, one per node (the cheapest spot offering alone would take
// them all), spread over spot offerings so that no type × zone holds more than ceil(6/3) = 2.
func TestSpotDiversity(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, "- name: web\n  instanceTypes: [m7i.large, c7i.large]\n  mix: {spotDiversity: 3}\n")
	plan := simulateMix(t, cat, pol, &snapshot.Snapshot{Pods: webPods("web", 6)})
	per := map[string]int{}
	for _, nn := range plan.NewNodes {
		if nn.CapacityType != api.Spot {
			t.Errorf("node %s is %s: spot offerings were enough", nn.Name, nn.Offering)
		}
		per[string(nn.InstanceType)+"/"+nn.Zone] += len(nn.Pods)
	}
	for k, n := range per {
		if n > 2 {
			t.Errorf("%d replicas on %s, want at most 2 (%v)", n, k, per)
		}
	}
}

// TestReservations: a reservation of two m7i.xlarge at $0 is used first, its count holds (an
// existing node on it counts), and it is priced at its effective price.
func TestReservations(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, `- name: web
  instanceTypes: [m7i.large, m7i.xlarge]
  reservations:
  - {id: cr-0abc, instanceType: m7i.xlarge, zone: us-east-1b, count: 2, pricePerHour: 0}
`)
	plan := simulateMix(t, cat, pol, &snapshot.Snapshot{Pods: webPods("web", 6)})
	var reserved []api.NewNode
	for _, nn := range plan.NewNodes {
		if nn.CapacityReservation != "" {
			reserved = append(reserved, nn)
		}
	}
	if len(reserved) != 2 {
		t.Fatalf("%d nodes on the reservation, want 2: %v", len(reserved), plan.NewNodes)
	}
	for _, nn := range reserved {
		if nn.InstanceType != "m7i.xlarge" || nn.Zone != "us-east-1b" || nn.CapacityType != api.OnDemand || nn.PricePerHour != 0 || len(nn.Pods) != 2 {
			t.Errorf("reserved node %+v", nn)
		}
	}
	// Four replicas on the free reservation, the other two on spot m7i.large.
	if want := 2 * 0.1008 * 0.30; !near(plan.CostPerHour, want) {
		t.Errorf("cost $%v/h, want $%v/h", plan.CostPerHour, want)
	}

	used := simtest.ManagedNode(cat, "web-r", "web", "m7i.xlarge", "us-east-1b", api.OnDemand, time.Unix(0, 0))
	used.Labels[api.LabelCapacityReservation] = "cr-0abc"
	plan = simulateMix(t, cat, pol, &snapshot.Snapshot{Nodes: []*corev1.Node{used}, Pods: webPods("batch", 6)})
	if n := len(plan.NewNodes) - countCT(plan, api.Spot); n != 1 {
		t.Errorf("%d new on-demand nodes with one of the reservation's two taken, want 1: %v", n, plan.NewNodes)
	}

	// A node in flight on the reservation counts against it as well.
	inFlight := simulator.InFlightNode{Name: "web-flight", Pool: "web", PricedOffering: api.PricedOffering{
		Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1b", CapacityType: api.OnDemand}, CapacityReservation: "cr-0abc"}}
	snap := &snapshot.Snapshot{Nodes: []*corev1.Node{used}, Pods: webPods("batch", 6)}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol,
		Options: simulator.Options{InFlight: []simulator.InFlightNode{inFlight}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, nn := range plan.NewNodes {
		if nn.CapacityReservation != "" {
			t.Errorf("new node %s on the reservation, whose two nodes exist or are in flight", nn.Name)
		}
	}
}

// TestReservationWindow: a reservation with a start and an end (a capacity block) is planned
// onto only from its start until its drainBefore: before and after, the pods go to spot.
func TestReservationWindow(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, `- name: web
  instanceTypes: [m7i.large, m7i.xlarge]
  reservations:
  - {id: cr-0block, instanceType: m7i.xlarge, zone: us-east-1b, count: 2, pricePerHour: 0,
     startsAt: "2026-12-07T12:00:00Z", endsAt: "2026-12-08T12:00:00Z", drainBefore: 2h}
`)
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		now  time.Time
		want int
	}{
		{"before its start", start.Add(-time.Minute), 0},
		{"at its start", start, 2},
		{"just before its drain", start.Add(22*time.Hour - time.Second), 2},
		{"draining", start.Add(22 * time.Hour), 0},
		{"ended", start.Add(25 * time.Hour), 0},
	} {
		plan := simulateMix(t, cat, pol, &snapshot.Snapshot{Now: c.now, Pods: webPods("web", 6)})
		reserved := 0
		for _, nn := range plan.NewNodes {
			if nn.CapacityReservation == "cr-0block" {
				reserved++
			}
		}
		if reserved != c.want {
			t.Errorf("%s: %d nodes on the reservation, want %d", c.name, reserved, c.want)
		}
	}
}

// TestCheckPurchasingFails: the checker reports a plan that breaks the mix, the share, the
// diversity or a reservation's count.
func TestCheckPurchasingFails(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, `- name: web
  instanceTypes: [m7i.large, m7i.xlarge]
  mix: {onDemandBase: 1, spotDiversity: 3}
  reservations:
  - {id: cr-0abc, instanceType: m7i.xlarge, zone: us-east-1b, count: 1, pricePerHour: 0}
`)
	snap := &snapshot.Snapshot{Pods: webPods("web", 6, api.AnnotationMaxSpotShare, "50%")}
	plan := simulateMix(t, cat, pol, snap)
	for i := range plan.NewNodes {
		nn := &plan.NewNodes[i]
		nn.CapacityType, nn.InstanceType, nn.Zone, nn.CapacityReservation = api.Spot, "m7i.xlarge", "us-east-1b", "cr-0abc"
	}
	errs := strings.Join(simtest.CheckPurchasing(snap, pol, plan), "\n")
	for _, want := range []string{"pool web: 0 of", "over its max-spot-share 50%", "over ceil(6/3) = 2", "reservation cr-0abc holds", "not m7i.xlarge/us-east-1b/on-demand"} {
		if !strings.Contains(errs, want) {
			t.Errorf("checker misses %q:\n%s", want, errs)
		}
	}
}

// TestMixUnsetUnchanged: without a mix, reservations or annotations, the plan is the cheapest
// fit: every node spot.
func TestMixUnsetUnchanged(t *testing.T) {
	cat := spotCatalog(t)
	pol := mixPolicy(t, "- name: web\n  instanceTypes: [m7i.large]\n")
	plan := simulateMix(t, cat, pol, &snapshot.Snapshot{Pods: webPods("web", 3)})
	if countCT(plan, api.Spot) != 3 {
		t.Errorf("plan %v, want 3 spot nodes", plan.NewNodes)
	}
}

// TestMixProperty: on random deployments (sizes from a tenth of a node to a whole one, some
// annotated with a max-spot-share) under random mixes and reservations, every plan passes the
// plan checker and the purchasing checker, with no warning (nothing here makes a rule
// unattainable), and costs no less than the plan without the mix.
func TestMixProperty(t *testing.T) {
	cat := spotCatalog(t)
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var pods []*corev1.Pod
		for d := range 1 + r.IntN(4) {
			name := fmt.Sprintf("d%d", d)
			cpu := []string{"250m", "500m", "1", "1500m", "3"}[r.IntN(5)]
			for i := range 1 + r.IntN(8) {
				b := simtest.Pod(fmt.Sprintf("%s-%d", name, i)).CPU(cpu).Mem("1Gi").Label("app", name).Controlled("ReplicaSet", name)
				if d == 0 && seed%2 == 0 {
					b.Annotate(api.AnnotationMaxSpotShare, fmt.Sprintf("%d%%", r.IntN(101)))
				}
				pods = append(pods, b.Obj())
			}
		}
		base := "- name: web\n  instanceFamilies: [m7i, c7i]\n"
		mixed := base + fmt.Sprintf("  mix: {onDemandBase: %d, spotAbove: %d, spotDiversity: %d}\n", r.IntN(4), []int{0, 50, 100}[r.IntN(3)], r.IntN(4))
		if n := r.IntN(3); n > 0 {
			mixed += fmt.Sprintf("  reservations:\n  - {id: cr-%d, instanceType: m7i.xlarge, zone: us-east-1b, count: %d, pricePerHour: %g}\n",
				seed, n, []float64{0, 0.05}[r.IntN(2)])
		}
		snap := &snapshot.Snapshot{Pods: pods}
		plan := simulateMix(t, cat, mixPolicy(t, mixed), snap)
		if len(plan.Warnings) > 0 || len(plan.Unschedulable) > 0 {
			t.Errorf("seed %d (%s): warnings %v, unschedulable %v", seed, mixed, plan.Warnings, plan.Unschedulable)
		}
		plain := simulateMix(t, cat, mixPolicy(t, base), snap)
		if !strings.Contains(mixed, "reservations") && plan.CostPerHour < plain.CostPerHour-1e-9 {
			t.Errorf("seed %d: the mix costs $%v/h, less than the plain plan's $%v/h", seed, plan.CostPerHour, plain.CostPerHour)
		}
	}
}
