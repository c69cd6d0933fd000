package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/testwait"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// eksName is the name an EKS node registers under: its EC2 private DNS name, not the planned one.
const eksName = "ip-10-0-1-23.ec2.internal"

// awsProviderID is the spec.providerID of an EKS node (cloudprovider/aws.ProviderID).
func awsProviderID(zone, id string) string { return "aws:///" + zone + "/" + id }

func TestNodeIndexForRecord(t *testing.T) {
	node := func(name, providerID string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	x := newNodeIndex([]*corev1.Node{
		node("tiler-a", awsProviderID("us-east-1a", "i-a")),
		node(eksName, awsProviderID("us-east-1a", "i-b")),
		node("ip-10-0-1-24.ec2.internal", awsProviderID("us-east-1a", "i-d")),
		node("tiler-e", ""), // no provider ID yet
	})
	for _, tc := range []struct {
		name     string
		rec      LaunchRecord
		want     string // "" for no Node
		toDelete string
	}{
		{"registered under the planned name", LaunchRecord{NodeName: "tiler-a", InstanceID: "i-a"}, "tiler-a", "tiler-a"},
		{"registered under another name", LaunchRecord{NodeName: "tiler-b", InstanceID: "i-b"}, eksName, eksName},
		{"relinked already", LaunchRecord{NodeName: eksName, InstanceID: "i-b"}, eksName, eksName},
		{"not registered", LaunchRecord{NodeName: "tiler-c", InstanceID: "i-c"}, "", "tiler-c"},
		{"no instance ID yet: by name", LaunchRecord{NodeName: "tiler-a"}, "tiler-a", "tiler-a"},
		// i-c's Node left; EC2 gave its address (so its name) to i-d, whose Node is not i-c's.
		{"name taken by another instance", LaunchRecord{NodeName: "ip-10-0-1-24.ec2.internal", InstanceID: "i-c"}, "", ""},
		{"Node without a provider ID: by name", LaunchRecord{NodeName: "tiler-e", InstanceID: "i-e"}, "tiler-e", "tiler-e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if n := x.forRecord(tc.rec); n != nil {
				got = n.Name
			}
			if got != tc.want {
				t.Errorf("forRecord = %q, want %q", got, tc.want)
			}
			if d := x.nodeToDelete(tc.rec); d != tc.toDelete {
				t.Errorf("nodeToDelete = %q, want %q", d, tc.toDelete)
			}
		})
	}
	recs, moved := x.relink([]LaunchRecord{{LaunchID: "tiler-a", NodeName: "tiler-a", InstanceID: "i-a"},
		{LaunchID: "tiler-b", NodeName: "tiler-b", InstanceID: "i-b"}, {LaunchID: "tiler-c", NodeName: "tiler-c", InstanceID: "i-c"}})
	if diff := cmp.Diff(map[string]string{"tiler-b": eksName}, moved); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	if recs[1].NodeName != eksName || recs[1].LaunchID != "tiler-b" || recs[0].NodeName != "tiler-a" || recs[2].NodeName != "tiler-c" {
		t.Errorf("relinked records %+v", recs)
	}
}

// eksCloud launches like EC2 behind EKS: instances get EC2 IDs, and their Nodes (created by the
// test) register under private DNS names. Launches are idempotent on the launch ID.
type eksCloud struct {
	mu      sync.Mutex
	insts   map[string]*cloudprovider.Instance // by ID
	creates []cloudprovider.LaunchRequest
	deleted []string
}

func newEKSCloud(insts ...*cloudprovider.Instance) *eksCloud {
	c := &eksCloud{insts: map[string]*cloudprovider.Instance{}}
	for _, i := range insts {
		c.insts[i.ID] = i
	}
	return c
}

func (c *eksCloud) Name() string { return "eks" }

func (c *eksCloud) Create(_ context.Context, r cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creates = append(c.creates, r)
	for _, i := range c.insts {
		if i.LaunchID == r.LaunchID {
			return i, nil
		}
	}
	i := &cloudprovider.Instance{ID: fmt.Sprintf("i-%017d", len(c.insts)+1), LaunchID: r.LaunchID, NodeName: r.NodeName,
		Pool: r.Pool, Offering: r.Offering, State: "pending"}
	c.insts[i.ID] = i
	return i, nil
}

func (c *eksCloud) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := c.insts[id]; i != nil {
		return i, nil
	}
	return nil, &cloudprovider.NotFoundError{ID: id}
}

