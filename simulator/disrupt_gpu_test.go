package simulator_test

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestDisruptGPUNodeWithOnlyCPUPods: a GPU node that carries only a CPU pod is the first
// candidate, and its pod goes to a CPU node — an existing one with room, else a new cheap one.
func TestDisruptGPUNodeWithOnlyCPUPods(t *testing.T) {
	for _, room := range []bool{true, false} {
		f := newFleet(t)
		f.node("gpu-1", "gpu", "g6.xlarge", api.OnDemand)
		f.pod("leftover", "gpu-1").CPU("1").Mem("2Gi").Tolerate("nvidia.com/gpu")
		f.node("cpu-1", "general", "m7i.xlarge", api.OnDemand)
		f.pod("web", "cpu-1").CPU("3").Mem("4Gi")
		if room {
			f.snap.Pods[len(f.snap.Pods)-1].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		}
		p := f.plan()
		a := actionOf(p, "gpu-1")
		if a == nil || p.Actions[0].ID != a.ID || p.Candidates[0] != "gpu-1" && len(p.Candidates) > 1 && p.Candidates[1] != "gpu-1" {
			t.Fatalf("room %v: the GPU node is not the first action: %+v", room, p.Actions)
		}
		switch {
		case room && (a.Kind != api.ActionDelete || destination(p, "leftover") != "cpu-1"):
			t.Errorf("with room: %+v, leftover to %q", a, destination(p, "leftover"))
		case !room && (a.Kind != api.ActionReplace || a.Replacement.Pool != "general" || a.Replacement.GPUs != nil ||
			a.Replacement.InstanceType != "m7i.large"):
			t.Errorf("without room: %+v", a)
		}
	}
}

// TestDisruptOnDemandToSpot: a GPU pool that allows spot replaces an on-demand GPU node with a
// spot one of the same size, for half the price.
func TestDisruptOnDemandToSpot(t *testing.T) {
	f := newFleet(t)
	f.node("od", "gpu", "g6.xlarge", api.OnDemand)
	f.pod("infer", "od").CPU("2").Mem("8Gi").GPU(1)
	p := f.plan()
	a := actionOf(p, "od")
	if a == nil || a.Kind != api.ActionReplace || a.Replacement.CapacityType != api.Spot || a.Replacement.InstanceType != "g6.xlarge" {
		t.Fatalf("on-demand GPU node: %+v", a)
	}
	if a.SavingsPerHour != 0.8048-0.4104 {
		t.Errorf("savings %v", a.SavingsPerHour)
	}
}

// TestDisruptSpotToSpotDiversity: a spot node is replaced by a cheaper spot node only when the
// pool has spotToSpotMinOfferings cheaper spot offerings that hold its pods (15 here: g6.xlarge,
// g6.2xlarge, g5.xlarge, g5.2xlarge and g6.4xlarge in three zones).
func TestDisruptSpotToSpotDiversity(t *testing.T) {
	for _, c := range []struct {
		min  string
		want api.KeepReason
	}{{"", ""}, {"15", ""}, {"16", api.KeepSpotDiversity}} {
		f := newFleet(t)
		if c.min != "" {
			f.pol = strings.Replace(f.pol, `disruption: {budgets: [{nodes: "100%"}]}`+"\n", `disruption: {budgets: [{nodes: "100%"}], spotToSpotMinOfferings: `+c.min+"}\n", 2)
		}
		f.node("spot", "gpu", "g5.4xlarge", api.Spot)
		f.pod("train", "spot").CPU("2").Mem("8Gi").GPU(1)
		p := f.plan()
		if got := keptAs(p, "spot"); got != c.want {
			t.Errorf("spotToSpotMinOfferings %q: kept as %q, want %q", c.min, got, c.want)
		}
		if a := actionOf(p, "spot"); c.want == "" && (a == nil || a.Replacement.CapacityType != api.Spot || a.Replacement.PricePerHour != 0.4104) {
			t.Errorf("spotToSpotMinOfferings %q: %+v", c.min, a)
		}
	}
}

