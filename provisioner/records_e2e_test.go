package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// conflictCounter counts the API server's 409 answers to a client.
type conflictCounter struct{ conflicts, writes atomic.Int64 }

func (c *conflictCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if r.Method != http.MethodGet {
			c.writes.Add(1)
		}
		if err == nil && resp.StatusCode == http.StatusConflict {
			c.conflicts.Add(1)
		}
		return resp, err
	})
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLaunchRecordsOnControlPlane runs the launch records against a real API server: the
// controller refuses to start without the CustomResourceDefinition and names it; the CRD's schema
// keeps every field of a record; concurrent writes of different launches never conflict and lose
// nothing; and the records of the ConfigMap of earlier versions are migrated once, without a
// launch forgotten or bought twice.
func TestLaunchRecordsOnControlPlane(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("CRDMissing", func(t *testing.T) {
		s := newRecordStore(dyn, kube, "tiler-system", zaptest.NewLogger(t))
		err := s.start(ctx)
		if err == nil || !strings.Contains(err.Error(), LaunchRecordsCRD) || !strings.Contains(err.Error(), "not installed") {
			t.Fatalf("start without the CRD: %v, want an error naming %s as not installed", err, LaunchRecordsCRD)
		}
	})
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Run("SchemaKeepsEveryField", func(t *testing.T) {
		s := startStore(t, dyn, kube, "tiler-system")
		want := fullRecord()
		if err := s.Put(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := ListRecords(ctx, dyn, "tiler-system")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%d records, want 1", len(got))
		}
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Errorf("record read back from the API server (-want +got):\n%s", diff)
		}
		// A status change is a patch of that field only.
		want.LaunchAttempts, want.LastError, want.RetryAt = 0, "", time.Time{}
		if err := s.Put(ctx, want); err != nil {
			t.Fatal(err)
		}
		if err := s.SetNodeNames(ctx, map[string]string{want.LaunchID: "ip-10-0-0-2.ec2.internal"}); err != nil {
			t.Fatal(err)
		}
		want.NodeName = "ip-10-0-0-2.ec2.internal"
		readyAt := want.ReadyAt.Add(time.Minute)
		if err := s.SetReadyAt(ctx, want.LaunchID, readyAt); err != nil {
			t.Fatal(err)
		}
		want.ReadyAt = readyAt
		got, _ = ListRecords(ctx, dyn, "tiler-system")
		if len(got) != 1 || !cmp.Equal(want, got[0]) {
			t.Errorf("after the patches: %s", cmp.Diff([]LaunchRecord{want}, got))
		}
		cached, _ := s.List(ctx)
		if !cmp.Equal([]LaunchRecord{want}, cached) {
			t.Errorf("the store's view after its own writes (-want +got):\n%s", cmp.Diff([]LaunchRecord{want}, cached))
		}
		if err := s.Delete(ctx, want.LaunchID); err != nil {
			t.Fatal(err)
		}
		if cached, _ := s.List(ctx); len(cached) != 0 {
			t.Errorf("the store still lists %d records after deleting them", len(cached))
		}
	})
	t.Run("ConcurrentPutsNeverConflict", func(t *testing.T) {
		const n = 200
		counter := &conflictCounter{}
		rc := rest.CopyConfig(cp.RESTConfig())
		rc.QPS, rc.Burst = 500, 1000
		rc.Wrap(counter.wrap)
		s := startStore(t, dynamic.NewForConfigOrDie(rc), kube, "concurrent")
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := LaunchRecord{LaunchID: fmt.Sprintf("tiler-c-%03d", i), NodeName: fmt.Sprintf("tiler-c-%03d", i), Pool: "default",
					PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.1},
					Pods:           []string{fmt.Sprintf("ns/p-%03d", i)}, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
				if err := s.Put(ctx, r); err != nil {
					errs <- err
					return
				}
				r.InstanceID = fmt.Sprintf("i-%03d", i) // the cloud accepted it: a second write of the same launch
				errs <- s.Put(ctx, r)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if c := counter.conflicts.Load(); c != 0 {
			t.Errorf("%d conflicts writing %d different launches, want 0", c, n)
		}
		if w := counter.writes.Load(); w != 2*n {
			t.Errorf("%d writes for %d launches written twice, want %d (a create and a patch each)", w, n, 2*n)
		}
		got, err := ListRecords(ctx, dyn, "concurrent")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%d records on the API server, want %d", len(got), n)
		}
		for i, r := range got {
			if want := fmt.Sprintf("i-%03d", i); r.InstanceID != want {
				t.Errorf("record %s: instance %q, want %q", r.LaunchID, r.InstanceID, want)
			}
		}
		cached, _ := s.List(ctx)
		if !cmp.Equal(got, cached) {
			t.Errorf("the store's view differs from the API server's:\n%s", cmp.Diff(got, cached))
		}
	})
	t.Run("Migration", func(t *testing.T) { testMigration(t, cp, kube, dyn) })
}

