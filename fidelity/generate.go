package fidelity

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tiler-dev/tiler/api"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// GenOptions tune Generate. The zero value is the default.
type GenOptions struct {
	// DRA adds workloads that get their GPU through a DRA ResourceClaimTemplate (DeviceClass
	// gpu.nvidia.com), and turns some GPU pools into pools only DRA serves well: whole-GPU pools
	// into consumable-memory pools (gpu: {consumableMemory: true}; claims for part of a GPU's
	// memory) and MIG pools into dynamic-MIG pools (gpu: {sharing: dynamic-mig}; claims for a
	// partition of a profile, DeviceClass mig.nvidia.com). Some whole-GPU pools pin who publishes
	// their GPUs (gpu: {driver: device-plugin} or {driver: dra}; unset, the plan chooses per
	// node), and the DeviceClass of some whole-GPU and consumable-memory pools names
	// nvidia.com/gpu as its extendedResourceName, so the DRA driver also serves plain GPU pods.
	// Off by default: the simulator's DRA support is still being integrated.
	DRA bool
	// MaxPods bounds the number of pending pods; default DefaultMaxPods.
	MaxPods int
	// NarrowZones limits the general pool to two zones in 80 % of the scenarios instead of 20 %,
	// while the GPU and batch pools may buy in all three: the shape of the spread-domain bug of
	// seed 123 (spread pods confined to two zones, other pools' nodes opening a third domain).
	NarrowZones bool
	// Soft gives about half the workloads a soft constraint, the same for all its replicas:
	// preferred hostname anti-affinity among them, preferred node affinity to a zone,
	// ScheduleAnyway zone spread, or preferred hostname affinity to an earlier workload (KindSoft).
	// The draws come from a stream of their own, so the rest of a seed's scenario stays as it was.
	Soft bool
}

// DefaultMaxPods is the default bound on the pending pods of a generated scenario.
const DefaultMaxPods = 14

// Priority classes of generated scenarios. Both never preempt: the local control plane has no
// kubelet for the existing nodes, so a preempted pod would stay Terminating for ever; preemption
// has scenarios of its own (GeneratePreemption), whose harness plays that kubelet.
const (
	PriorityHigh = "fidelity-high"
	PriorityLow  = "fidelity-low"
)

// Labels and taints of generated scenarios.
const (
	// LabelApp groups the replicas of one workload; spread and (anti-)affinity select on it.
	LabelApp = "app"
	// LabelWorkload marks the nodes of the tainted "batch" pool (label and taint key).
	LabelWorkload = "workload"
	// LabelDedicated marks tainted existing nodes (label and taint key).
	LabelDedicated = "dedicated"
	// DRAClaimTemplate names the ResourceClaimTemplate of DRA workloads.
	DRAClaimTemplate = "single-gpu"
	// DRADeviceClass is the DeviceClass of the NVIDIA DRA driver's full GPUs.
	DRADeviceClass = "gpu.nvidia.com"
	// DRAMIGDeviceClass is the DeviceClass of the NVIDIA DRA driver's MIG devices.
	DRAMIGDeviceClass = "mig.nvidia.com"
)

// gpuMode is how a generated scenario's GPU pool exposes its GPUs.
type gpuMode int

const (
	gpuNone gpuMode = iota
	gpuExclusive
	gpuTimeSliced
	gpuMIG
	// gpuConsumable (whole GPUs whose memory DRA claims share) and gpuDynamicMIG (MIG partitions
	// DRA claims create) exist only with GenOptions.DRA; they replace some gpuExclusive and gpuMIG
	// scenarios.
	gpuConsumable
	gpuDynamicMIG
)

// Memory sizes that claims on consumable GPU memory request; the smallest GPU of the generated
// pools has 16 GiB (T4).
var draMemorySizes = []string{"2Gi", "4Gi", "6Gi", "10Gi", "12Gi"}

