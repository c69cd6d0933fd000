package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Test timings: boot 30s, devices a further 60s.
const (
	testBootDelay   = 30 * time.Second
	testDeviceDelay = 60 * time.Second
	testCluster     = "test-cluster"
)

// Offerings of the embedded aws-us-east-1 catalog used by the tests.
var (
	l4Spot1a = api.Offering{InstanceType: "g6.xlarge", Zone: "us-east-1a", CapacityType: api.Spot}
	l4OD1b   = api.Offering{InstanceType: "g6.xlarge", Zone: "us-east-1b", CapacityType: api.OnDemand}
	cpuOD1a  = api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.OnDemand}
	a100OD1c = api.Offering{InstanceType: "p4d.24xlarge", Zone: "us-east-1c", CapacityType: api.OnDemand}
)

// gpuTaint is the taint of the tests' GPU pool.
var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// env is a simulated cloud on a fake clock, with its configuration kept for restarts.
type env struct {
	t    *testing.T
	clk  *clocktesting.FakeClock
	kube kubernetes.Interface
	cfg  Config
	p    *Provider
}

// newEnv returns a Provider over kube (the fake clientset when nil) with a fresh state file.
func newEnv(t *testing.T, kube kubernetes.Interface, configure ...func(*Config)) *env {
	t.Helper()
	if kube == nil {
		kube = fake.NewClientset()
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(cat, testCluster, filepath.Join(t.TempDir(), "cloud.json"))
	cfg.BootDelay, cfg.DeviceDelay = testBootDelay, testDeviceDelay
	for _, c := range configure {
		c(&cfg)
	}
	e := &env{t: t, clk: clocktesting.NewFakeClock(t0), kube: kube, cfg: cfg}
	e.p = e.restart()
	return e
}

// restart returns a new Provider on the same state file, as a restarted controller builds.
func (e *env) restart() *Provider {
	e.t.Helper()
	p, err := New(e.cfg, e.kube, e.clk)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return p
}

// step advances the clock by d and runs a Step, failing the test on error.
func (e *env) step(d time.Duration) {
	e.t.Helper()
	e.clk.Step(d)
	if err := e.p.Step(context.Background()); err != nil {
		e.t.Fatalf("Step at +%s: %v", e.clk.Since(t0), err)
	}
}

// create launches req and fails the test on error.
func (e *env) create(req cloudprovider.LaunchRequest) *cloudprovider.Instance {
	e.t.Helper()
	inst, err := e.p.Create(context.Background(), req)
	if err != nil {
		e.t.Fatalf("Create %s: %v", req.LaunchID, err)
	}
	return inst
}

// events reads the event log.
func (e *env) events() []Event {
	e.t.Helper()
	events, err := ReadEvents(e.cfg.StatePath + EventLogSuffix)
	if err != nil {
		e.t.Fatal(err)
	}
	return events
}

// node returns the Node, or nil when it does not exist.
func (e *env) node(name string) *corev1.Node {
	e.t.Helper()
	n, err := e.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n
}

// slicesOf returns the GPU ResourceSlices of the node.
func (e *env) slicesOf(nodeName string) []resourcev1.ResourceSlice {
	e.t.Helper()
	list, err := e.kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []resourcev1.ResourceSlice
	for _, s := range list.Items {
		if s.Spec.NodeName != nil && *s.Spec.NodeName == nodeName {
			out = append(out, s)
		}
	}
	return out
}

// gpuRequest asks for one L4 spot node in us-east-1a in a tainted GPU pool.
func gpuRequest(launchID, nodeName string) cloudprovider.LaunchRequest {
	return cloudprovider.LaunchRequest{
		LaunchID: launchID, NodeName: nodeName, Cluster: testCluster, Pool: "gpu", Offering: l4Spot1a,
		Labels: map[string]string{"team": "ml", corev1.LabelTopologyZone: "us-east-1a"},
		Taints: []corev1.Taint{gpuTaint},
		GPU:    api.GPUConfig{Sharing: "exclusive"},
	}
}

// quantity returns the named resource of the list as an int64, or -1 when absent.
func quantity(l corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := l[name]
	if !ok {
		return -1
	}
	return q.Value()
}
