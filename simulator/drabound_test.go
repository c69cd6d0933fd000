package simulator_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// draBoundSnapshot is a snapshot of the pods, each asking its CPU and memory and, when gpu > 0,
// one ResourceClaim (from a template) for gpu whole GPUs of the NVIDIA driver's GPU DeviceClass,
// or, for a plain pod, gpu plain nvidia.com/gpu, which the DeviceClass then serves as its
// extendedResourceName.
func draBoundSnapshot(pods []boundPod) *snapshot.Snapshot {
	snap := &snapshot.Snapshot{}
	dc := &resourcev1.DeviceClass{}
	dc.Name = "gpu.nvidia.com"
	dc.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}
	snap.DeviceClasses = append(snap.DeviceClasses, dc)
	templates := map[int]bool{}
	for i, p := range pods {
		b := simtest.Pod(fmt.Sprintf("p%d", i)).CPU(fmt.Sprintf("%dm", p.cpu)).Mem(fmt.Sprint(p.mem)).Label("app", p.app)
		if p.plain {
			dc.Spec.ExtendedResourceName = new(string(api.ResourceGPU))
			snap.Pods = append(snap.Pods, b.GPU(p.gpu).Obj())
			continue
		}
		pod := b.Obj()
		if p.gpu > 0 {
			name := fmt.Sprintf("gpu-%d", p.gpu)
			if !templates[p.gpu] {
				templates[p.gpu] = true
				t := &resourcev1.ResourceClaimTemplate{}
				t.Name, t.Namespace = name, "default"
				t.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
					DeviceClassName: "gpu.nvidia.com", Count: int64(p.gpu)}}}
				snap.ResourceClaimTemplates = append(snap.ResourceClaimTemplates, t)
			}
			pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
			pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}
		snap.Pods = append(snap.Pods, pod)
	}
	return snap
}

