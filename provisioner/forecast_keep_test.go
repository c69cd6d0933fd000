package provisioner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// heldPrescaler returns and remembers a fixed set of expected pods.
type heldPrescaler struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (h *heldPrescaler) set(pods ...*corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pods = pods
}

func (h *heldPrescaler) ExpectedPods(context.Context, []*corev1.Pod) ([]*corev1.Pod, error) {
	return h.LastExpectedPods(), nil
}

func (h *heldPrescaler) LastExpectedPods() []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*corev1.Pod, len(h.pods))
	for i, p := range h.pods {
		out[i] = p.DeepCopy()
	}
	return out
}

// nopCloud accepts every deletion; nothing is launched in these tests.
type nopCloud struct{}

func (nopCloud) Name() string { return "nop" }
func (nopCloud) Create(context.Context, cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	return nil, &cloudprovider.QuotaError{}
}
func (nopCloud) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	return nil, &cloudprovider.NotFoundError{ID: id}
}
func (nopCloud) List(context.Context) ([]*cloudprovider.Instance, error) { return nil, nil }
func (nopCloud) Delete(context.Context, string) error                    { return nil }

// TestHousekeepingKeepsNodesForForecast: two managed nodes stand empty. The one the expected pod
// is planned onto is kept for the forecast while the pod is expected, however long it stays so;
// the other is removed after EmptyNodeTTL. Once the forecast falls and the expected pod goes, the
// kept node is removed one EmptyNodeTTL later, like any empty node.
func TestHousekeepingKeepsNodesForForecast(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	alloc := simtest.Resources("cpu", "15890m", "memory", "60Gi", "pods", "110")
	var recs []kruntime.Object
	objs := []kruntime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}}
	for _, name := range []string{"tiler-a", "tiler-b"} {
		objs = append(objs, simtest.Node(name, "m7i.4xlarge", "us-east-1a", alloc))
		rec, err := provisioner.RecordObject(provisioner.LaunchRecord{
			PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.4xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.8},
			LaunchID:       name,
			NodeName:       name,
			Pool:           "default",
			InstanceID:     "i-" + name,
			CreatedAt:      now.Add(-time.Hour),
		}, "tiler-system")
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	kube := fake.NewClientset(objs...)
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := provisioner.DefaultConfig()
	cfg.Nominate = false
	cfg.EmptyNodeTTL = 10 * time.Minute
	held := &heldPrescaler{}
	held.set(simtest.Pod("tiler-expected-web-0").Namespace("web").Label(api.LabelForecastDemand, "web").CPU("4").Mem("8Gi").Obj())
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: provisioner.FakeRecordsClient(recs...), Provider: nopCloud{}, Catalog: cat, Clock: clk,
		Logger: zaptest.NewLogger(t), Metrics: provisioner.NewMetrics(prometheus.NewRegistry()), Prescaler: held})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	reconcile := func() *provisioner.Result {
		t.Helper()
		res, err := ctrl.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := reconcile() // both nodes seen; the expected pod is planned onto one of them
	if res.Plan == nil || len(res.Plan.NewNodes) != 0 {
		t.Fatalf("plan %+v: want the expected pod placed on an existing node", res.Plan)
	}
	keptOn := ""
	for _, n := range res.Plan.ExistingNodes {
		for _, p := range n.Pods {
			if p == "web/tiler-expected-web-0" {
				keptOn = n.Name
			}
		}
	}
	if keptOn == "" {
		t.Fatalf("the expected pod is not planned onto an existing node: %+v", res.Plan)
	}
	other := map[string]string{"tiler-a": "tiler-b", "tiler-b": "tiler-a"}[keptOn]

	clk.Step(11 * time.Minute)
	res = reconcile()
	if len(res.Deleted) != 1 || res.Deleted[0] != other {
		t.Fatalf("after EmptyNodeTTL: deleted %v, want only %s (%s is kept for the forecast)", res.Deleted, other, keptOn)
	}
	for i := 0; i < 3; i++ {
		clk.Step(time.Hour)
		if res = reconcile(); len(res.Deleted) != 0 {
			t.Fatalf("while the pod is expected: deleted %v", res.Deleted)
		}
	}

	held.set() // the forecast fell
	if res = reconcile(); len(res.Deleted) != 0 {
		t.Fatalf("the released node was removed at once: %v; want one EmptyNodeTTL first", res.Deleted)
	}
	clk.Step(11 * time.Minute)
	if res = reconcile(); len(res.Deleted) != 1 || res.Deleted[0] != keptOn {
		t.Fatalf("EmptyNodeTTL after the release: deleted %v, want %s", res.Deleted, keptOn)
	}
}

// TestDecideKeepsPartlyUsedNodesForForecast: both managed nodes hold a pod, so neither is empty,
// and the expected pod fits only in the room left on one of them. That node is kept for the
// forecast — disruption gets it in its Keep — and the other is not.
func TestDecideKeepsPartlyUsedNodesForForecast(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	alloc := simtest.Resources("cpu", "15890m", "memory", "60Gi", "pods", "110")
	s := provisioner.State{Now: now, Catalog: decideCatalog(t)}
	for name, cpu := range map[string]string{"tiler-a": "10", "tiler-b": "14"} {
		s.Nodes = append(s.Nodes, simtest.Node(name, "m7i.4xlarge", "us-east-1a", alloc))
		s.Records = append(s.Records, provisioner.LaunchRecord{
			PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.4xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.8},
			LaunchID:       name, NodeName: name, Pool: "default", InstanceID: "i-" + name, CreatedAt: now.Add(-time.Hour)})
		p := simtest.Pod("run-" + name).Namespace("web").CPU(cpu).Mem("8Gi").Obj()
		p.Spec.NodeName = name
		p.Status.Phase = corev1.PodRunning
		s.Pods = append(s.Pods, p)
	}
	s.LastExpected = []*corev1.Pod{simtest.Pod("tiler-expected-web-0").Namespace("web").Label(api.LabelForecastDemand, "web").CPU("4").Mem("8Gi").Obj()}
	d := provisioner.Decide(s, provisioner.DecideConfig{Config: provisioner.DefaultConfig()}, provisioner.NewMemory())
	if d.KeepErr != nil {
		t.Fatal(d.KeepErr)
	}
	if len(d.KeptForForecast) != 1 || d.KeptForForecast[0] != "tiler-a" {
		t.Errorf("kept for the forecast %v; want [tiler-a], the only node with room for the expected pod, though not empty", d.KeptForForecast)
	}
}
