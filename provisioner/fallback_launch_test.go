package provisioner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// fleetCloud answers like an EC2 instant fleet: it launches the first offering of the request,
// its own or a fallback, whose instance type is not refuseType, and reports the refused ones it
// passed — plus, once, the offerings in report (as a fleet that launched one pool and refused
// others in the same answer). It records every request.
type fleetCloud struct {
	mu         sync.Mutex
	refuseType api.InstanceTypeName
	report     []api.Offering
	requests   []cloudprovider.LaunchRequest
	// takeReservations launches a request that names a capacity reservation into it; without it,
	// every launch is on open capacity (the reservation full, as EC2 can answer).
	takeReservations bool
}

var _ cloudprovider.UnavailableReporter = (*fleetCloud)(nil)

func (c *fleetCloud) Name() string { return "fleet" }

func (c *fleetCloud) Create(ctx context.Context, r cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	inst, _, err := c.CreateReportingUnavailable(ctx, r)
	return inst, err
}

func (c *fleetCloud) CreateReportingUnavailable(_ context.Context, r cloudprovider.LaunchRequest) (*cloudprovider.Instance, []api.Offering, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
	refused := c.report
	c.report = nil
	for _, o := range append([]api.Offering{r.Offering}, r.Fallbacks...) {
		if o.InstanceType == c.refuseType {
			refused = append(refused, o)
			continue
		}
		inst := &cloudprovider.Instance{ID: "i-" + r.LaunchID, LaunchID: r.LaunchID, NodeName: r.NodeName, Pool: r.Pool,
			Offering: o, State: "pending"}
		if c.takeReservations && o == r.Offering {
			inst.CapacityReservation = r.CapacityReservation
		}
		return inst, cloudprovider.SortOfferings(refused), nil
	}
	return nil, refused, &cloudprovider.InsufficientCapacityError{Offerings: refused, Code: "InsufficientInstanceCapacity"}
}

func (c *fleetCloud) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	return nil, &cloudprovider.NotFoundError{ID: id}
}
func (c *fleetCloud) List(context.Context) ([]*cloudprovider.Instance, error) { return nil, nil }
func (c *fleetCloud) Delete(context.Context, string) error                    { return nil }

// TestLaunchFallbackRecordsWhatWasBought: the cloud refuses every offering of the planned
// instance type and launches the first fallback of another type. The request carries the plan's
// fallbacks, each with the labels of a node of that offering; the launch record then names the
// fallback's type, zone, capacity type, price and labels; and the next batch counts that node as
// in flight, planning the still-pending pod onto it instead of launching again.
func TestLaunchFallbackRecordsWhatWasBought(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pod := pendingPod(simtest.Pod("fallback-a").Label("app", "fb").CPU("3").Mem("6Gi").Obj())
	first := planned(t, cat, pod)
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}, pod)
	cloud := &fleetCloud{refuseType: first.InstanceType}
	cfg := provisioner.DefaultConfig()
	cfg.Nominate = false
	reg := prometheus.NewRegistry()
	dyn := provisioner.FakeRecordsClient()
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: dyn, Provider: cloud, Catalog: cat, Clock: clk,
		Logger: zaptest.NewLogger(t), Metrics: provisioner.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	res := reconcileUntil(t, ctrl, 1)
	if len(res.Launched) != 1 || len(cloud.requests) != 1 {
		t.Fatalf("launched %v with %d requests, want one node and one request", res.Launched, len(cloud.requests))
	}
	node := res.Plan.NewNodes[0]
	req := cloud.requests[0]
	var want []api.Offering
	for _, f := range node.Fallbacks {
		want = append(want, f.Offering)
	}
	if len(want) == 0 {
		t.Fatalf("the plan's node (%v) has no fallbacks", first)
	}
	if diff := cmp.Diff(want, req.Fallbacks); diff != "" {
		t.Errorf("request fallbacks (-plan +request):\n%s", diff)
	}
	for _, f := range req.Fallbacks {
		l := req.LabelsFor(f)
		if l[corev1.LabelInstanceTypeStable] != string(f.InstanceType) || l[corev1.LabelTopologyZone] != f.Zone ||
			l[api.LabelCapacityType] != string(f.CapacityType) || l[corev1.LabelHostname] != node.Name {
			t.Errorf("labels of fallback %v: %v", f, l)
		}
	}

	// The first fallback of another type is what the cloud launched.
	var bought api.PricedOffering
	for _, f := range node.Fallbacks {
		if f.InstanceType != first.InstanceType {
			bought = f
			break
		}
	}
	if bought.InstanceType == "" {
		t.Fatalf("every fallback is of the refused type %s: %+v", first.InstanceType, node.Fallbacks)
	}
	rec := launchRecord(t, dyn, cfg.Namespace, node.Name)
	if rec.InstanceType != bought.InstanceType || rec.Zone != bought.Zone || rec.CapacityType != bought.CapacityType ||
		rec.PricePerHour != bought.PricePerHour || rec.InstanceID != "i-"+node.Name {
		t.Errorf("record %s %s %s $%v %s, want the launched %+v and instance i-%s", rec.InstanceType, rec.Zone, rec.CapacityType,
			rec.PricePerHour, rec.InstanceID, bought, node.Name)
	}
	wantLabels, _ := simulator.OfferingLabels(cat, bought.InstanceType, bought.Zone, bought.CapacityType)
	for k, v := range wantLabels {
		if rec.Labels[k] != v {
			t.Errorf("record label %s = %q, want %q (the launched offering's)", k, rec.Labels[k], v)
		}
	}
	if rec.Labels[api.LabelPool] != node.Pool || rec.Labels[corev1.LabelHostname] != node.Name {
		t.Errorf("record lost the pool or hostname label: %v", rec.Labels)
	}
	if gauge := unavailableGauge(t, reg); gauge != 0 {
		t.Errorf("unavailable offerings after the first batch = %v, want 0 until a batch plans", gauge)
	}

	// The pod is still pending (the node has not registered): the next batch plans it onto the
	// in-flight node, with the type that was bought, and launches nothing.
	res = reconcileUntil(t, ctrl, 1)
	if len(res.Launched) != 0 || len(cloud.requests) != 1 {
		t.Errorf("second batch launched %v (%d requests), want nothing", res.Launched, len(cloud.requests))
	}
	if len(res.Plan.ExistingNodes) != 1 || res.Plan.ExistingNodes[0].Name != node.Name {
		t.Errorf("second plan's existing nodes %+v, want the in-flight %s", res.Plan.ExistingNodes, node.Name)
	}
	// The offerings the cloud refused before the one it launched (all of the planned type) are
	// kept out of plans.
	refused := 0
	for _, o := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		if o.InstanceType != first.InstanceType {
			break
		}
		refused++
	}
	if gauge := unavailableGauge(t, reg); int(gauge) != refused {
		t.Errorf("unavailable offerings = %v, want the %d refused", gauge, refused)
	}
}

