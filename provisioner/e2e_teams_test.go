package provisioner_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// teamsPolicy: team a (its namespaces selected by label, so through the controller's Namespace
// informer) may hold one GPU and buy from gpu-small (one L4); team b (named) buys from gpu-big
// (four L4), tainted so that only team b's pods land there.
const teamsPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu-small
  instanceTypes: [g6.xlarge]
  capacityTypes: [on-demand]
- name: gpu-big
  instanceTypes: [g6.12xlarge]
  capacityTypes: [on-demand]
  taints: [{key: tiler.dev/team-b, value: "true", effect: NoSchedule}]
teams:
- name: a
  namespaceSelector: {matchLabels: {tiler.dev/team: a}}
  limits: {gpus: 1}
  pools: [gpu-small]
- name: b
  namespaces: [team-b]
  pools: [gpu-big]
`

// TestE2ETeams: on a real control plane with the simulated cloud, team a's second GPU pod, over
// the team's GPU limit (its first is bound), buys nothing and gets a Warning NotTriggerScaleUp
// Event naming TeamLimitExceeded; team b's GPU pod is bought for and bound; and the chargeback
// gauges (tiler_cost_dollars_per_hour) of the run add up to the fleet's $/h to the cent, idle
// included.
func TestE2ETeams(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	e := newEnv(t, cp, testConfig(), nil)
	ctx := context.Background()
	for ns, labels := range map[string]map[string]string{"team-a": {"tiler.dev/team": "a"}, "team-b": nil} {
		if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
			metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	e.applyPolicy("policy", teamsPolicy)

	a0 := simtest.Pod("a-0").Namespace("team-a").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(a0)
	e.waitBound(2*time.Minute, a0)
	if n := e.launches(); n != 1 {
		t.Fatalf("%d launches for team a's first GPU pod, want 1", n)
	}

	a1 := simtest.Pod("a-1").Namespace("team-a").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(a1)
	var ev corev1.Event
	testwait.Until(t, testwait.Slow, "a NotTriggerScaleUp Event on team-a/a-1 naming TeamLimitExceeded", time.Minute, func() bool {
		evs, err := e.kube.CoreV1().Events("team-a").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=a-1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range evs.Items {
			if x.Reason == provisioner.ReasonNotTriggerScaleUp && strings.Contains(x.Message, "("+string(api.TeamLimitExceeded)+")") {
				ev = x
				return true
			}
		}
		return false
	})
	t.Logf("Event: %s %s: %s", ev.Type, ev.Reason, ev.Message)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("Event type %s, want Warning", ev.Type)
	}
	// Two more batches plan a-1 and still buy nothing for it.
	for range 2 {
		e.waitBatch("a batch that finds no place for team-a/a-1", 30*time.Second, func(b batch) bool {
			return unplaced(b, "team-a/a-1") != ""
		})
	}
	if n := e.launches(); n != 1 {
		t.Fatalf("%d launches after team a's pod over its limit, want still 1", n)
	}

	b0 := simtest.Pod("b-0").Namespace("team-b").CPU("1").Mem("2Gi").GPU(1).Tolerate("tiler.dev/team-b").Obj()
	e.create(b0)
	bound := e.waitBound(2*time.Minute, b0)
	if n := e.launches(); n != 2 {
		t.Fatalf("%d launches after team b's GPU pod, want 2", n)
	}
	got, err := e.kube.CoreV1().Pods("team-a").Get(ctx, "a-1", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "" {
		t.Errorf("team-a/a-1 bound to %q (err %v), want pending", got.Spec.NodeName, err)
	}

	// The fleet's $/h, from the cloud's instances and the catalog.
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fleet, big := 0.0, 0.0
	for _, i := range insts {
		p, ok := e.cat.Price(i.Offering)
		if !ok {
			t.Fatalf("instance %s: no catalog price for %+v", i.ID, i.Offering)
		}
		fleet += p
		if i.NodeName == bound["team-b/b-0"] {
			big = p
		}
	}
	if len(insts) != 2 || big == 0 {
		t.Fatalf("instances %+v, want two, one holding b-0", insts)
	}
	// A batch that saw b-0 bound has set the gauges (metrics are set before OnBatch).
	e.waitBatch("a batch that sees team-b/b-0 bound", 30*time.Second, func(b batch) bool { return b.boundPods("team-b", "") == 1 })
	series := provisioner.CostSeries(t, e.reg)
	sum := 0.0
	for k, v := range series {
		t.Logf("tiler_cost_dollars_per_hour{%s} %.4f", k, v)
		sum += v
	}
	t.Logf("fleet $%.4f/h, the chargeback series add up to $%.4f/h", fleet, sum)
	if math.Round(sum*100) != math.Round(fleet*100) {
		t.Errorf("the chargeback series add up to $%.4f/h, the fleet is $%.4f/h", sum, fleet)
	}
	// b-0 takes one of gpu-big's four GPUs; three quarters of it are idle; a-0 takes gpu-small whole.
	for k, want := range map[string]float64{"b/gpu-big/on-demand/false": big / 4, "/gpu-big/on-demand/true": 3 * big / 4,
		"a/gpu-small/on-demand/false": fleet - big} {
		if math.Round(series[k]*100) != math.Round(want*100) {
			t.Errorf("series %s: $%.4f/h, want $%.4f/h", k, series[k], want)
		}
	}
	e.cleanup([]*corev1.Pod{a0, a1, b0})
}

// TestE2EQuota: a GPU pod created before its namespace's ResourceQuota allowed no GPU (admission
// let it in; the quota came after) buys nothing, through the controller's ResourceQuota informer,
// and gets a NotTriggerScaleUp Event naming QuotaExceeded. GPUTriggerDelay holds the pod back
// long enough for the quota to be in place before its first plan.
func TestE2EQuota(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	cfg := testConfig()
	cfg.GPUTriggerDelay = 5 * time.Second
	e := newEnv(t, cp, cfg, nil)
	ctx := context.Background()
	e.namespace("quota")
	q0 := simtest.Pod("q-0").Namespace("quota").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(q0)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-gpu", Namespace: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}}}
	if _, err := e.kube.CoreV1().ResourceQuotas("quota").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ev corev1.Event
	testwait.Until(t, testwait.Slow, "a NotTriggerScaleUp Event on quota/q-0 naming QuotaExceeded", time.Minute, func() bool {
		evs, err := e.kube.CoreV1().Events("quota").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=q-0"})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range evs.Items {
			if x.Reason == provisioner.ReasonNotTriggerScaleUp && strings.Contains(x.Message, "("+string(api.QuotaExceeded)+")") {
				ev = x
				return true
			}
		}
		return false
	})
	t.Logf("Event: %s %s: %s", ev.Type, ev.Reason, ev.Message)
	e.waitBatch("another batch that finds no place for quota/q-0", 30*time.Second, func(b batch) bool {
		return unplaced(b, "quota/q-0") != ""
	})
	if n := e.launches(); n != 0 {
		t.Fatalf("%d launches for a pod over its namespace's quota, want 0", n)
	}
	e.cleanup([]*corev1.Pod{q0})
}
