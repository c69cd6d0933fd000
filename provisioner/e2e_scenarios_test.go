package provisioner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// applyPolicy creates or replaces the cost-policy ConfigMap.
func (e *env) applyPolicy(name, doc string) {
	e.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.cfg.Namespace,
		Labels: map[string]string{"tiler.dev/cost-policy": "true"}}, Data: map[string]string{"policy.yaml": doc}}
	ctx := context.Background()
	if _, err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		if !isAlreadyExists(err) {
			e.t.Fatal(err)
		}
		if _, err := e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

const fourGPUPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: cpu
  instanceTypes: [m7i.2xlarge]
- name: gpu
  instanceTypes: [g6.12xlarge]
  capacityTypes: [on-demand]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
`

// testNoSecondPurchase: a pod that arrives while its planned node boots, and a GPU pod that
// arrives while the node is Ready but has not published its GPUs yet, use the node already bought.
func testNoSecondPurchase(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) {
		c.BootDelay = 4 * time.Second
		c.DeviceDelay = 6 * time.Second
	})
	e.applyPolicy("policy", fourGPUPolicy)
	first := []*corev1.Pod{
		simtest.Pod("boot-a").Label("app", "a").CPU("1").Mem("2Gi").Obj(),
		simtest.Pod("gpu-a").Label("app", "g").CPU("2").Mem("8Gi").GPU(1).Obj(),
	}
	e.create(first...)
	e.waitLaunches(2, 30*time.Second)
	// The CPU node is booting: a second CPU pod that fits it must not buy another.
	second := simtest.Pod("boot-b").Label("app", "a").CPU("1").Mem("2Gi").Obj()
	e.create(second)
	// Wait until the GPU node is Ready but still GPU-less, then add a GPU pod.
	e.waitNode(func(n *corev1.Node) bool {
		_, hasGPU := n.Status.Allocatable["nvidia.com/gpu"]
		return n.Labels["tiler.dev/pool"] == "gpu" && snapshot.IsNodeReady(n) && !hasGPU
	}, 40*time.Second)
	third := simtest.Pod("gpu-b").Label("app", "g").CPU("2").Mem("8Gi").GPU(1).Obj()
	e.create(third)
	e.waitBound(2*time.Minute, append(first, second, third)...)
	if got := e.launches(); got != 2 {
		t.Errorf("%d launches, want 2 (one CPU node, one 4-GPU node)", got)
	}
	e.cleanup(append(first, second, third))
}

// blockingCloud launches through the simulated cloud and then hangs until the controller is
// killed, as if the process died after the cloud accepted the launch.
type blockingCloud struct {
	*sim.Provider
	launched chan struct{}
}

func (b *blockingCloud) Create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	inst, err := b.Provider.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	select {
	case b.launched <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return inst, ctx.Err()
}

// testRestartMidLaunch: the controller dies after the cloud accepted a launch but before it
// recorded the instance; a new controller recovers the launch instead of buying again.
func testRestartMidLaunch(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	e.stop()
	cloud, err := sim.New(e.simCfg, e.kube, clockReal())
	if err != nil {
		t.Fatal(err)
	}
	blocking := &blockingCloud{Provider: cloud, launched: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	ctrl := e.newController(blocking, nil)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = ctrl.Run(ctx)
	}()
	pods := []*corev1.Pod{simtest.Pod("restart-a").Label("app", "r").CPU("2").Mem("4Gi").Obj()}
	e.create(pods...)
	select {
	case <-blocking.launched:
	case <-time.After(60 * time.Second):
		t.Fatal("no launch")
	}
	cancel() // kill the controller mid-launch
	select { // the launch call returns with the context, then Run
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatal("the killed controller did not stop")
	}
	e.start() // a new process: new cloud client on the same inventory, new controller
	e.waitBound(2*time.Minute, pods...)
	if got := e.launches(); got != 1 {
		t.Errorf("%d launches after restart, want 1", got)
	}
	insts, _ := e.cloud.List(context.Background())
	if len(insts) != 1 {
		t.Errorf("%d instances after restart, want 1 (no duplicate, no leak)", len(insts))
	}
	e.cleanup(pods)
}

// testInsufficientCapacity: the cloud refuses every offering of the type the plan prefers. The
// launch falls back, in the same call, to the plan's first fallback of another type: the pod is
// bound after one launch attempt and no failure, on a node labelled as the type launched, and
// the launch record names that type, zone, capacity type and price.
func testInsufficientCapacity(t *testing.T, cp *controlplane.ControlPlane) {
	pod := simtest.Pod("ice-a").Label("app", "ice").CPU("3").Mem("6Gi").Obj()
	first := preferredType(t, pod)
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) {
		c.Faults.InsufficientCapacity = []api.Offering{{InstanceType: first}}
	})
	e.create(pod)
	bound := e.waitBound(2*time.Minute, pod)
	node, err := e.kube.CoreV1().Nodes().Get(context.Background(), bound["default/ice-a"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := node.Labels[corev1.LabelInstanceTypeStable]
	if got == string(first) {
		t.Errorf("pod landed on %s, which the cloud refused", got)
	}
	if n := e.launches(); n != 1 {
		t.Errorf("%d launches, want 1", n)
	}
	if n := collectorSeries(e.metrics.LaunchFailures); n != 0 {
		t.Errorf("%d launch failure series, want none: the fallback launched in the same call", n)
	}
	rec := launchRecord(t, e.dyn, e.cfg.Namespace, node.Name)
	if string(rec.InstanceType) != got || rec.Zone != node.Labels[corev1.LabelTopologyZone] ||
		string(rec.CapacityType) != node.Labels[api.LabelCapacityType] || rec.PricePerHour <= 0 {
		t.Errorf("launch record %s %s %s $%v; the node is %s in %s, %s", rec.InstanceType, rec.Zone, rec.CapacityType,
			rec.PricePerHour, got, node.Labels[corev1.LabelTopologyZone], node.Labels[api.LabelCapacityType])
	}
	if fam := node.Labels[api.LabelInstanceFamily]; !strings.HasPrefix(got, fam+".") {
		t.Errorf("node of type %s is labelled family %s", got, fam)
	}
	e.cleanup([]*corev1.Pod{pod})
}

// collectorSeries is the number of series a collector has.
func collectorSeries(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

// preferredType is the instance type the simulation picks for the pod on the default policy.
func preferredType(t *testing.T, pod *corev1.Pod) simulatorType {
	t.Helper()
	cat, _ := catalogDefault()
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: []*corev1.Pod{pod}}, Catalog: cat})
	if err != nil || len(plan.NewNodes) != 1 {
		t.Fatalf("plan: %v %+v", err, plan)
	}
	return plan.NewNodes[0].InstanceType
}

// testInvalidPolicy: an invalid cost-policy ConfigMap yields a Warning Event naming the field, and
// the last valid policy stays in force.
func testInvalidPolicy(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	e.applyPolicy("policy", `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: compute
  instanceFamilies: [c7i]