type gen struct {
	r       *rand.Rand
	zoneR   *rand.Rand // NarrowZones' draws, a stream of their own so the rest stays as it was
	softR   *rand.Rand // Soft's draws, likewise
	opts    GenOptions
	cat     *catalog.Catalog
	mode    gpuMode
	rename  bool     // the time-slicing pool renames its replicas nvidia.com/gpu.shared
	batch   bool     // the policy has the tainted batch pool
	cpuPool bool     // the catalog has types without GPUs
	profile []string // MIG profiles of the MIG pool's GPU model
	// migConsumable: the dynamic-MIG pool also publishes its partitions' memory as consumable.
	migConsumable bool
	templates     map[string]bool // claim templates added
	snap          *snapshot.Snapshot
	apps          []string
	pods          int

	// driver pins who publishes the whole-GPU pool's GPUs (gpu.driver: "device-plugin" or
	// "dra"); empty leaves the choice to the plan.
	driver string
	// extended: the GPU DeviceClass serves nvidia.com/gpu as its extendedResourceName.
	extended bool
}

// Generate builds a random but valid scenario from a seed: a catalog, a cost policy with a general
// pool, sometimes a tainted "batch" pool and a GPU pool (whole GPUs, time-sliced or MIG), zero to
// three existing nodes partly filled with bound pods (some tainted), sometimes a DaemonSet, and
// two to five workloads of one to four replicas whose pods mix CPU/memory sizes with node
// selectors, required node affinity, tolerations, zone and hostname spread, pod (anti-)affinity,
// priorities, GPUs (time-sliced replicas sometimes renamed nvidia.com/gpu.shared), MIG slices and
// gangs; with opts.DRA, also DRA claims for whole GPUs, for part of a consumable-memory GPU and
// for dynamic MIG partitions. The same seed and options give the same scenario.
func Generate(seed uint64, opts GenOptions) *Scenario {
	if opts.MaxPods <= 0 {
		opts.MaxPods = DefaultMaxPods
	}
	g := &gen{r: rand.New(rand.NewPCG(seed, 0xf1de1171)), zoneR: rand.New(rand.NewPCG(seed, 0x2011e5)),
		softR: rand.New(rand.NewPCG(seed, 0x50f7)), opts: opts, snap: &snapshot.Snapshot{}}
	g.mode = gpuMode(g.pick([]int{25, 30, 20, 25}))
	// Draws added after the first release come from a stream of their own, so that the scenarios
	// of earlier seeds (the fixed seeds of TestFidelity) stay as they were.
	extra := rand.New(rand.NewPCG(seed, 0x5ec0d))
	g.rename = g.mode == gpuTimeSliced && extra.IntN(100) < 20
	catName := "aws-us-east-1"
	if g.mode == gpuMIG && g.r.IntN(2) == 0 || g.mode == gpuExclusive && g.r.IntN(5) == 0 {
		catName = "gcp-us-central1"
	}
	if opts.DRA {
		g.draPools(rand.New(rand.NewPCG(seed, 0xd7a)))
		g.draPublishers(rand.New(rand.NewPCG(seed, 0xd71e)))
	}
	cat, err := catalog.Embedded(catName)
	if err != nil {
		panic(fmt.Sprintf("fidelity: embedded catalog %s: %v", catName, err)) // the catalogs are compiled in
	}
	g.cat = cat
	for _, it := range cat.Types {
		if it.GPU.Count == 0 {
			g.cpuPool = true
			break
		}
	}
	s := &Scenario{Name: fmt.Sprintf("seed-%d", seed), Seed: seed, Catalog: catName, Snapshot: g.snap}
	s.Policy = g.policy()
	g.priorityClasses()
	g.existingNodes()
	if g.r.IntN(10) < 3 {
		g.daemonSet()
	}
	if g.opts.DRA && (g.mode == gpuExclusive || g.mode == gpuConsumable || g.mode == gpuDynamicMIG) {
		g.draObjects()
	}
	for i := 0; i < 2+g.r.IntN(4) && g.pods < opts.MaxPods; i++ {
		g.workload(i)
	}
	return s
}

