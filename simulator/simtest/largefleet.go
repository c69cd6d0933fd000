package simtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// LargeFleetPolicy is the cost policy of LargeFleet's pools: general CPU nodes, whole-GPU nodes
// and time-sliced GPU nodes (four replicas per GPU), with the default disruption settings.
const LargeFleetPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: general
  instanceFamilies: [m7i, c7i, r7i]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
- name: gpu
  instanceFamilies: [g6, g5]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
- name: shared
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: time-slicing, replicas: 4}
`

// largeShape is one kind of node LargeFleet builds.
type largeShape struct {
	pool     string
	typ      api.InstanceTypeName
	replicas int // time-slicing replicas per GPU (0: whole GPUs or none)
}

var largeShapes = []struct {
	weight int
	shape  largeShape
}{
	{30, largeShape{"general", "m7i.xlarge", 0}}, {20, largeShape{"general", "m7i.2xlarge", 0}},
	{10, largeShape{"general", "c7i.2xlarge", 0}}, {10, largeShape{"general", "r7i.xlarge", 0}},
	{5, largeShape{"general", "m7i.4xlarge", 0}}, {8, largeShape{"gpu", "g6.xlarge", 0}},
	{4, largeShape{"gpu", "g6.2xlarge", 0}}, {3, largeShape{"gpu", "g6.12xlarge", 0}},
	{3, largeShape{"gpu", "g5.xlarge", 0}}, {7, largeShape{"shared", "g6.xlarge", 4}},
}

// LargeFleet builds a running fleet for benchmarks from a seed: n nodes of the embedded
// aws-us-east-1 catalog in LargeFleetPolicy's pools (CPU, whole-GPU and time-sliced GPU shapes,
// three zones, GPU nodes half spot), created at created, and about pods running pods owned by
// ReplicaSets — CPU pods, one-GPU and four-GPU pods, time-sliced replicas, a share of apps with
// hostname anti-affinity (replicas on distinct nodes) — filling 70 % of the nodes to 60–95 % and
// the rest to 5–45 %; one GPU node in ten carries only CPU pods.
func LargeFleet(cat *catalog.Catalog, nodes, pods int, seed uint64, created time.Time) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(seed, 0x1a26ef1ee7))
	s := &snapshot.Snapshot{}
	perNode := max(pods/max(nodes, 1), 1)
	total := 0
	for i := 0; i < nodes; i++ {
		sh := pickShape(r)
		zone := cat.Zones[i%len(cat.Zones)]
		ct := api.OnDemand
		if sh.pool != "general" && r.IntN(2) == 0 {
			ct = api.Spot
		}
		name := fmt.Sprintf("node-%05d", i)
		n := ManagedNode(cat, name, sh.pool, sh.typ, zone, ct, created)
		if sh.pool != "general" {
			n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
		}
		if sh.replicas > 0 {
			n.Labels[api.LabelGPUReplicas] = fmt.Sprint(sh.replicas)
			g := n.Status.Allocatable[api.ResourceGPU]
			n.Status.Allocatable[api.ResourceGPU] = *resource.NewQuantity(g.Value()*int64(sh.replicas), resource.DecimalSI)
		}
		s.Nodes = append(s.Nodes, n)
		fill := 0.05 + 0.4*r.Float64()
		if r.IntN(10) < 7 {
			fill = 0.6 + 0.35*r.Float64()
		}
		s.Pods = append(s.Pods, fillNode(r, n, sh, fill, perNode, i, &total)...)
	}
	return s
}

func pickShape(r *rand.Rand) largeShape {
	x := r.IntN(100)
	for _, s := range largeShapes {
		if x < s.weight {
			return s.shape
		}
		x -= s.weight
	}
	return largeShapes[0].shape
}

// fillNode returns about count pods that fill the node to fill of its CPU and memory (GPU pods
// to fill of its GPUs), never beyond its allocatable. i numbers the node; total counts the pods
// made so far, for names.
func fillNode(r *rand.Rand, n *corev1.Node, sh largeShape, fill float64, count, i int, total *int) []*corev1.Pod {
	freeCPU, freeMem := n.Status.Allocatable.Cpu().MilliValue(), n.Status.Allocatable.Memory().Value()
	cpu, mem := float64(freeCPU)*fill, float64(freeMem)*fill
	gpus := n.Status.Allocatable[api.ResourceGPU]
	gpuPods := int(float64(gpus.Value())*fill + 0.5)
	cpuOnly := sh.pool != "general" && r.IntN(10) == 0
	var out []*corev1.Pod
	for k := 0; k < count; k++ {
		jitter := 0.5 + r.Float64()
		c := min(max(int64(cpu/float64(count)*jitter), 10), freeCPU)
		m := min(max(int64(mem/float64(count)*jitter), 1<<20), freeMem)
		if c < 10 || m < 1<<20 {
			break
		}
		freeCPU, freeMem = freeCPU-c, freeMem-m
		app := fmt.Sprintf("app-%03d", r.IntN(400))
		b := Pod(fmt.Sprintf("pod-%06d", *total)).Label("app", app).CPU(fmt.Sprintf("%dm", c)).Mem(fmt.Sprint(m))
		*total++
		switch {
		case sh.pool != "general" && !cpuOnly && k < gpuPods:
			b.Label("app", fmt.Sprintf("gpu-app-%02d", r.IntN(60))).GPU(1)
		case sh.pool != "general":
			b.Tolerate("nvidia.com/gpu")
		case k == 0 && r.IntN(4) == 0:
			app = fmt.Sprintf("anti-%02d", i%50)
			b.Label("app", app).AntiAffinity(corev1.LabelHostname, app)
		}
		out = append(out, b.Controlled("ReplicaSet", b.p.Labels["app"]).On(n.Name).Obj())
	}
	return out
}
