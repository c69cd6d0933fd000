package simulator

import (
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// nodeUse is what a node's pods take of it, GPU-aware.
type nodeUse struct {
	// util is the node's utilisation in [0, 1] (see utilisationOf).
	util float64
	// gpuPods reports whether some pod on the node uses a GPU (device plugin or DRA).
	gpuPods bool
}

// utilisations returns, for every node of the snapshot, the utilisation its active pods give it.
// gpus returns a node's GPU count (0 for CPU nodes).
func utilisations(snap *snapshot.Snapshot, gpus func(*corev1.Node) (count int, model string, memMiB int64)) map[string]nodeUse {
	devices := allocatedDevices(snap)
	byNode := map[string][]*corev1.Pod{}
	for _, p := range snap.Pods {
		if snapshot.IsActive(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	out := make(map[string]nodeUse, len(snap.Nodes))
	for _, n := range snap.Nodes {
		g, model, mem := gpus(n)
		out[n.Name] = utilisationOf(n, byNode[n.Name], devices[n.Name], g, model, mem)
	}
	return out
}

// utilisationOf is the Cluster Autoscaler's measure made GPU-aware. A GPU node (g > 0) is as
// used as its GPUs: the sum over its pods of the GPUs they take — r device-plugin units of a
// resource the node advertises a of count as r·g/a GPUs (whole GPUs, time-sliced or MPS
// replicas, single-strategy MIG slices alike), a MIG slice of the mixed strategy as its compute
// slices over the GPU's (1g of 7 = 1/7), a DRA device as one GPU, a DRA MIG partition by its
// compute slices and a share of consumable memory by its memory — divided by g. A CPU node is as
// used as the larger of its CPU and memory requests over allocatable.
func utilisationOf(n *corev1.Node, pods []*corev1.Pod, devices []resourcev1.DeviceRequestAllocationResult, g int, model string, memMiB int64) nodeUse {
	var use nodeUse
	if g <= 0 {
		var cpu, mem int64
		for _, p := range pods {
			r := podRequests(p)
			cpu += r.Cpu().MilliValue()
			mem += r.Memory().Value()
		}
		a := n.Status.Allocatable
		use.util = max(share(cpu, a.Cpu().MilliValue()), share(mem, a.Memory().Value()))
		return use
	}
	total := 0.0
	for _, p := range pods {
		for name, q := range podRequests(p) {
			if taken := gpusTaken(n, name, q, g, model); taken > 0 {
				total += taken
				use.gpuPods = true
			}
		}
		if len(p.Spec.ResourceClaims) > 0 {
			use.gpuPods = true
		}
	}
	for _, d := range devices {
		total += deviceShare(d, model, memMiB)
	}
	use.util = min(total/float64(g), 1)
	return use
}

func share(used, alloc int64) float64 {
	if alloc <= 0 {
		return 0
	}
	return min(float64(used)/float64(alloc), 1)
}

// gpusTaken is how many of the node's g GPUs a request of q of the resource takes.
func gpusTaken(n *corev1.Node, name corev1.ResourceName, q resource.Quantity, g int, model string) float64 {
	r := float64(q.Value())
	if r <= 0 {
		return 0
	}
	if p, ok := mig.ParseResourceName(string(name)); ok {
		return r * migShare(string(p), model)
	}
	if name != api.ResourceGPU && name != api.ResourceGPUShared {
		return 0
	}
	a, ok := n.Status.Allocatable[name]
	if !ok || a.Value() <= 0 {
		return r
	}
	return r * float64(g) / float64(a.Value())
}

// migShare is the share of one GPU a MIG profile ("3g.20gb") takes: its compute slices over the
// model's (7 unless the MIG table knows the model, e.g. 4 on A30).
func migShare(profile, model string) float64 {
	slices := 7
	if tab, err := loadMIG(); err == nil {
		if m, ok := tab.Model(model); ok && m.TotalComputeSlices > 0 {
			slices = m.TotalComputeSlices
		}
	}
	c, _, ok := strings.Cut(profile, "g")
	compute, err := strconv.Atoi(c)
	if !ok || err != nil || compute <= 0 {
		return 1
	}
	return min(float64(compute)/float64(slices), 1)
}

// deviceShare is the share of one GPU a DRA device allocation takes: its consumed memory over
// the GPU's memory when it shares the device, a partition's compute share for MIG devices
// ("gpu-0-mig-3g20gb-…"), else the whole GPU.
func deviceShare(d resourcev1.DeviceRequestAllocationResult, model string, memMiB int64) float64 {
	if q, ok := d.ConsumedCapacity["memory"]; ok && memMiB > 0 {
		return min(float64(q.Value())/float64(memMiB<<20), 1)
	}
	if _, rest, ok := strings.Cut(d.Device, "-mig-"); ok {
		return migShare(rest, model)
	}
	return 1
}

// allocatedDevices lists, per node, the devices the snapshot's claims have allocated from that
// node's pool (the NVIDIA driver names its pools after the node).
func allocatedDevices(snap *snapshot.Snapshot) map[string][]resourcev1.DeviceRequestAllocationResult {
	out := map[string][]resourcev1.DeviceRequestAllocationResult{}
	for _, c := range snap.ResourceClaims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess == nil || !*r.AdminAccess {
				out[r.Pool] = append(out[r.Pool], r)
			}
		}
	}
	return out
}