// startStore starts a record store in namespace (created if needed).
func startStore(t *testing.T, dyn dynamic.Interface, kube kubernetes.Interface, namespace string) *recordStore {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := newRecordStore(dyn, kube, namespace, zaptest.NewLogger(t))
	if err := s.start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// testMigration: an upgrade finds three launches in flight in the ConfigMap of earlier versions
// (the cloud accepted one, launched one without the record knowing, and never heard of the third)
// and one key that does not parse. Starting migrates the three to LaunchRecords and removes their
// keys; Recover links the second to its instance and relaunches only the third, with its launch
// ID; the next batch plans the first's pending pod onto it and buys nothing. A second start
// migrates nothing again.
func testMigration(t *testing.T, cp *controlplane.ControlPlane, kube kubernetes.Interface, dyn dynamic.Interface) {
	ctx := context.Background()
	const ns = "upgrade"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := simtest.Pod("web-0").Namespace("web").CPU("1").Mem("1Gi").Obj()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Spec.SchedulerName = corev1.DefaultSchedulerName
	if _, err := kube.CoreV1().Pods("web").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the scheduler to mark web/web-0 unschedulable", time.Minute, func() bool {
		p, err := kube.CoreV1().Pods("web").Get(ctx, "web-0", metav1.GetOptions{})
		return err == nil && provisionable(p)
	})
	now := time.Now().UTC().Truncate(time.Second)
	off := api.PricedOffering{Offering: api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.OnDemand}, PricePerHour: 0.1008}
	rec := func(id, instance string, pods ...string) LaunchRecord {
		return LaunchRecord{LaunchID: id, NodeName: id, Pool: "default", PricedOffering: off, Pods: pods, InstanceID: instance, CreatedAt: now.Add(-time.Minute)}
	}
	accepted, unknown, never := rec("tiler-a", "i-a", "web/web-0"), rec("tiler-b", ""), rec("tiler-c", "")
	cloud := newEKSCloud(
		&cloudprovider.Instance{ID: "i-a", LaunchID: "tiler-a", NodeName: "tiler-a", Pool: "default", Offering: off.Offering, State: "pending"},
		&cloudprovider.Instance{ID: "i-b", LaunchID: "tiler-b", NodeName: "tiler-b", Pool: "default", Offering: off.Offering, State: "pending"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: LegacyRecordsConfigMap}, Data: map[string]string{"broken": "{"}}
	for _, r := range []LaunchRecord{accepted, unknown, never} {
		b, _ := json.Marshal(r)
		cm.Data[r.LaunchID] = string(b)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An interrupted earlier migration created tiler-a's object already.
	if obj, err := RecordObject(accepted, ns); err != nil {
		t.Fatal(err)
	} else if _, err := dyn.Resource(LaunchRecordsResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Namespace, cfg.Nominate, cfg.Reserve = ns, false, false
	start := func() *Controller {
		ctrl, err := New(Options{Config: cfg, Kube: kube, Dynamic: dyn, Provider: cloud, Catalog: cat, Clock: clock.RealClock{}, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		if err := ctrl.Start(cctx); err != nil {
			t.Fatal(err)
		}
		return ctrl
	}
	ctrl := start()
	left, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, LegacyRecordsConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"broken": "{"}, left.Data); diff != "" {
		t.Errorf("legacy ConfigMap after the migration (-want +got):\n%s", diff)
	}
	got, err := ListRecords(ctx, dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]LaunchRecord{accepted, unknown, never}, got); diff != "" {
		t.Errorf("migrated records (-want +got):\n%s", diff)
	}
	if err := ctrl.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if creates, deleted := cloud.calls(); creates != 1 || len(deleted) != 0 || cloud.creates[0].LaunchID != "tiler-c" {
		t.Errorf("after Recover: %d creates (%+v), deleted %v; want one, relaunching tiler-c", creates, cloud.creates, deleted)
	}
	res, err := ctrl.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Launched) != 0 || len(res.Deleted) != 0 {
		t.Errorf("the batch after the upgrade launched %v and deleted %v, want nothing (web/web-0 waits on tiler-a)", res.Launched, res.Deleted)
	}
	if creates, _ := cloud.calls(); creates != 1 {
		t.Errorf("%d creates after the batch, want still 1", creates)
	}
	got, _ = ListRecords(ctx, dyn, ns)
	ids := map[string]string{}
	for _, r := range got {
		ids[r.LaunchID] = r.InstanceID
	}
	if ids["tiler-a"] != "i-a" || ids["tiler-b"] != "i-b" || ids["tiler-c"] == "" || len(ids) != 3 {
		t.Errorf("records after Recover: launch → instance %v, want tiler-a→i-a, tiler-b→i-b and tiler-c launched", ids)
	}
	// A restart finds nothing more to migrate; the broken key stays for an operator to read.
	start()
	if got2, _ := ListRecords(ctx, dyn, ns); len(got2) != 3 {
		t.Errorf("%d records after a restart, want 3", len(got2))
	}
}