// TestDRABoundNeverAboveOptimum: on small random instances of pods asking CPU and memory, most
// of them also a DRA claim for one to three whole GPUs (claim groups of several sizes merged into
// one bound group, with CPU-only types the GPU pods cannot use), the resource bound — whose
// integer cover pairs each device row with CPU and with memory — and the configuration LP never
// exceed the exact optimum of the brute force (a claim of k GPUs is k GPU units of its pod's
// node, which is what a node's whole-GPU devices allow), and the plan's bound never exceeds the
// plan. On five one-GPU pods and a pool of g6.12xlarge (four GPUs) the resource bound is the
// two nodes they need, which the integer cover over devices gives and the LP did not (1.25).
func TestDRABoundNeverAboveOptimum(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	bounds := func(pods []boundPod, pool policy.Pool) (plan *api.Plan, res, conf float64) {
		pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{pool}}
		return planAndBounds(t, simulator.Input{Snapshot: draBoundSnapshot(pods), Catalog: cat, Policy: pol})
	}
	families := []string{"g4dn", "g5", "g6", "c7i"}
	pool := policy.Pool{Name: "pool", InstanceFamilies: families}
	r := rand.New(rand.NewPCG(5, 23))
	cases := 40
	if testing.Short() {
		cases = 15
	}
	var ratios []float64
	for c := 0; c < cases; c++ {
		pods := make([]boundPod, 3+r.IntN(5)) // 3–7 pods
		for i := range pods {
			pods[i] = boundPod{cpu: int64(500 * (1 + r.IntN(24))), mem: int64(1+r.IntN(48)) << 30, app: "a"}
			if r.IntN(4) > 0 {
				pods[i].gpu = 1 + r.IntN(3)
			}
		}
		opt := bruteForceOptimum(pods, cat, 1, families...)
		plan, res, conf := bounds(pods, pool)
		if len(plan.Unschedulable) > 0 || math.IsInf(opt, 1) {
			t.Fatalf("case %d: unschedulable (plan %+v, brute force %v)", c, plan.Unschedulable, opt)
		}
		if plan.CostPerHour < opt-1e-6 {
			t.Fatalf("case %d: plan $%.4f below the exact optimum $%.4f: the brute force is wrong", c, plan.CostPerHour, opt)
		}
		if res > opt+1e-6 || conf > opt+1e-6 {
			t.Fatalf("case %d: a bound above the exact optimum $%.4f: resource bound $%.4f, configuration LP $%.4f (pods %+v)", c, opt, res, conf, pods)
		}
		if plan.LowerBoundPerHour > plan.CostPerHour+1e-6 {
			t.Fatalf("case %d: the lower bound $%.4f is above the plan's $%.4f", c, plan.LowerBoundPerHour, plan.CostPerHour)
		}
		ratios = append(ratios, res/opt)
	}
	t.Logf("resource bound / exact optimum: %s", distribution(ratios))

	pods := make([]boundPod, 5)
	for i := range pods {
		pods[i] = boundPod{cpu: 1000, mem: 4 << 30, gpu: 1, app: "a"}
	}
	one := policy.Pool{Name: "pool", InstanceTypes: []api.InstanceTypeName{"g6.12xlarge"}}
	node := math.Inf(1)
	for _, it := range cat.Types {
		for _, o := range it.Offerings {
			if it.Name == "g6.12xlarge" && !o.Unavailable {
				node = min(node, o.PricePerHour)
			}
		}
	}
	plan, res, _ := bounds(pods, one)
	// One node holds four of the five claims' GPUs: two nodes are the optimum, and the plan's.
	if math.Abs(res-2*node) > 1e-6 || math.Abs(plan.CostPerHour-2*node) > 1e-6 {
		t.Errorf("five one-GPU claims on g6.12xlarge: resource bound $%.4f, plan $%.4f; want two nodes, $%.4f",
			res, plan.CostPerHour, 2*node)
	}

	// Plain GPU pods beside the claims, served by the device plugin's nodes or by the DRA
	// driver's through the DeviceClass's extendedResourceName: a node holds its GPUs' worth of
	// both together (a node has one publisher), which the brute force's GPU units say too. The
	// bound counts the plain pods' GPUs in a row with the claims' devices (extDeviceRow).
	for c := 0; c < cases; c++ {
		pods := make([]boundPod, 3+r.IntN(5))
		for i := range pods {
			pods[i] = boundPod{cpu: int64(500 * (1 + r.IntN(24))), mem: int64(1+r.IntN(48)) << 30, app: "a",
				gpu: 1 + r.IntN(3), plain: r.IntN(2) == 0}
		}
		opt := bruteForceOptimum(pods, cat, 1, families...)
		plan, res, conf := bounds(pods, pool)
		if len(plan.Unschedulable) > 0 || plan.CostPerHour < opt-1e-6 {
			t.Fatalf("plain case %d: plan $%.4f (unschedulable %+v), exact optimum $%.4f", c, plan.CostPerHour, plan.Unschedulable, opt)
		}
		if res > opt+1e-6 || conf > opt+1e-6 || plan.LowerBoundPerHour > plan.CostPerHour+1e-6 {
			t.Fatalf("plain case %d: a bound above the exact optimum $%.4f: resource bound $%.4f, configuration LP $%.4f, plan's $%.4f (pods %+v)",
				c, opt, res, conf, plan.LowerBoundPerHour, pods)
		}
	}
	// Four plain one-GPU pods and four one-GPU claims on g6.12xlarge: eight GPUs, two nodes. Left
	// out of the LP, the plain pods' GPUs gave one node.
	mixed := make([]boundPod, 8)
	for i := range mixed {
		mixed[i] = boundPod{cpu: 1000, mem: 4 << 30, gpu: 1, app: "a", plain: i%2 == 0}
	}
	plan, res, _ = bounds(mixed, one)
	if math.Abs(res-2*node) > 1e-6 || math.Abs(plan.CostPerHour-2*node) > 1e-6 {
		t.Errorf("four plain GPU pods and four claims on g6.12xlarge: resource bound $%.4f, plan $%.4f; want two nodes, $%.4f",
			res, plan.CostPerHour, 2*node)
	}
}
