package simulator

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// UnmanagedPool is the pool of the cost report's lines for nodes without a tiler.dev/pool label.
const UnmanagedPool = "(unmanaged)"

// Chargeback attributes the $/h of the snapshot's priced nodes (by their instance-type, zone and
// capacity-type labels and the catalog) to the namespaces of the pods on them. A node's price is
// shared in proportion to what each active pod takes of the node's scarcest resource:
//   - on a GPU node, its GPUs, counted as the GPU-aware utilisation counts them (a whole GPU, a
//     time-sliced replica as 1/replicas of a GPU, a MIG slice by its compute slices — 1g of 7 is
//     1/7 —, a DRA device as a GPU, a partition or shared device by its share), a claim's devices
//     split among the pods it is reserved for; pods that take no GPU pay nothing there;
//   - on a CPU node, the one of CPU and memory its pods request the larger share of.
//
// What the pods do not take is the idle line of the node's pool and capacity type. When the
// pods' shares exceed the node (requests over allocatable), they are scaled to it. The lines add
// up to CostPerHour.
//
// With a policy that has teams, every namespace line carries its namespace's team (policy teams,
// namespaces by name or by the labels of the snapshot's Namespace objects; "" for a namespace in
// none) and the report sums the lines per team (CostReport.Teams). A namespace two teams claim is
// an error.
func Chargeback(snap *snapshot.Snapshot, cat *catalog.Catalog, pol *policy.CostPolicy) (*api.CostReport, error) {
	if snap == nil || cat == nil {
		return nil, fmt.Errorf("chargeback: the snapshot and the catalog are required")
	}
	if pol != nil {
		if err := pol.Validate(); err != nil {
			return nil, err
		}
	}
	teams := newTeamIndex(pol, snap)
	type key struct {
		ns, pool string
		ct       api.CapacityType
		idle     bool
	}
	lines := map[key]*api.CostLine{}
	line := func(k key) *api.CostLine {
		if l := lines[k]; l != nil {
			return l
		}
		l := &api.CostLine{Namespace: k.ns, Idle: k.idle, Pool: k.pool, CapacityType: k.ct}
		lines[k] = l
		return l
	}
	var teamErr error
	teamOf := func(ns string) string {
		t, err := teams.of(ns)
		if err != nil && teamErr == nil {
			teamErr = err
		}
		if t == nil {
			return ""
		}
		return t.Name
	}
	r := &api.CostReport{Unpriced: []string{}, Lines: []api.CostLine{}}
	nodeCosts(snap, cat, func(n *corev1.Node, np nodePrice, pods []*corev1.Pod, costs, gpus []float64) {
		if np.price <= 0 {
			r.Unpriced = append(r.Unpriced, n.Name)
			return
		}
		pool := n.Labels[api.LabelPool]
		if pool == "" {
			pool = UnmanagedPool
		}
		ct := np.offering.CapacityType
		taken := 0.0
		for i, p := range pods {
			if costs[i] == 0 {
				continue
			}
			l := line(key{ns: p.Namespace, pool: pool, ct: ct})
			l.Team = teamOf(p.Namespace)
			l.CostPerHour += costs[i]
			l.Pods++
			l.GPUs += gpus[i]
			taken += costs[i]
		}
		if idle := np.price - taken; idle > 0 {
			line(key{pool: pool, ct: ct, idle: true}).CostPerHour += idle
			r.IdlePerHour += idle
		}
		r.CostPerHour += np.price
		r.Nodes++
	})
	if teamErr != nil {
		return nil, fmt.Errorf("chargeback: %w", teamErr)
	}
	byTeam := map[string]*api.TeamCost{}
	if teams != nil {
		r.Teams = []api.TeamCost{}
	}
	for _, l := range lines {
		r.Lines = append(r.Lines, *l)
		if teams == nil || l.Idle {
			continue
		}
		tc := byTeam[l.Team]
		if tc == nil {
			tc = &api.TeamCost{Team: l.Team}
			byTeam[l.Team] = tc
		}
		tc.CostPerHour += l.CostPerHour
		tc.Pods += l.Pods
		tc.GPUs += l.GPUs
	}
	for _, tc := range byTeam {
		r.Teams = append(r.Teams, *tc)
	}
	sort.Slice(r.Teams, func(i, j int) bool {
		a, b := r.Teams[i].Team, r.Teams[j].Team
		if (a == "") != (b == "") {
			return b == "" // namespaces without a team last
		}
		return a < b
	})
	sort.Slice(r.Lines, func(i, j int) bool {
		a, b := r.Lines[i], r.Lines[j]
		if a.Idle != b.Idle {
			return !a.Idle
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		return a.CapacityType < b.CapacityType
	})
	sort.Strings(r.Unpriced)
	return r, nil
}

// nodeCosts calls fn for every node of the snapshot, in order, with its price, its active pods and
// the $/h and GPUs each pod takes of it (Chargeback's rule: shares of the scarcest resource, scaled
// to the node when they exceed it). An unpriced node (np.price 0) comes with zero costs.
func nodeCosts(snap *snapshot.Snapshot, cat *catalog.Catalog, fn func(n *corev1.Node, np nodePrice, pods []*corev1.Pod, costs, gpus []float64)) {
	types := typesByLabel(cat)
	pods := map[string][]*corev1.Pod{}
	for _, p := range snap.Pods {
		if p.Spec.NodeName != "" && snapshot.IsActive(p) {
			pods[p.Spec.NodeName] = append(pods[p.Spec.NodeName], p)
		}
	}
	claimed := claimShares(snap)
	for _, n := range snap.Nodes {
		np := priceNode(types, cat, n)
		on := pods[n.Name]
		costs := make([]float64, len(on))
		if np.price <= 0 {
			fn(n, np, on, costs, make([]float64, len(on)))
			continue
		}
		shares, gpus := podShares(n, on, claimed[n.Name], np)
		total := 0.0
		for _, s := range shares {
			total += s
		}
		scale := 1.0
		if total > 1 {
			scale = 1 / total
		}
		for i := range on {
			costs[i] = np.price * shares[i] * scale
		}
		fn(n, np, on, costs, gpus)
	}
}

// podShares returns, for each pod on the node, the share of the node it takes and the GPUs it
// takes (GPU nodes only). devices are the node's allocated DRA devices with the pods they serve.
func podShares(n *corev1.Node, pods []*corev1.Pod, devices []claimedDevice, np nodePrice) (shares, gpus []float64) {
	shares, gpus = make([]float64, len(pods)), make([]float64, len(pods))
	if np.gpus > 0 {
		index := map[string]int{}
		for i, p := range pods {
			index[p.Namespace+"/"+p.Name] = i
			for name, q := range podRequests(p) {
				gpus[i] += gpusTaken(n, name, q, np.gpus, np.model)
			}
		}
		for _, d := range devices {
			share := deviceShare(d.result, np.model, np.memMiB) / float64(len(d.pods))
			for _, key := range d.pods {
				if i, ok := index[key]; ok {
					gpus[i] += share
				}
			}
		}
		for i := range pods {
			shares[i] = gpus[i] / float64(np.gpus)
		}
		return shares, gpus
	}
	a := n.Status.Allocatable
	var cpu, mem int64
	reqs := make([]corev1.ResourceList, len(pods))
	for i, p := range pods {
		reqs[i] = podRequests(p)
		cpu += reqs[i].Cpu().MilliValue()
		mem += reqs[i].Memory().Value()
	}
	byCPU := share(cpu, a.Cpu().MilliValue()) >= share(mem, a.Memory().Value())
	for i := range pods {
		if byCPU {
			shares[i] = ratio(reqs[i].Cpu().MilliValue(), a.Cpu().MilliValue())
		} else {
			shares[i] = ratio(reqs[i].Memory().Value(), a.Memory().Value())
		}
	}
	return shares, gpus
}

// ratio is used over alloc, 0 when alloc is not positive (unlike share, not capped at 1).
func ratio(used, alloc int64) float64 {
	if alloc <= 0 || used <= 0 {
		return 0
	}
	return float64(used) / float64(alloc)
}

// claimedDevice is a DRA device allocated to a claim, with the pods the claim is reserved for
// ("namespace/name").
type claimedDevice struct {
	result resourcev1.DeviceRequestAllocationResult
	pods   []string
}

// claimShares lists, per node (the driver's pool), the allocated devices of claims reserved for
// pods. Admin-access allocations take nothing.
func claimShares(snap *snapshot.Snapshot) map[string][]claimedDevice {
	out := map[string][]claimedDevice{}
	for _, c := range snap.ResourceClaims {
		if c.Status.Allocation == nil {
			continue
		}
		var pods []string
		for _, ref := range c.Status.ReservedFor {
			if ref.Resource == "pods" && ref.APIGroup == "" {
				pods = append(pods, c.Namespace+"/"+ref.Name)
			}
		}
		if len(pods) == 0 {
			continue
		}
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.AdminAccess == nil || !*res.AdminAccess {
				out[res.Pool] = append(out[res.Pool], claimedDevice{result: res, pods: pods})
			}
		}
	}
	return out
}
