package provisioner_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// writeCounter counts the API writes (POST, PUT, PATCH, DELETE) a client sends, those to the
// launch records apart, and Events apart (the event broadcaster's, which are not the write path).
type writeCounter struct {
	writes, records, pods, events, conflicts atomic.Int64
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			switch p := r.URL.Path; {
			case strings.Contains(p, "/events"):
				w.events.Add(1)
			case strings.Contains(p, "/launchrecords") || strings.Contains(p, "/configmaps/"+provisioner.LegacyRecordsConfigMap) ||
				strings.HasSuffix(p, "/configmaps"):
				w.records.Add(1)
				w.writes.Add(1)
			case strings.Contains(p, "/pods/"):
				w.pods.Add(1)
				w.writes.Add(1)
			default:
				w.writes.Add(1)
			}
		}
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusConflict {
			w.conflicts.Add(1)
		}
		return resp, err
	})
}

func (w *writeCounter) reset() {
	for _, c := range []*atomic.Int64{&w.writes, &w.records, &w.pods, &w.events, &w.conflicts} {
		c.Store(0)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkWritePath measures the controller's write path on the real control plane: one batch
// planning 5,000 pending pods (CPU pods of 2 vCPU, 4 GiB; no nodes yet) onto new nodes, with the
// default configuration (nominations and node reservations on) and the API client sized as `tiler
// run` sizes it (QPS 200, burst 300). It reports the API writes the batch sends per planned pod
// (writes/pod: launch records, pod tolerations and nominations, but not Events), the launch-record
// writes (record_writes) and pod writes (pod_writes) among them, the 409 Conflict answers
// (conflicts), and the batch's wall time (s/op, from the first informer read
// to the last launch call returning). The cloud is in memory: launches succeed at once.
//
// go test ./provisioner/ -run '^$' -bench BenchmarkWritePath -benchtime 1x
func BenchmarkWritePath(b *testing.B) {
	const pending = 5000
	cp := cptest.Start(b, controlplane.Options{})
	setup := rest.CopyConfig(cp.RESTConfig())
	setup.QPS, setup.Burst = 1000, 2000
	kube := kubernetes.NewForConfigOrDie(setup)
	ctx := context.Background()
	installCRDs(b, cp)
	for _, ns := range []string{"tiler-system"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	var wall time.Duration
	var writes, records, pods, events, conflicts int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		createPods(b, kube, ns, pending)
		testwait.Until(b, time.Second, "every pending pod marked unschedulable by the scheduler", 5*time.Minute, func() bool {
			return unschedulable(b, kube, ns) == pending
		})
		counter := &writeCounter{}
		rc := rest.CopyConfig(cp.RESTConfig())
		rc.QPS, rc.Burst = 200, 300
		rc.Wrap(counter.wrap)
		ckube := kubernetes.NewForConfigOrDie(rc)
		cfg := provisioner.DefaultConfig()
		opts := provisioner.Options{Config: cfg, Kube: ckube, Provider: &memCloud{byID: map[string]*cloudprovider.Instance{}},
			Catalog: cat, Clock: clock.RealClock{}, Logger: zap.NewNop(), Metrics: provisioner.NewMetrics(prometheus.NewRegistry())}
		withRecordsClient(&opts, rc)
		ctrl, err := provisioner.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		if err := ctrl.Start(cctx); err != nil {
			b.Fatal(err)
		}
		counter.reset()
		b.StartTimer()
		start := time.Now()
		res, err := ctrl.Reconcile(cctx)
		d := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.Plan == nil || len(res.Plan.Unschedulable) > 0 || plannedPods(res) != pending {
			b.Fatalf("plan: %d pods planned onto new nodes, %d unschedulable; want %d planned", plannedPods(res), len(res.Plan.Unschedulable), pending)
		}
		wall += d
		writes += counter.writes.Load()
		records += counter.records.Load()
		events += counter.events.Load()
		pods += counter.pods.Load()
		conflicts += counter.conflicts.Load()
		cancel()
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		cleanRecords(b, setup)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/op")
	b.ReportMetric(float64(writes)/float64(b.N*pending), "writes/pod")
	b.ReportMetric(float64(records)/float64(b.N), "record_writes")
	b.ReportMetric(float64(events)/float64(b.N), "event_writes")
	b.ReportMetric(float64(pods)/float64(b.N), "pod_writes")
	b.ReportMetric(float64(conflicts)/float64(b.N), "conflicts")
}

// plannedPods counts the pods the batch's plan put on new nodes.
func plannedPods(res *provisioner.Result) int {
	n := 0
	for _, nn := range res.Plan.NewNodes {
		n += len(nn.Pods)
	}
	return n
}

// createPods creates n pending CPU pods in ns, in parallel.
func createPods(b *testing.B, kube kubernetes.Interface, ns string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := simtest.Pod(fmt.Sprintf("pending-%05d", i)).Label("app", fmt.Sprintf("job-%d", i%20)).CPU("2").Mem("4Gi").Obj()
				p.Namespace = ns
				p.Spec.SchedulerName = corev1.DefaultSchedulerName
				if _, err := kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
}

// unschedulable counts the pods of ns the scheduler marked unschedulable.
func unschedulable(b *testing.B, kube kubernetes.Interface, ns string) int {
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				n++
			}
		}
	}
	return n
}