// launchRecord reads the launch record of a node.
func launchRecord(t *testing.T, dyn dynamic.Interface, namespace, node string) provisioner.LaunchRecord {
	t.Helper()
	recs, err := provisioner.ListRecords(context.Background(), dyn, namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.NodeName == node {
			return r
		}
	}
	t.Fatalf("no launch record of %s in %+v", node, recs)
	return provisioner.LaunchRecord{}
}

// TestLaunchReservationFullRecordsOpenCapacity: the plan puts the pod on a $0 capacity
// reservation. When the cloud launches it into the reservation, the record keeps the reservation
// and its price; when the reservation is full and the cloud launches on open capacity, the record
// drops the reservation and its label and takes the open (list) price, so that the fleet's cost
// is what is paid.
func TestLaunchReservationFullRecordsOpenCapacity(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	const pol = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: default
  instanceTypes: [m7i.xlarge]
  capacityTypes: [on-demand]
  reservations:
  - {id: cr-0full, instanceType: m7i.xlarge, zone: us-east-1a, count: 1, pricePerHour: 0}
`
	list, ok := cat.Price(api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand})
	if !ok || list <= 0 {
		t.Fatalf("no list price of m7i.xlarge in us-east-1a: %v", list)
	}
	for _, takes := range []bool{true, false} {
		pod := pendingPod(simtest.Pod("reserved-a").Label("app", "r").CPU("3").Mem("6Gi").Obj())
		kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}, pod,
			prescaletest.PolicyConfigMap("cost-policy", pol))
		cloud := &fleetCloud{takeReservations: takes}
		cfg := provisioner.DefaultConfig()
		cfg.Nominate = false
		dyn := provisioner.FakeRecordsClient()
		ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: dyn, Provider: cloud, Catalog: cat,
			Clock:  clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)),
			Logger: zaptest.NewLogger(t), Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
		if err != nil {
			t.Fatal(err)
		}
		if err := ctrl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		res := reconcileUntil(t, ctrl, 1)
		if len(res.Launched) != 1 || len(cloud.requests) != 1 || cloud.requests[0].CapacityReservation != "cr-0full" {
			t.Fatalf("launched %v, requests %+v; want one launch into cr-0full", res.Launched, cloud.requests)
		}
		rec := launchRecord(t, dyn, cfg.Namespace, res.Plan.NewNodes[0].Name)
		switch {
		case takes && (rec.CapacityReservation != "cr-0full" || rec.PricePerHour != 0 || rec.Labels[api.LabelCapacityReservation] != "cr-0full"):
			t.Errorf("launched into the reservation: record reservation %q, $%v/h, label %q; want cr-0full at $0",
				rec.CapacityReservation, rec.PricePerHour, rec.Labels[api.LabelCapacityReservation])
		case !takes && (rec.CapacityReservation != "" || rec.PricePerHour != list || rec.Labels[api.LabelCapacityReservation] != ""):
			t.Errorf("launched on open capacity: record reservation %q, $%v/h, label %q; want none at the list price $%v/h",
				rec.CapacityReservation, rec.PricePerHour, rec.Labels[api.LabelCapacityReservation], list)
		}
	}
}
