package provisioner_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// memCloud is an in-memory cloud for benchmarks: launches succeed at once and nothing registers.
type memCloud struct {
	mu   sync.Mutex
	byID map[string]*cloudprovider.Instance
}

func (m *memCloud) Name() string { return "mem" }
func (m *memCloud) Create(_ context.Context, r cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := &cloudprovider.Instance{ID: "mem-" + r.LaunchID, LaunchID: r.LaunchID, NodeName: r.NodeName, Offering: r.Offering}
	m.byID[i.ID] = i
	return i, nil
}
func (m *memCloud) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.byID[id]; ok {
		return i, nil
	}
	return nil, &cloudprovider.NotFoundError{ID: id}
}
func (m *memCloud) List(context.Context) ([]*cloudprovider.Instance, error) { return nil, nil }
func (m *memCloud) Delete(context.Context, string) error                    { return nil }

// cluster builds nodes (each m7i.4xlarge, about half full) and pods: bound pods fill the nodes,
// pending pods carry PodScheduled=False/Unschedulable.
func cluster(nodes, bound, pending int) []kruntime.Object {
	objs := []kruntime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for i := 0; i < nodes; i++ {
		n := simtest.Node(fmt.Sprintf("node-%05d", i), "m7i.4xlarge", zones[i%3], simtest.Resources("cpu", "15890m", "memory", "60Gi", "pods", "110"))
		objs = append(objs, n)
	}
	for i := 0; i < bound; i++ {
		p := simtest.Pod(fmt.Sprintf("bound-%06d", i)).Label("app", fmt.Sprintf("svc-%d", i%50)).CPU("100m").Mem("256Mi").
			On(fmt.Sprintf("node-%05d", i%max(nodes, 1))).Obj()
		objs = append(objs, p)
	}
	for i := 0; i < pending; i++ {
		p := simtest.Pod(fmt.Sprintf("pending-%06d", i)).Label("app", fmt.Sprintf("job-%d", i%20)).CPU("2").Mem("4Gi").Obj()
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		objs = append(objs, p)
	}
	return objs
}

func newBenchController(b *testing.B, objs []kruntime.Object) *provisioner.Controller {
	kube := fake.NewClientset(objs...)
	cat, _ := catalog.Embedded("aws-us-east-1")
	cfg := provisioner.DefaultConfig()
	cfg.Nominate = false
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: provisioner.FakeRecordsClient(), Provider: &memCloud{byID: map[string]*cloudprovider.Instance{}},
		Catalog: cat, Clock: clock.RealClock{}, Logger: zap.NewNop(), Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	if err := ctrl.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ctrl
}

// BenchmarkReconcile measures one batch (snapshot from the informers → simulate → launch records
// → launches) at 1,000 and 5,000 pending pods over 500 and 5,000 existing nodes.
func BenchmarkReconcile(b *testing.B) {
	for _, c := range []struct{ pending, nodes int }{{1000, 500}, {1000, 5000}, {5000, 500}, {5000, 5000}} {
		b.Run(fmt.Sprintf("pending=%d/nodes=%d", c.pending, c.nodes), func(b *testing.B) {
			objs := cluster(c.nodes, c.nodes*8, c.pending)
			b.ReportAllocs()
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ctrl := newBenchController(b, objs)
				b.StartTimer()
				start := time.Now()
				res, err := ctrl.Reconcile(context.Background())
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if res.Plan == nil || len(res.Plan.Unschedulable) > 0 {
					b.Fatalf("plan: %+v", res.Plan)
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "batch_s")
		})
	}
}

// BenchmarkControllerMemory loads 5,000 nodes and 50,000 pods into the controller's informers and
// reports the heap the informer caches and the controller add on top of the fake API server's own
// copies (heap after sync minus heap before the controller started).
func BenchmarkControllerMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		objs := cluster(5000, 50000, 0)
		kube := fake.NewClientset(objs...)
		objs = nil
		before := heapMiB()
		cat, _ := catalog.Embedded("aws-us-east-1")
		ctrl, err := provisioner.New(provisioner.Options{Config: provisioner.DefaultConfig(), Kube: kube, Dynamic: provisioner.FakeRecordsClient(),
			Provider: &memCloud{byID: map[string]*cloudprovider.Instance{}}, Catalog: cat, Clock: clock.RealClock{}, Logger: zap.NewNop(),
			Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
		if err != nil {
			b.Fatal(err)
		}
		if err := ctrl.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		after := heapMiB()
		b.ReportMetric(after-before, "controller_heap_MiB")
		b.ReportMetric(after, "process_heap_MiB")
		runtime.KeepAlive(ctrl)
		runtime.KeepAlive(kube)
	}
}

func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}