// pick returns an index drawn with the given weights.
func (g *gen) pick(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := g.r.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func (g *gen) chance(percent int) bool { return g.r.IntN(100) < percent }

func oneOf[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// policy writes the cost policy YAML.
func (g *gen) policy() string {
	var b strings.Builder
	b.WriteString("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n")
	aws := g.cat.Provider == "aws"
	if g.cpuPool {
		b.WriteString("- name: general\n")
		if g.chance(60) {
			fams := []string{"m7i", "c7i", "r7i", "m6i", "c6i"}
			g.r.Shuffle(len(fams), func(i, j int) { fams[i], fams[j] = fams[j], fams[i] })
			fmt.Fprintf(&b, "  instanceFamilies: [%s]\n", strings.Join(fams[:1+g.r.IntN(3)], ", "))
		}
		narrow, zr := g.chance(20), g.r
		if !narrow && g.opts.NarrowZones && g.zoneR.IntN(100) < 75 { // 20 % + 80 % × 75 % = 80 %
			narrow, zr = true, g.zoneR
		}
		if narrow {
			zones := append([]string(nil), g.cat.Zones...)
			zr.Shuffle(len(zones), func(i, j int) { zones[i], zones[j] = zones[j], zones[i] })
			fmt.Fprintf(&b, "  zones: [%s]\n", strings.Join(zones[:2], ", "))
		}
		b.WriteString("  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]\n")
		if g.chance(30) {
			g.batch = true
			fmt.Fprintf(&b, "- name: batch\n  instanceFamilies: [c7i, m7i]\n  labels: {%s: batch}\n", LabelWorkload)
			fmt.Fprintf(&b, "  taints: [{key: %s, value: batch, effect: NoSchedule}]\n", LabelWorkload)
			b.WriteString("  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]\n")
		}
	}
	if g.mode == gpuNone {
		return b.String()
	}
	b.WriteString("- name: gpu\n")
	switch g.mode {
	case gpuExclusive, gpuConsumable:
		if aws {
			fams := []string{"g6", "g5", "g4dn"}
			fmt.Fprintf(&b, "  instanceFamilies: [%s]\n", strings.Join(fams[:1+g.r.IntN(3)], ", "))
		} else {
			b.WriteString("  instanceFamilies: [g2]\n")
		}
	case gpuTimeSliced:
		fmt.Fprintf(&b, "  instanceFamilies: [%s]\n", oneOf(g, "g6", "g5", "g6, g5"))
	case gpuMIG, gpuDynamicMIG:
		if aws {
			b.WriteString("  instanceTypes: [p4d.24xlarge]\n")
		} else {
			b.WriteString("  instanceTypes: [a2-highgpu-1g, a2-highgpu-2g]\n")
		}
		g.profile = []string{"1g.5gb", "2g.10gb", "3g.20gb"}
	}
	b.WriteString("  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n")
	switch g.mode {
	case gpuTimeSliced:
		rename := ""
		if g.rename {
			rename = ", renameShared: true"
		}
		fmt.Fprintf(&b, "  gpu: {sharing: time-slicing, replicas: %d%s}\n", 2+g.r.IntN(3), rename)
	case gpuExclusive:
		if g.driver != "" {
			fmt.Fprintf(&b, "  gpu: {driver: %s}\n", g.driver)
		}
	case gpuMIG:
		b.WriteString("  gpu: {sharing: mig}\n")
	case gpuConsumable:
		b.WriteString("  gpu: {sharing: exclusive, consumableMemory: true}\n")
	case gpuDynamicMIG:
		if g.migConsumable {
			b.WriteString("  gpu: {sharing: dynamic-mig, consumableMemory: true}\n")
		} else {
			b.WriteString("  gpu: {sharing: dynamic-mig}\n")
		}
	}
	return b.String()
}

func (g *gen) priorityClasses() {
	never := corev1.PreemptNever
	for name, v := range map[string]int32{PriorityHigh: 1000, PriorityLow: 100} {
		pc := &schedulingv1.PriorityClass{Value: v, PreemptionPolicy: &never}
		pc.Name = name
		g.snap.PriorityClasses = append(g.snap.PriorityClasses, pc)
	}
	if g.snap.PriorityClasses[0].Name != PriorityHigh {
		g.snap.PriorityClasses[0], g.snap.PriorityClasses[1] = g.snap.PriorityClasses[1], g.snap.PriorityClasses[0]
	}
}

// existingNodes adds zero to three unmanaged nodes, some tainted, filled to at most about 60 %.
func (g *gen) existingNodes() {
	aws := g.cat.Provider == "aws"
	for i := 0; i < g.r.IntN(4); i++ {
		var it catalog.InstanceType
		if aws {
			name := oneOf(g, "m7i.xlarge", "m7i.2xlarge", "c7i.2xlarge")
			t, _ := g.cat.Type(api.InstanceTypeName(name))
			it = *t
		} else {
			it = catalog.InstanceType{Name: "e2-standard-8", VCPU: 8, MemoryMiB: 32768, Arch: "amd64", MaxPods: 110}
		}
		cpu, mem, pods := catalog.Allocatable(g.cat.Provider, &it)
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		}
		name := fmt.Sprintf("existing-%d", i)
		n := simtest.Node(name, string(it.Name), oneOf(g, g.cat.Zones...), alloc)
		n.Labels[corev1.LabelTopologyRegion] = g.cat.Region
		if g.chance(25) {
			n.Labels[LabelDedicated] = "infra"
			n.Spec.Taints = []corev1.Taint{{Key: LabelDedicated, Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
		}
		g.snap.Nodes = append(g.snap.Nodes, n)
		usedCPU, usedMem := int64(0), int64(0)
		for j := 0; j < g.r.IntN(4); j++ {
			c := int64(250 * (1 + g.r.IntN(8)))
			m := int64(256<<20) * int64(1+g.r.IntN(16))
			if usedCPU+c > cpu*6/10 || usedMem+m > mem*6/10 {
				break
			}
			usedCPU, usedMem = usedCPU+c, usedMem+m
			app := "bound"
			if g.chance(40) {
				app = fmt.Sprintf("a%d", g.r.IntN(4))
			}
			p := simtest.Pod(fmt.Sprintf("bound-%d-%d", i, j)).Namespace(Namespace).Label(LabelApp, app).
				CPU(fmt.Sprintf("%dm", c)).Mem(fmt.Sprintf("%d", m)).On(name)
			if len(n.Spec.Taints) > 0 {
				p.Tolerate(LabelDedicated)
			}
			g.snap.Pods = append(g.snap.Pods, p.Obj())
		}
	}
}

// daemonSet adds a small agent DaemonSet that runs on every untainted node.
func (g *gen) daemonSet() {
	ds := &appsv1.DaemonSet{}
	ds.Name, ds.Namespace = "agent", Namespace
	sel := map[string]string{LabelApp: "agent"}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	ds.Spec.Template.Labels = sel
	ds.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: simtest.Resources("cpu", "100m", "memory", "128Mi")}}}}
	g.snap.DaemonSets = append(g.snap.DaemonSets, ds)
}

