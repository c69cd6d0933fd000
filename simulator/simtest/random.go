package simtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/tiler-dev/tiler/api"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// RandomSnapshot builds a random but valid snapshot for the embedded aws-us-east-1 catalog from a
// seed: a few existing nodes partly filled, and pending pods mixing CPU/memory sizes, node
// selectors, required node affinity, tolerations, zone and hostname spread, anti-affinity, pod
// affinity, priorities, whole GPUs and gangs.
func RandomSnapshot(seed uint64, pods int) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(seed, 0xdecafbad))
	s := &snapshot.Snapshot{}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for i := 0; i < r.IntN(4); i++ {
		name := fmt.Sprintf("existing-%d", i)
		n := Node(name, "m7i.2xlarge", zones[r.IntN(3)], Resources("cpu", "7910m", "memory", "30Gi", "pods", "110"))
		s.Nodes = append(s.Nodes, n)
		for j := 0; j < r.IntN(4); j++ {
			s.Pods = append(s.Pods, Pod(fmt.Sprintf("bound-%d-%d", i, j)).CPU("1").Mem("2Gi").Label("app", "bound").On(name).Obj())
		}
	}
	if r.IntN(2) == 0 {
		ds := &appsv1.DaemonSet{}
		ds.Name, ds.Namespace = "agent", "kube-system"
		ds.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: corev1.ResourceRequirements{Requests: Resources("cpu", "100m", "memory", "200Mi")}}}}
		s.DaemonSets = append(s.DaemonSets, ds)
	}
	for i := 0; i < pods; i++ {
		s.Pods = append(s.Pods, randomPod(r, i, zones).Obj())
	}
	return s
}

func randomPod(r *rand.Rand, i int, zones []string) *PodBuilder {
	apps := []string{"web", "api", "cache", "batch", "db"}
	app := apps[r.IntN(len(apps))]
	b := Pod(fmt.Sprintf("p-%03d", i)).Label("app", app).
		CPU(fmt.Sprintf("%dm", 100+r.IntN(3900))).Mem(fmt.Sprintf("%dMi", 128+r.IntN(16000)))
	switch r.IntN(12) {
	case 0:
		b.NodeSelector(corev1.LabelTopologyZone, zones[r.IntN(3)])
	case 1:
		b.Require(api.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m7i", "c7i")
	case 2:
		// Spread groups get labels of their own: a pod outside the group but matching its
		// selector may land anywhere, which the final-state checker cannot tell apart.
		b.Label("app", app+"-zspread").Spread(corev1.LabelTopologyZone, 1, true)
	case 3:
		b.Label("app", app+"-hspread").Spread(corev1.LabelHostname, 1, true)
	case 4:
		b.AntiAffinity(corev1.LabelHostname, app)
	case 5:
		b.Affinity(corev1.LabelTopologyZone, app)
	case 6:
		b.GPU(1 + r.IntN(2))
	case 7:
		b.Priority(int32(r.IntN(3) * 100))
	case 8:
		b.Gang(fmt.Sprintf("g%d", i%3), 0, []string{"", "node", "zone"}[r.IntN(3)])
	case 9:
		b.AntiAffinity(corev1.LabelTopologyZone, app+"-zonal").Label("app", app+"-zonal")
	}
	return b
}
