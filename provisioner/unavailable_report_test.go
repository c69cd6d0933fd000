package provisioner_test

import (
	"context"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/promtest"
	"github.com/tiler-dev/tiler/internal/testwait"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// plainCloud hides CreateReportingUnavailable: a provider that only has Create.
type plainCloud struct{ cloudprovider.Provider }

// TestLaunchReportedUnavailableOfferings: the cloud launches pod a's node and reports, in the same
// successful answer, that it refused the offering pod b would be planned onto. The next plan puts
// b elsewhere; after UnavailableTTL the offering is back. A provider without the report (control)
// plans b onto the refused offering.
func TestLaunchReportedUnavailableOfferings(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	podA := pendingPod(simtest.Pod("report-a").Label("app", "a").CPU("1").Mem("2Gi").Obj())
	podB := pendingPod(simtest.Pod("report-b").Label("app", "b").CPU("3").Mem("6Gi").Obj())
	// refused is where b alone would go: the cheapest offering for 3 CPU and 6 GiB.
	refused := planned(t, cat, podB)

	for _, tt := range []struct {
		name      string
		reporting bool
	}{{"reporting provider", true}, {"provider without the report", false}} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
			kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}, podA)
			cloud := &fleetCloud{report: []api.Offering{refused}}
			var provider cloudprovider.Provider = cloud
			if !tt.reporting {
				provider = plainCloud{cloud}
			}
			cfg := provisioner.DefaultConfig()
			cfg.Nominate = false
			reg := prometheus.NewRegistry()
			ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: provisioner.FakeRecordsClient(), Provider: provider, Catalog: cat, Clock: clk,
				Logger: zaptest.NewLogger(t), Metrics: provisioner.NewMetrics(reg)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := ctrl.Start(ctx); err != nil {
				t.Fatal(err)
			}

			res := reconcileUntil(t, ctrl, 1)
			if len(res.Launched) != 1 || len(cloud.requests) != 1 {
				t.Fatalf("first batch launched %v (%d requests), want a's node", res.Launched, len(cloud.requests))
			}
			if got := offeringOf(res.Plan.NewNodes[0]); got == refused {
				t.Fatalf("a was planned onto %v, the offering the test refuses; pick other pod shapes", got)
			}

			if _, err := kube.CoreV1().Pods(podB.Namespace).Create(ctx, podB, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			res = reconcileUntil(t, ctrl, 2) // a stays on its in-flight node; b needs a node
			nodeB := nodeOf(t, res.Plan, "default/report-b")
			gauge := unavailableGauge(t, reg)
			if tt.reporting {
				if offeringOf(nodeB) == refused {
					t.Errorf("b was planned onto %v, which the cloud reported refused", refused)
				}
				if gauge != 1 {
					t.Errorf("unavailable offerings = %v, want 1", gauge)
				}
			} else {
				if offeringOf(nodeB) != refused || gauge != 0 {
					t.Errorf("control: b planned onto %v with %v unavailable; want %v and 0", offeringOf(nodeB), gauge, refused)
				}
				return
			}

			// The refusal lasts UnavailableTTL, as an InsufficientCapacityError's would.
			clk.Step(cfg.UnavailableTTL - time.Second)
			reconcileUntil(t, ctrl, 2)
			if gauge := unavailableGauge(t, reg); gauge != 1 {
				t.Errorf("a second before the TTL: unavailable offerings = %v, want 1", gauge)
			}
			clk.Step(time.Second)
			reconcileUntil(t, ctrl, 2)
			if gauge := unavailableGauge(t, reg); gauge != 0 {
				t.Errorf("after the TTL: unavailable offerings = %v, want 0", gauge)
			}
		})
	}
}

// unavailableGauge reads tiler_provisioner_unavailable_offerings, set by each batch that plans.
func unavailableGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	v, _ := promtest.Value(t, reg, "tiler_provisioner_unavailable_offerings")
	return v
}

// pendingPod marks p unschedulable, as the scheduler does before Tiler may buy for it.
func pendingPod(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

// planned is the offering a plan of pod alone on cat buys.
func planned(t *testing.T, cat *catalog.Catalog, pod *corev1.Pod) api.Offering {
	t.Helper()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: []*corev1.Pod{pod}}, Catalog: cat})
	if err != nil || len(plan.NewNodes) != 1 {
		t.Fatalf("plan of %s: %v %+v", pod.Name, err, plan)
	}
	return offeringOf(plan.NewNodes[0])
}

func offeringOf(n api.NewNode) api.Offering {
	return n.Offering
}

// nodeOf returns the new node the plan puts pod on.
func nodeOf(t *testing.T, plan *api.Plan, pod string) api.NewNode {
	t.Helper()
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			if p == pod {
				return n
			}
		}
	}
	t.Fatalf("%s is on no new node of the plan %+v", pod, plan)
	return api.NewNode{}
}

// reconcileUntil runs batches until one sees pending pods (the informers catch up with the
// fake API server asynchronously) and returns it.
func reconcileUntil(t *testing.T, ctrl *provisioner.Controller, pending int) *provisioner.Result {
	t.Helper()
	var res *provisioner.Result
	if err := testwait.Poll(testwait.Fast, 10*time.Second, func() bool {
		var err error
		if res, err = ctrl.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		return res.Pending == pending
	}); err != nil {
		t.Fatalf("no batch saw %d pending pods; last saw %d", pending, res.Pending)
	}
	return res
}