// draPools turns, with DRA on, half of the whole-GPU pools into consumable-memory pools and half
// of the MIG pools into dynamic-MIG pools (a quarter of those with consumable memory too). The
// draws come from a stream of their own, so the other draws of a seed stay as they were.
func (g *gen) draPools(r *rand.Rand) {
	switch {
	case g.mode == gpuExclusive && r.IntN(2) == 0:
		g.mode = gpuConsumable
	case g.mode == gpuMIG && r.IntN(2) == 0:
		g.mode = gpuDynamicMIG
		g.migConsumable = r.IntN(4) == 0
	}
}

// draPublishers decides, with DRA on, who publishes a whole-GPU pool's GPUs: unset in 40 % of
// the pools (the plan chooses per node), the device plugin or the DRA driver pinned in 30 % each;
// and whether the GPU DeviceClass of a whole-GPU or consumable-memory pool serves plain
// nvidia.com/gpu pods as its extendedResourceName (half of them). The draws come from a stream of
// their own, so the other draws of a seed stay as they were.
func (g *gen) draPublishers(r *rand.Rand) {
	if g.mode != gpuExclusive && g.mode != gpuConsumable {
		return
	}
	if g.mode == gpuExclusive {
		switch x := r.IntN(10); {
		case x >= 7:
			g.driver = "dra"
		case x >= 4:
			g.driver = "device-plugin"
		}
	}
	g.extended = r.IntN(2) == 0
}