// TestDisruptBelowThreshold: a replacement that saves less than the pool's threshold is not worth
// the churn.
func TestDisruptBelowThreshold(t *testing.T) {
	for _, c := range []struct {
		threshold string
		want      api.KeepReason
	}{{"0.5", ""}, {`"60%"`, api.KeepBelowThreshold}} {
		f := newFleet(t)
		f.pol = strings.Replace(f.pol, `{budgets: [{nodes: "100%"}]}`, `{budgets: [{nodes: "100%"}], savingsThreshold: `+c.threshold+`}`, 1)
		f.node("big", "general", "m7i.2xlarge", api.OnDemand)
		f.pod("app", "big").CPU("3").Mem("8Gi") // an m7i.xlarge holds it: saves half
		if got := keptAs(f.plan(), "big"); got != c.want {
			t.Errorf("threshold %s: kept as %q, want %q", c.threshold, got, c.want)
		}
	}
}

// TestDisruptTimeSlicedAndMIG: device-plugin GPU pods move only where their resource is free —
// a time-sliced replica to the node with a free replica, a MIG slice to the node with a free slice
// of its profile — never to a node whose GPUs are taken or partitioned otherwise.
func TestDisruptTimeSlicedAndMIG(t *testing.T) {
	f := newFleet(t)
	// Each exposure has its pool: a time-sliced or partitioned node in the exclusive pool would
	// be drifted.
	f.pol += `- name: shared
  instanceFamilies: [g6]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: time-slicing, replicas: 4}
  disruption: {budgets: [{nodes: "100%"}]}
- name: mig
  instanceFamilies: [p4d]
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  gpu: {sharing: mig}
  disruption: {budgets: [{nodes: "100%"}]}
`
	shared := func(name string, used int) {
		n := f.node(name, "shared", "g6.xlarge", api.Spot)
		n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
		n.Labels[api.LabelGPUReplicas] = "4"
		n.Status.Allocatable[api.ResourceGPU] = resource.MustParse("4")
		for i := 0; i < used; i++ {
			f.pod(name+"-r"+string(rune('0'+i)), name).CPU("500m").Mem("1Gi").GPU(1)
		}
	}
	shared("ts-a", 1)
	shared("ts-b", 3)
	f.node("excl", "gpu", "g6.xlarge", api.Spot)
	f.pod("whole", "excl").CPU("500m").Mem("1Gi").GPU(1)
	sliced := func(name, profile string, alloc, used int) {
		n := f.node(name, "mig", "p4d.24xlarge", api.Spot)
		n.Spec.Taints = []corev1.Taint{policy.DefaultGPUTaint}
		delete(n.Status.Allocatable, api.ResourceGPU)
		n.Status.Allocatable[corev1.ResourceName("nvidia.com/mig-"+profile)] = *resource.NewQuantity(int64(alloc), resource.DecimalSI)
		for i := 0; i < used; i++ {
			f.pod(name+"-s"+string(rune('0'+i)), name).CPU("1").Mem("4Gi").Tolerate("nvidia.com/gpu").
				Req("nvidia.com/mig-"+profile, "1")
		}
	}
	sliced("mig-a", "1g.5gb", 7, 1)
	sliced("mig-b", "1g.5gb", 7, 6)
	sliced("mig-c", "3g.20gb", 2, 1)
	p := f.plan()
	if destination(p, "ts-a-r0") != "ts-b" {
		t.Errorf("time-sliced pod to %q, want ts-b", destination(p, "ts-a-r0"))
	}
	// The 1g.5gb slices go where a 1g.5gb slice is free — mig-b, or a new node the MIG pool lays
	// out for them (it may replace all three A100 nodes by one) — never to mig-c's 3g.20gb GPUs.
	for _, pod := range []string{"mig-a-s0", "mig-b-s0", "mig-b-s5"} {
		if to := destination(p, pod); to == "mig-c" || to == "excl" || strings.HasPrefix(to, "ts-") {
			t.Errorf("MIG pod %s moved to %s", pod, to)
		}
	}
	for _, n := range []string{"excl", "ts-b"} {
		if actionOf(p, n) != nil {
			t.Errorf("node %s removed: %+v", n, actionOf(p, n))
		}
	}
}