`)
	e.waitBatch("a batch to read the valid policy", 30*time.Second, func(b batch) bool {
		p := b.state.Policy
		return p != nil && len(p.Pools) == 1 && p.Pools[0].Name == "compute"
	})
	e.applyPolicy("policy", `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: compute
  instanceFamilies: [c7i]
  capacityTypes: [reserved]
`)
	pod := simtest.Pod("policy-a").Label("app", "p").CPU("1").Mem("1Gi").Obj()
	e.create(pod)
	bound := e.waitBound(2*time.Minute, pod)
	node, _ := e.kube.CoreV1().Nodes().Get(context.Background(), bound["default/policy-a"], metav1.GetOptions{})
	if !strings.HasPrefix(node.Labels[corev1.LabelInstanceTypeStable], "c7i.") {
		t.Errorf("node %s is %s: the last valid policy (c7i only) was not kept", node.Name, node.Labels[corev1.LabelInstanceTypeStable])
	}
	testwait.Until(t, testwait.Slow, "an InvalidCostPolicy event naming capacityTypes[0]", 20*time.Second, func() bool {
		evs, _ := e.kube.CoreV1().Events(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		for _, ev := range evs.Items {
			if ev.Reason == "InvalidCostPolicy" && strings.Contains(ev.Message, "capacityTypes[0]") {
				return true
			}
		}
		return false
	})
	e.cleanup([]*corev1.Pod{pod})
}

// testEmptyNodeRemoved: once its workload is gone, a managed node is deleted after EmptyNodeTTL.
func testEmptyNodeRemoved(t *testing.T, cp *controlplane.ControlPlane) {
	cfg := testConfig()
	cfg.EmptyNodeTTL = 2 * time.Second
	e := newEnv(t, cp, cfg, nil)
	pod := simtest.Pod("empty-a").Label("app", "e").CPU("1").Mem("1Gi").Obj()
	e.create(pod)
	e.waitBound(2*time.Minute, pod)
	zero := int64(0)
	if err := e.kube.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the empty node to be removed", 30*time.Second, func() bool { return len(e.managedNodes()) == 0 })
	// The simulated cloud deletes the Node before it forgets the instance: give the one call that
	// does both the time to end.
	var insts []*cloudprovider.Instance
	if err := testwait.Poll(testwait.Slow, 10*time.Second, func() bool {
		insts, _ = e.cloud.List(context.Background())
		return len(insts) == 0
	}); err != nil {
		t.Errorf("%d instances left", len(insts))
	}
	e.cleanup(nil)
}