// draObjects adds the NVIDIA DRA driver's GPU DeviceClass (and, for a dynamic-MIG pool, its MIG
// DeviceClass, as in the driver's Helm chart) and, for whole GPUs, a one-GPU claim template.
// Templates for part of a GPU's memory or for a MIG profile are added as workloads use them
// (claimTemplate).
func (g *gen) draObjects() {
	dc := &resourcev1.DeviceClass{}
	dc.Name = DRADeviceClass
	dc.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}
	if g.extended {
		dc.Spec.ExtendedResourceName = ptr.To(string(api.ResourceGPU))
	}
	g.snap.DeviceClasses = append(g.snap.DeviceClasses, dc)
	if g.mode == gpuDynamicMIG {
		mc := &resourcev1.DeviceClass{}
		mc.Name = DRAMIGDeviceClass
		mc.Spec.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}}}
		g.snap.DeviceClasses = append(g.snap.DeviceClasses, mc)
		return
	}
	g.claimTemplate(DRAClaimTemplate, resourcev1.ExactDeviceRequest{DeviceClassName: DRADeviceClass})
}

// memoryTemplate returns the claim template for size of one GPU's consumable memory
// ("gpu-mem-10gi"), adding it on first use.
func (g *gen) memoryTemplate(size string) string {
	name := "gpu-mem-" + strings.ToLower(size)
	return g.claimTemplate(name, resourcev1.ExactDeviceRequest{DeviceClassName: DRADeviceClass,
		Capacity: &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{
			"memory": resource.MustParse(size)}}})
}

// migTemplate returns the claim template for one MIG partition of the profile ("mig-1g5gb"),
// selected by the profile attribute as the simulator's tests do, adding it on first use.
func (g *gen) migTemplate(profile string) string {
	name := "mig-" + strings.ReplaceAll(profile, ".", "")
	return g.claimTemplate(name, resourcev1.ExactDeviceRequest{DeviceClassName: DRAMIGDeviceClass,
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", profile)}}}})
}

// claimTemplate adds a template with one request, "gpu", unless it exists, and returns its name.
func (g *gen) claimTemplate(name string, req resourcev1.ExactDeviceRequest) string {
	if g.templates[name] {
		return name
	}
	if g.templates == nil {
		g.templates = map[string]bool{}
	}
	g.templates[name] = true
	t := &resourcev1.ResourceClaimTemplate{}
	t.Name, t.Namespace = name, Namespace
	t.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &req}}
	g.snap.ResourceClaimTemplates = append(g.snap.ResourceClaimTemplates, t)
	return name
}