// TestDisruptDRA: a pod whose GPU comes from a DRA claim moves to the node with a free device,
// its claim allocated again there, not to a node whose devices are all allocated.
func TestDisruptDRA(t *testing.T) {
	f := newFleet(t)
	// Only this type, so that three nodes cannot become one bigger node (which the search would
	// rightly prefer) and the test sees the single move.
	f.pol = strings.Replace(f.pol, "instanceFamilies: [g6, g5]", "instanceTypes: [g6.12xlarge]", 1)
	objs, err := snapshot.Decode(strings.NewReader(draClasses + draTemplates))
	if err != nil {
		t.Fatal(err)
	}
	f.snap.DeviceClasses, f.snap.ResourceClaimTemplates = objs.DeviceClasses, objs.ResourceClaimTemplates
	it, _ := f.cat.Type("g6.12xlarge")
	plan := &api.Plan{}
	for _, c := range []struct {
		node string
		pods int
	}{{"dra-a", 1}, {"dra-b", 3}, {"dra-c", 4}} {
		n := f.node(c.node, "gpu", "g6.12xlarge", api.Spot)
		delete(n.Status.Allocatable, api.ResourceGPU) // the DRA driver's GPUs alone
		f.snap.ResourceSlices = append(f.snap.ResourceSlices, dra.NodeSlices(c.node, it, api.GPUConfig{Sharing: api.Exclusive, DRA: true})...)
		en := api.ExistingNode{Name: c.node}
		for i := 0; i < c.pods; i++ {
			name := c.node + "-" + string(rune('0'+i))
			pod := simtest.Pod(name).Namespace("ml").Label("app", name).Controlled("ReplicaSet", name).CPU("2").Mem("8Gi").Tolerate("nvidia.com/gpu").Obj()
			pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}}
			pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
			f.snap.Pods = append(f.snap.Pods, pod)
			en.Pods = append(en.Pods, "ml/"+name)
		}
		plan.ExistingNodes = append(plan.ExistingNodes, en)
	}
	bound, err := simtest.Bind(f.snap, plan, f.cat, dOld)
	if err != nil {
		t.Fatal(err)
	}
	f.snap = bound
	p := f.plan()
	a := actionOf(p, "dra-a")
	if a == nil || a.Kind != api.ActionDelete || len(a.Moves) != 1 || a.Moves[0].To != "dra-b" {
		t.Fatalf("dra-a: %+v", a)
	}
	if actionOf(p, "dra-b") != nil || actionOf(p, "dra-c") != nil {
		t.Errorf("full DRA nodes removed: %+v", p.Actions)
	}
}

// TestDisruptGangsMoveWhole: a gang on one node (topology node) moves only to a node that holds
// all of it; a gang spread over two nodes moves only with both.
func TestDisruptGangsMoveWhole(t *testing.T) {
	for _, c := range []struct {
		name     string
		room     string // CPU used on the other node
		wantGone bool
	}{{"room for the whole gang", "1", true}, {"room for one member", "4", false}} {
		f := newFleet(t)
		f.node("g1", "general", "m7i.2xlarge", api.OnDemand)
		f.node("g2", "general", "m7i.2xlarge", api.OnDemand)
		for _, m := range []string{"m0", "m1"} {
			f.pod(m, "g1").CPU("3").Mem("4Gi").Gang("train", 2, "node")
		}
		f.pod("other", "g2").CPU(c.room).Mem("2Gi").Annotate(api.AnnotationDoNotDisrupt, "true")
		p := f.plan()
		gone := actionOf(p, "g1") != nil
		if gone != c.wantGone {
			t.Fatalf("%s: g1 removed %v, want %v", c.name, gone, c.wantGone)
		}
		if gone && (destination(p, "m0") != destination(p, "m1") || destination(p, "m0") == "") {
			t.Errorf("%s: the gang is split: %q, %q", c.name, destination(p, "m0"), destination(p, "m1"))
		}
		if !gone && (destination(p, "m0") != "" || destination(p, "m1") != "") {
			t.Errorf("%s: a member moves without the other", c.name)
		}
	}
	f := newFleet(t)
	for _, n := range []string{"s1", "s2"} {
		f.node(n, "general", "m7i.xlarge", api.OnDemand)
		f.pod("w-"+n, n).CPU("1").Mem("2Gi").Gang("spread", 2, "")
	}
	p := f.plan()
	if a := actionOf(p, "s1"); a == nil || strings.Join(a.Nodes, ",") != "s1,s2" {
		t.Errorf("a gang over two nodes: %+v", p.Actions)
	}
}
