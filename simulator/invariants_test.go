package simulator_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

var invariantCases = flag.Int("invariant-cases", 500, "random simulations TestInvariantsRandom runs (issue 19 asks for 10,000)")

// TestInvariantsRandom runs many small random simulations (simtest.RandomSnapshot under a random
// policy: pool limits on nodes, vCPUs, GPUs and $/h, a budget, and a ResourceQuota on half the
// pending pods' namespace) and checks every plan: the independent checker (simtest.Check) finds
// nothing, no pool's new nodes exceed any of its limits, the new nodes stay within the budget,
// and no quota ends over its hard limit through a pod the plan places. 500 cases by default (about 15 s on a quiet 2-core machine);
// `go test ./simulator/ -run TestInvariantsRandom -invariant-cases 10000` runs issue 19's 10,000.
func TestInvariantsRandom(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	n := *invariantCases
	if testing.Short() {
		n = min(n, 100)
	}
	failed := 0
	seen := map[api.ReasonCode]int{}
	bought := 0
	for seed := uint64(1); seed <= uint64(n) && failed < 10; seed++ {
		plan, errs := checkRandomCase(cat, seed)
		for _, e := range errs {
			t.Errorf("seed %d: %s", seed, e)
		}
		if len(errs) > 0 {
			failed++
		}
		if plan == nil {
			continue
		}
		if len(plan.NewNodes) > 0 {
			bought++
		}
		for _, u := range plan.Unschedulable {
			seen[u.Code]++
		}
	}
	t.Logf("%d cases: %d buy nodes; pods not placed by reason: %v", n, bought, seen)
	// The limits must bind now and then, or the invariants were never at stake.
	if n >= 100 && (bought == 0 || seen[api.LimitExceeded] == 0 || seen[api.QuotaExceeded] == 0) {
		t.Errorf("the random policies never bought or never bound: %d cases buy, reasons %v", bought, seen)
	}
}

func checkRandomCase(cat *catalog.Catalog, seed uint64) (*api.Plan, []string) {
	r := rand.New(rand.NewPCG(seed, 0x19))
	snap := simtest.RandomSnapshot(seed, 2+r.IntN(14))
	pol := policy.Default()
	intp := func(hi int) *int {
		if r.IntN(3) == 0 {
			return nil
		}
		v := r.IntN(hi + 1)
		return &v
	}
	for i := range pol.Pools {
		l := &pol.Pools[i].Limits
		l.MaxNodes, l.MaxVCPU, l.MaxGPUs = intp(5), intp(64), intp(8)
		if r.IntN(3) > 0 {
			v := 4 * r.Float64()
			l.MaxPricePerHour = &v
		}
	}
	if r.IntN(2) == 0 {
		pol.Budget = &policy.Budget{MaxPricePerHour: 0.5 + 8*r.Float64()}
	}
	quota := &corev1.ResourceQuota{}
	quota.Name, quota.Namespace = "q", "qa"
	quota.Spec.Hard = corev1.ResourceList{}
	for name, hi := range map[corev1.ResourceName]int{corev1.ResourceRequestsCPU: 16, corev1.ResourceRequestsMemory: 64, corev1.ResourcePods: 10, "requests." + api.ResourceGPU: 3} {
		if r.IntN(2) == 0 {
			continue
		}
		v := int64(r.IntN(hi + 1))
		if name == corev1.ResourceRequestsMemory {
			quota.Spec.Hard[name] = *resource.NewQuantity(v<<30, resource.BinarySI)
		} else {
			quota.Spec.Hard[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	snap.ResourceQuotas = []*corev1.ResourceQuota{quota}
	for _, p := range snap.Pods {
		if p.Spec.NodeName == "" && r.IntN(2) == 0 {
			p.Namespace = "qa"
		}
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
	if err != nil {
		return nil, []string{err.Error()}
	}
	errs := simtest.Check(snap, plan)
	errs = append(errs, poolAndBudgetViolations(cat, pol, plan)...)
	return plan, append(errs, quotaViolations(snap, plan, quota)...)
}

// poolAndBudgetViolations checks the new nodes against their pools' limits and the budget (the
// random snapshots' existing nodes belong to no pool).
func poolAndBudgetViolations(cat *catalog.Catalog, pol *policy.CostPolicy, plan *api.Plan) []string {
	type use struct {
		nodes, vcpu, gpus int
		price             float64
	}
	uses := map[string]*use{}
	total := 0.0
	for _, n := range plan.NewNodes {
		u := uses[n.Pool]
		if u == nil {
			u = &use{}
			uses[n.Pool] = u
		}
		typ, ok := cat.Type(n.InstanceType)
		if !ok {
			return []string{fmt.Sprintf("new node %s of unknown type %s", n.Name, n.InstanceType)}
		}
		u.nodes++
		u.vcpu += typ.VCPU
		u.gpus += typ.GPU.Count
		u.price += n.PricePerHour
		total += n.PricePerHour
	}
	var errs []string
	for _, p := range pol.Pools {
		u, l := uses[p.Name], p.Limits
		if u == nil {
			continue
		}
		over := func(what string, got, limit float64) {
			if got > limit+1e-9 {
				errs = append(errs, fmt.Sprintf("pool %s: %s %g over its limit %g", p.Name, what, got, limit))
			}
		}
		if l.MaxNodes != nil {
			over("nodes", float64(u.nodes), float64(*l.MaxNodes))
		}
		if l.MaxVCPU != nil {
			over("vCPUs", float64(u.vcpu), float64(*l.MaxVCPU))
		}
		if l.MaxGPUs != nil {
			over("GPUs", float64(u.gpus), float64(*l.MaxGPUs))
		}
		if l.MaxPricePerHour != nil {
			over("$/h", u.price, *l.MaxPricePerHour)
		}
	}
	if pol.Budget != nil && total > pol.Budget.MaxPricePerHour+1e-9 {
		errs = append(errs, fmt.Sprintf("new nodes at $%.4f/h over the budget $%.4f/h", total, pol.Budget.MaxPricePerHour))
	}
	return errs
}

// quotaViolations checks that, counting the namespace's running pods and the pods the plan
// places, no hard limit the plan adds to ends exceeded.
func quotaViolations(snap *snapshot.Snapshot, plan *api.Plan, q *corev1.ResourceQuota) []string {
	placed := map[string]bool{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			placed[p] = true
		}
	}
	for _, n := range plan.ExistingNodes {
		for _, p := range n.Pods {
			placed[p] = true
		}
	}
	used, added := map[corev1.ResourceName]*resource.Quantity{}, map[corev1.ResourceName]bool{}
	for name := range q.Spec.Hard {
		used[name] = resource.NewQuantity(0, resource.DecimalSI)
	}
	for _, p := range snap.Pods {
		key := p.Namespace + "/" + p.Name
		if p.Namespace != q.Namespace || !(snapshot.IsActive(p) || placed[key]) {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		req[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
		for name, u := range used {
			q, ok := req[corev1.ResourceName(strings.TrimPrefix(string(name), "requests."))]
			if !ok || q.IsZero() {
				continue
			}
			u.Add(q)
			if placed[key] {
				added[name] = true
			}
		}
	}
	var errs []string
	for name, u := range used {
		if hard := q.Spec.Hard[name]; added[name] && u.Cmp(hard) > 0 {
			errs = append(errs, fmt.Sprintf("ResourceQuota %s/%s: %s %s over hard %s", q.Namespace, q.Name, name, u, &hard))
		}
	}
	return errs
}