// workload adds the replicas of workload i.
func (g *gen) workload(i int) {
	app := fmt.Sprintf("a%d", i)
	replicas := 1 + g.r.IntN(4)
	replicas = min(replicas, g.opts.MaxPods-g.pods)
	base := g.base()
	huge := g.chance(4)
	mods := g.modifiers(i, replicas, base)
	if g.opts.Soft {
		if m := g.softModifier(i, replicas); m != nil {
			mods = append(mods, m)
		}
	}
	gang, topo := "", ""
	if replicas >= 2 && g.chance(12) {
		gang, topo = app, oneOf(g, "", "node", "zone")
	}
	prio := ""
	if g.chance(20) {
		prio = oneOf(g, PriorityHigh, PriorityLow)
	}
	cpu, mem := g.size(base)
	profile, memory := "", ""
	switch base {
	case "mig", "dra-mig":
		profile = oneOf(g, g.profile...)
	case "dra-mem":
		memory = oneOf(g, draMemorySizes...)
	}
	gpus := 1
	if base == "gpu" && g.chance(25) {
		gpus = 2
	}
	for k := 0; k < replicas; k++ {
		b := simtest.Pod(fmt.Sprintf("%s-%d", app, k)).Namespace(Namespace).Label(LabelApp, app).CPU(cpu).Mem(mem)
		if huge {
			b.CPU("200")
		}
		switch {
		case base == "shared" && g.rename:
			extended(b, string(api.ResourceGPUShared), 1).Tolerate(gpuTaintKey)
		case base == "gpu", base == "shared":
			b.GPU(gpus)
		case base == "mig":
			extended(b, "nvidia.com/mig-"+profile, 1).Tolerate(gpuTaintKey)
		case base == "dra":
			claim(b, DRAClaimTemplate)
		case base == "dra-mem":
			claim(b, g.memoryTemplate(memory))
		case base == "dra-mig":
			claim(b, g.migTemplate(profile))
		}
		for _, m := range mods {
			m(b)
		}
		if gang != "" {
			b.Gang(gang, replicas, topo)
		}
		if prio != "" {
			b.Obj().Spec.PriorityClassName = prio
		}
		g.snap.Pods = append(g.snap.Pods, b.Obj())
	}
	g.apps = append(g.apps, app)
	g.pods += replicas
}

// base picks what the workload's pods consume: "cpu", "gpu" (whole GPUs), "shared" (time-sliced
// replicas), "mig" (a MIG slice), "dra" (a GPU through a claim), "dra-mem" (part of a GPU's
// consumable memory through a claim) or "dra-mig" (a dynamic MIG partition through a claim).
func (g *gen) base() string {
	gpu := map[gpuMode]string{gpuExclusive: "gpu", gpuTimeSliced: "shared", gpuMIG: "mig",
		gpuConsumable: "gpu", gpuDynamicMIG: "dra-mig"}[g.mode]
	switch {
	case g.mode == gpuNone:
		return "cpu"
	case g.mode == gpuExclusive && g.opts.DRA && g.chance(40):
		return "dra"
	case g.mode == gpuConsumable && g.chance(60):
		// Mostly part of a GPU's memory; sometimes a claim that names no memory, which takes
		// all of it (the driver's default).
		if g.chance(20) {
			return "dra"
		}
		return "dra-mem"
	case !g.cpuPool || g.chance(55):
		return gpu
	}
	return "cpu"
}

// size picks the CPU and memory requests.
func (g *gen) size(base string) (cpu, mem string) {
	if base == "cpu" {
		return oneOf(g, "100m", "250m", "500m", "1", "1500m", "2", "3", "4", "7"),
			oneOf(g, "128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi", "16Gi")
	}
	return oneOf(g, "500m", "1", "2", "4"), oneOf(g, "2Gi", "4Gi", "8Gi", "16Gi")
}