func (c *eksCloud) List(context.Context) ([]*cloudprovider.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*cloudprovider.Instance
	for _, i := range c.insts {
		if i.State != cloudprovider.StateTerminated { // as every provider's List
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

func (c *eksCloud) Delete(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.insts[id] == nil {
		return &cloudprovider.NotFoundError{ID: id}
	}
	delete(c.insts, id)
	c.deleted = append(c.deleted, id)
	return nil
}

func (c *eksCloud) calls() (creates int, deleted []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.creates), append([]string(nil), c.deleted...)
}

// eksEnv is a controller over a fake API server with the eksCloud and a fake clock.
type eksEnv struct {
	t     *testing.T
	kube  kubernetes.Interface
	cloud *eksCloud
	clk   *clocktesting.FakeClock
	ctrl  *Controller
	cfg   Config
	reg   *prometheus.Registry
}

func newEKSEnv(t *testing.T, cfg Config, cloud *eksCloud, objs ...kruntime.Object) *eksEnv {
	t.Helper()
	return newEKSEnvWith(t, Options{Config: cfg}, cloud, objs...)
}

// newEKSEnvWith is newEKSEnv with more options; the env sets Kube, Provider, Catalog, Clock,
// Logger and Metrics.
func newEKSEnvWith(t *testing.T, opts Options, cloud *eksCloud, objs ...kruntime.Object) *eksEnv {
	t.Helper()
	cfg := opts.Config
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}})
	e := &eksEnv{t: t, kube: fake.NewClientset(objs...), cloud: cloud, cfg: cfg, reg: prometheus.NewRegistry(),
		clk: clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))}
	opts.Kube, opts.Dynamic, opts.Provider, opts.Catalog, opts.Clock, opts.Logger, opts.Metrics = e.kube, FakeRecordsClient(), cloud, cat, e.clk, zaptest.NewLogger(t), NewMetrics(e.reg)
	e.ctrl, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *eksEnv) reconcile() *Result {
	e.t.Helper()
	res, err := e.ctrl.Reconcile(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// wait waits until ok holds (the informers caught up), for at most 10 s.
func (e *eksEnv) wait(what string, ok func() bool) {
	e.t.Helper()
	testwait.Until(e.t, testwait.Fast, what, 10*time.Second, ok)
}

// waitNode waits until the controller's informer has the Node as ok wants it (nil: gone).
func (e *eksEnv) waitNode(name, what string, ok func(*corev1.Node) bool) {
	e.t.Helper()
	e.wait(what, func() bool {
		n, err := e.ctrl.factory.Core().V1().Nodes().Lister().Get(name)
		if apierrors.IsNotFound(err) {
			return ok(nil)
		}
		return err == nil && ok(n)
	})
}

// waitPods waits until the controller's informer holds n pods, all bound to node ("" for pending).
func (e *eksEnv) waitPods(n int, node string) {
	e.t.Helper()
	e.wait(fmt.Sprintf("%d pods on %q", n, node), func() bool {
		pods, err := e.ctrl.pods()
		if err != nil || len(pods) != n {
			return false
		}
		for _, p := range pods {
			if p.Spec.NodeName != node {
				return false
			}
		}
		return true
	})
}

// registerEKSNode creates the Node an EKS instance registers: named eksName, with the request's
// labels (hostname its own) and the instance's provider ID.
func (e *eksEnv) registerEKSNode(inst *cloudprovider.Instance, labels map[string]string, alloc corev1.ResourceList, isReady bool) {
	e.t.Helper()
	n := simtest.Node(eksName, string(inst.Offering.InstanceType), inst.Offering.Zone, alloc)
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Labels[corev1.LabelHostname] = eksName
	n.Spec.ProviderID = awsProviderID(inst.Offering.Zone, inst.ID)
	if !isReady {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitNode(eksName, "the EKS node", func(n *corev1.Node) bool { return n != nil })
}

func (e *eksEnv) records() []LaunchRecord {
	e.t.Helper()
	recs, err := e.ctrl.records.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// unschedulablePod is a pending CPU pod the scheduler found no room for.
func unschedulablePod(name string) *corev1.Pod {
	p := simtest.Pod(name).Namespace("web").Label("app", "web").CPU("3").Mem("6Gi").Obj()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

// TestLaunchRegisteredUnderAnotherName: the cloud launches the planned node, whose Node registers
// as eksName with the instance's provider ID, the way an EKS nodeadm node does. The launch record
// is relinked to eksName (its launch ID stays the planned name); the next plan counts the node,
// in flight under eksName while it is not Ready, and buys nothing more; the registration timeout
// does not delete it; the empty-node TTL removes it, instance and Node, once its pod is gone.
func TestLaunchRegisteredUnderAnotherName(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nominate = false
	pod := unschedulablePod("web-0")
	e := newEKSEnv(t, cfg, newEKSCloud(), pod)

	res := e.reconcile()
	if res.Pending != 1 || len(res.Launched) != 1 {
		t.Fatalf("first batch: %d pending, launched %v; want the pod's node", res.Pending, res.Launched)
	}
	planned := res.Plan.NewNodes[0]
	insts, _ := e.cloud.List(context.Background())
	if len(insts) != 1 || insts[0].NodeName != planned.Name {
		t.Fatalf("instances %+v, want one asked for as %s", insts, planned.Name)
	}
	inst := insts[0]
	e.registerEKSNode(inst, e.cloud.creates[0].Labels, planned.Allocatable, false)

	// Registered, not Ready: in flight under its Node's name; the pod is planned there.
	res = e.reconcile()
	if creates, _ := e.cloud.calls(); len(res.Launched) != 0 || creates != 1 {
		t.Fatalf("second batch launched %v (%d creates), want nothing: the node is in flight", res.Launched, creates)
	}
	var existing []string
	for _, n := range res.Plan.ExistingNodes {
		existing = append(existing, n.Name)
	}
	if diff := cmp.Diff([]string{eksName}, existing); diff != "" || len(res.Plan.ExistingNodes[0].Pods) != 1 {
		t.Errorf("second plan's existing nodes %+v, want the pod on %s alone (-want +got):\n%s", res.Plan.ExistingNodes, eksName, diff)
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].NodeName != eksName || recs[0].LaunchID != planned.Name || recs[0].InstanceID != inst.ID {
		t.Fatalf("records %+v, want %s relinked to %s with instance %s", recs, planned.Name, eksName, inst.ID)
	}

	// Ready, the pod bound there, long after the registration timeout: kept.
	n, _ := e.kube.CoreV1().Nodes().Get(context.Background(), eksName, metav1.GetOptions{})
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := e.kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNode(eksName, "the Node Ready", func(n *corev1.Node) bool { return n != nil && snapshot.IsNodeReady(n) })
	bound := pod.DeepCopy()
	bound.Spec.NodeName = eksName
	bound.Status.Conditions = nil
	if _, err := e.kube.CoreV1().Pods("web").Update(context.Background(), bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPods(1, eksName)
	e.clk.Step(cfg.RegistrationTimeout + cfg.EmptyNodeTTL + time.Minute)
	for range 2 {
		if res = e.reconcile(); len(res.Deleted) != 0 {
			t.Fatalf("deleted %v, a Ready node with a pod", res.Deleted)
		}
		e.clk.Step(cfg.EmptyNodeTTL + time.Minute)
	}
	if got := e.gauge("managed_nodes"); got != 1 {
		t.Errorf("managed nodes = %v, want 1", got)
	}

	// The pod is gone: removed one EmptyNodeTTL later, instance and the Node of its own name.
	if err := e.kube.CoreV1().Pods("web").Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPods(0, "")
	if res = e.reconcile(); len(res.Deleted) != 0 {
		t.Fatalf("deleted %v at once, want one EmptyNodeTTL first", res.Deleted)
	}
	e.clk.Step(cfg.EmptyNodeTTL + time.Minute)
	if res = e.reconcile(); len(res.Deleted) != 1 || res.Deleted[0] != eksName {
		t.Fatalf("after EmptyNodeTTL deleted %v, want %s", res.Deleted, eksName)
	}
	if _, deleted := e.cloud.calls(); len(deleted) != 1 || deleted[0] != inst.ID {
		t.Errorf("cloud deletions %v, want %s", deleted, inst.ID)
	}
	if _, err := e.kube.CoreV1().Nodes().Get(context.Background(), eksName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s: %v, want it deleted", eksName, err)
	}
	if recs := e.records(); len(recs) != 0 {
		t.Errorf("records %+v, want none", recs)
	}
}

// gauge returns the value of the controller's gauge family (tiler_provisioner_<name>).
func (e *eksEnv) gauge(name string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tiler_provisioner_"+name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	e.t.Fatalf("no gauge tiler_provisioner_%s", name)
	return 0
}

// recordsConfigMap holds recs in the launch-records ConfigMap of earlier versions in cfg's
// namespace: the controller migrates them when it starts.
func recordsConfigMap(cfg Config, recs ...LaunchRecord) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: LegacyRecordsConfigMap}, Data: map[string]string{}}
	for _, r := range recs {
		b, _ := json.Marshal(r)
		cm.Data[r.LaunchID] = string(b)
	}
	return cm
}

// TestRecoverRelinksNodeUnderAnotherName: after a restart, a record without its instance ID whose
// instance registered as eksName is linked to the instance, then to the Node through its
// provider ID; nothing is relaunched or deleted, and the next batch keeps the node although the
// record is older than the registration timeout.
func TestRecoverRelinksNodeUnderAnotherName(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nominate = false
	created := time.Date(2026, 3, 4, 4, 0, 0, 0, time.UTC) // an hour before the env's clock
	rec := LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.1},
		LaunchID:       "tiler-default-1",
		NodeName:       "tiler-default-1",
		Pool:           "default",
		CreatedAt:      created,
	}
	inst := &cloudprovider.Instance{ID: "i-00000000000000001", LaunchID: rec.LaunchID, NodeName: rec.NodeName, Pool: "default",
		Offering: rec.Offering, State: "running", LaunchedAt: created}
	n := simtest.Node(eksName, "m7i.large", "us-east-1a", simtest.Resources("cpu", "1930m", "memory", "7Gi", "pods", "29"))
	n.Spec.ProviderID = awsProviderID("us-east-1a", inst.ID)
	e := newEKSEnv(t, cfg, newEKSCloud(inst), recordsConfigMap(cfg, rec), n)

	if err := e.ctrl.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := rec
	want.InstanceID, want.NodeName = inst.ID, eksName
	if diff := cmp.Diff([]LaunchRecord{want}, e.records()); diff != "" {
		t.Errorf("records after Recover (-want +got):\n%s", diff)
	}
	if creates, deleted := e.cloud.calls(); creates != 0 || len(deleted) != 0 {
		t.Errorf("Recover made %d creates and deleted %v, want neither", creates, deleted)
	}
	if res := e.reconcile(); len(res.Deleted) != 0 {
		t.Errorf("the first batch deleted %v, want the registered node kept", res.Deleted)
	}
	if got := e.gauge("managed_nodes"); got != 1 {
		t.Errorf("managed nodes = %v, want 1", got)
	}
}

// interruptionsOnce delivers its notices at the first poll.
type interruptionsOnce struct {
	mu      sync.Mutex
	notices []cloudprovider.Interruption
}

func (s *interruptionsOnce) Poll(context.Context) ([]cloudprovider.Interruption, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.notices
	s.notices = nil
	return out, nil
}

// TestInterruptionCordonsNodeUnderAnotherName: a spot interruption of an instance whose Node
// registered as eksName cordons that Node.
func TestInterruptionCordonsNodeUnderAnotherName(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nominate = false
	rec := LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.Spot}, PricePerHour: 0.05},
		LaunchID:       "tiler-default-1",
		NodeName:       "tiler-default-1",
		Pool:           "default",
		InstanceID:     "i-00000000000000001",
		CreatedAt:      time.Date(2026, 3, 4, 4, 0, 0, 0, time.UTC),
	}
	n := simtest.Node(eksName, "m7i.large", "us-east-1a", simtest.Resources("cpu", "1930m", "memory", "7Gi", "pods", "29"))
	n.Spec.ProviderID = awsProviderID("us-east-1a", rec.InstanceID)
	e := newEKSEnvWith(t, Options{Config: cfg, Interruptions: &interruptionsOnce{notices: []cloudprovider.Interruption{
		{InstanceID: rec.InstanceID, Kind: cloudprovider.SpotInterruption}}}}, newEKSCloud(), recordsConfigMap(cfg, rec), n)

	if left := e.ctrl.pollInterruptions(context.Background(), nil); len(left) != 0 {
		t.Fatalf("notices left for the next poll: %+v", left)
	}
	got, err := e.kube.CoreV1().Nodes().Get(context.Background(), eksName, metav1.GetOptions{})
	if err != nil || !got.Spec.Unschedulable {
		t.Errorf("Node %s after the interruption: %v, unschedulable %v; want it cordoned", eksName, err, got.Spec.Unschedulable)
	}
}

// TestNominationFollowsRelinkedNode: a pod planned onto a launch whose Node registered as eksName
// is nominated for eksName once the batch relinked the record.
func TestNominationFollowsRelinkedNode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nominate = true
	pod := unschedulablePod("web-0")
	rec := LaunchRecord{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.2},
		LaunchID:       "tiler-default-1",
		NodeName:       "tiler-default-1",
		Pool:           "default",
		InstanceID:     "i-00000000000000001",
		Pods:           []string{"web/web-0"},
		CreatedAt:      time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC),
	}
	n := simtest.Node(eksName, "m7i.xlarge", "us-east-1a", simtest.Resources("cpu", "3920m", "memory", "14Gi", "pods", "58"))
	n.Spec.ProviderID = awsProviderID("us-east-1a", rec.InstanceID)
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	e := newEKSEnv(t, cfg, newEKSCloud(), recordsConfigMap(cfg, rec), n, pod)

	e.reconcile()
	e.wait("the pod nominated for "+eksName, func() bool {
		p, err := e.kube.CoreV1().Pods("web").Get(context.Background(), pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == eksName
	})
}
