package provisioner_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// gcCloud is nopCloud with garbage to collect: it counts the calls.
type gcCloud struct {
	nopCloud
	calls chan struct{}
}

func (g gcCloud) CollectGarbage(context.Context) ([]string, error) {
	g.calls <- struct{}{}
	return []string{"tiler-web-0123456789abcdef"}, nil
}

// TestRunCollectsGarbage: Run asks a provider that has garbage to collect at once and then every
// GarbageCollectPeriod.
func TestRunCollectsGarbage(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tiler-system"}})
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := provisioner.DefaultConfig()
	cfg.GarbageCollectPeriod = time.Hour
	cloud := gcCloud{calls: make(chan struct{}, 10)}
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: provisioner.FakeRecordsClient(), Provider: cloud, Catalog: cat, Clock: clk,
		Logger: zaptest.NewLogger(t), Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ctrl.Run(ctx) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-cloud.calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("no CollectGarbage call %s", what)
		}
	}
	wait("when Run starts")
	for i := 0; i < 2; i++ {
		// Step an hour at a time until the hourly ticker has fired and Run has seen it: Run may
		// hold a batch open on the fake clock (an informer event poked it) when the first tick
		// comes, and then needs the clock to move on to close it.
		testwait.Until(t, testwait.Fast, "a CollectGarbage call after an hour", 10*time.Second, func() bool {
			if len(cloud.calls) > 0 {
				return true
			}
			clk.Step(time.Hour)
			return false
		})
		wait("after an hour")
	}
}