// modifiers picks the workload's placement constraints.
func (g *gen) modifiers(i, replicas int, base string) []func(*simtest.PodBuilder) {
	var out []func(*simtest.PodBuilder)
	app := fmt.Sprintf("a%d", i)
	zone := oneOf(g, g.cat.Zones...)
	if g.chance(15) {
		out = append(out, func(b *simtest.PodBuilder) { b.NodeSelector(corev1.LabelTopologyZone, zone) })
	}
	if g.chance(12) {
		var key string
		var op corev1.NodeSelectorOperator
		var values []string
		switch {
		case base == "cpu" && g.cat.Provider == "aws" && g.chance(50):
			key, op, values = api.LabelInstanceFamily, corev1.NodeSelectorOpIn, []string{oneOf(g, "m7i", "c7i", "r7i"), "m6i"}
		case g.chance(50):
			key, op, values = corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, []string{zone}
		default:
			key, op, values = corev1.LabelArchStable, corev1.NodeSelectorOpIn, []string{"amd64"}
		}
		out = append(out, func(b *simtest.PodBuilder) { b.Require(key, op, values...) })
	}
	if g.batch && base == "cpu" && g.chance(25) {
		sel := g.chance(60)
		out = append(out, func(b *simtest.PodBuilder) {
			b.Tolerate(LabelWorkload)
			if sel {
				b.NodeSelector(LabelWorkload, "batch")
			}
		})
	}
	if g.chance(8) {
		out = append(out, func(b *simtest.PodBuilder) { b.Tolerate(LabelDedicated) })
	}
	if replicas >= 2 && g.chance(18) {
		out = append(out, func(b *simtest.PodBuilder) { b.Spread(corev1.LabelTopologyZone, 1, true) })
	}
	if replicas >= 2 && g.chance(12) {
		skew := int32(1 + g.r.IntN(2))
		out = append(out, func(b *simtest.PodBuilder) { b.Spread(corev1.LabelHostname, skew, true) })
	}
	if replicas >= 2 && g.chance(12) {
		out = append(out, func(b *simtest.PodBuilder) { b.AntiAffinity(corev1.LabelHostname, app) })
	}
	if replicas <= 3 && g.chance(6) {
		out = append(out, func(b *simtest.PodBuilder) { b.AntiAffinity(corev1.LabelTopologyZone, app) })
	}
	if i > 0 && g.chance(8) {
		other := fmt.Sprintf("a%d", g.r.IntN(i))
		out = append(out, func(b *simtest.PodBuilder) { b.Affinity(corev1.LabelTopologyZone, other) })
	}
	return out
}

// softModifier picks, about half the time, one soft constraint for workload i's replicas.
func (g *gen) softModifier(i, replicas int) func(*simtest.PodBuilder) {
	r := g.softR
	if r.IntN(100) >= 50 {
		return nil
	}
	app := fmt.Sprintf("a%d", i)
	zone := g.cat.Zones[r.IntN(len(g.cat.Zones))]
	weight := int32(1 + r.IntN(100))
	switch k := r.IntN(4); {
	case k == 0 && replicas >= 2:
		return func(b *simtest.PodBuilder) { b.PreferAntiAffinity(weight, corev1.LabelHostname, app) }
	case k == 1 && replicas >= 2:
		return func(b *simtest.PodBuilder) { b.Spread(corev1.LabelTopologyZone, 1, false) }
	case k == 2 && i > 0:
		other := fmt.Sprintf("a%d", r.IntN(i))
		return func(b *simtest.PodBuilder) { b.PreferAffinity(weight, corev1.LabelHostname, other) }
	}
	return func(b *simtest.PodBuilder) { b.PreferNode(weight, corev1.LabelTopologyZone, zone) }
}

// claim gives the pod a claim named "gpu" from the template, used by its container, and the GPU
// toleration.
func claim(b *simtest.PodBuilder, template string) {
	p := b.Obj()
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new(template)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	b.Tolerate(gpuTaintKey)
}

// extended requests n of an extended resource (requests and limits, as the API demands).
func extended(b *simtest.PodBuilder, name string, n int64) *simtest.PodBuilder {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	c := &b.Obj().Spec.Containers[0]
	c.Resources.Requests[corev1.ResourceName(name)] = q
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = q
	return b
}
