package simulator

import (
	"fmt"
	"slices"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// MIG re-layout: with Options.MIGRelayout, before buying, Simulate looks for existing device-plugin MIG nodes whose idle
// GPUs, partitioned otherwise, would hold the MIG slices the pending pods ask for and the cluster
// lacks. Such a node's allocatable is changed in place — free, so every placement prefers it to a
// purchase — and the plan lists the change (api.Plan.Relayouts) for the controller to apply
// through the GPU operator's nvidia.com/mig.config label.
//
// Which GPU a device-plugin slice is on is not in the API (the kubelet knows it, the API server
// does not), so "idle" is counted: a GPU may change when the slices the node's pods use still fit
// on the GPUs that keep their layout. The MIG manager refuses to re-partition a GPU that has a
// process (nvidia.com/mig.config.state becomes failed, the devices stay), so a wrong guess costs a
// batch, never a pod; the next decision buys.

// relayout is one planned re-layout of an existing node.
type relayout struct {
	node  *simNode
	model *mig.GPUModel
	// before and after are the per-GPU layouts; changed the GPUs that differ.
	before, after []mig.Layout
	changed       []int
	alloc         corev1.ResourceList
	// added are the profiles the changed GPUs gain.
	added map[mig.MIGProfile]bool
}

// relayoutCandidate describes an existing node whose GPUs may be re-partitioned: a managed node
// of a pool with device-plugin MIG (mixed strategy), a GPU model the MIG table knows and an
// nvidia.com/mig.config that names its layouts, no change under way or failed.
type relayoutCandidate struct {
	n      *simNode
	pool   *poolInfo
	model  *mig.GPUModel
	perGPU []mig.Layout
}

// planRelayouts applies the re-layouts under way (Options.Relayouting) and plans new ones, node
// by node in name order, each for the demand the cluster cannot serve yet.
func (s *state) planRelayouts() error {
	going := map[string]bool{}
	for _, r := range s.in.Options.Relayouting {
		going[r.Node] = true
		for _, n := range s.nodes {
			if n.existing && n.name == r.Node {
				n.alloc = s.dims.grow(s.dims.fromList(r.Allocatable, false))
			}
		}
	}
	if !s.in.Options.MIGRelayout || !s.hasPendingMIG() {
		return nil
	}
	tab, err := loadMIG()
	if err != nil {
		return fmt.Errorf("loading the MIG profile table: %w", err)
	}
	types := typesByLabel(s.cat)
	used := migUsedByNode(s.in.Snapshot)
	for _, n := range s.nodes {
		c, ok := s.relayoutCandidate(n, tab, types)
		if !ok || going[n.name] {
			continue
		}
		if r := s.tryRelayout(c, used[n.name]); r != nil {
			s.relayouts = append(s.relayouts, r)
		}
	}
	return nil
}

// hasPendingMIG reports whether a pending pod asks for a MIG slice.
func (s *state) hasPendingMIG() bool {
	for name, i := range s.dims.index {
		if _, ok := mig.ParseResourceName(string(name)); !ok {
			continue
		}
		for _, pi := range s.pending {
			if pi.req[i] > 0 {
				return true
			}
		}
	}
	return false
}

func (s *state) relayoutCandidate(n *simNode, tab *mig.Table, types map[string]*catalog.InstanceType) (relayoutCandidate, bool) {
	if !n.existing || n.inFlight || !n.available() || unschedulableNode(n.node) {
		return relayoutCandidate{}, false
	}
	pl := s.poolNamed(n.labels[api.LabelPool])
	if pl == nil || pl.GPU == nil || pl.GPU.Sharing != api.MIG || pl.GPU.MIGStrategy == "single" {
		return relayoutCandidate{}, false
	}
	l := n.labels
	if l[api.LabelDeployDevicePlugin] == "false" || l[api.LabelMIGStrategy] == "single" ||
		l[api.LabelMIGConfigState] == api.MIGConfigPending || l[api.LabelMIGConfigState] == api.MIGConfigFailed {
		return relayoutCandidate{}, false
	}
	it := types[CatalogTypeOf(l)]
	if it == nil || it.GPU.Count == 0 {
		return relayoutCandidate{}, false
	}
	m, ok := tab.Model(it.GPU.Model)
	if !ok {
		return relayoutCandidate{}, false
	}
	perGPU, err := m.ParseConfigName(l[api.LabelMIGConfig], it.GPU.Count)
	if err != nil {
		return relayoutCandidate{}, false
	}
	return relayoutCandidate{n: n, pool: pl, model: m, perGPU: perGPU}, true
}

// migUsedByNode sums, per node, the MIG slices its running pods use, per profile.
func migUsedByNode(snap *snapshot.Snapshot) map[string]map[mig.MIGProfile]int {
	out := map[string]map[mig.MIGProfile]int{}
	for _, p := range snap.Pods {
		if !snapshot.IsActive(p) || p.Spec.NodeName == "" {
			continue
		}
		for name, q := range podRequests(p) {
			prof, ok := mig.ParseResourceName(string(name))
			if !ok || q.Value() == 0 {
				continue
			}
			if out[p.Spec.NodeName] == nil {
				out[p.Spec.NodeName] = map[mig.MIGProfile]int{}
			}
			out[p.Spec.NodeName][prof] += int(q.Value())
		}
	}
	return out
}

// layoutCounts counts the slices of the layouts, per profile.
func layoutCounts(ls []mig.Layout) map[mig.MIGProfile]int {
	out := map[mig.MIGProfile]int{}
	for _, l := range ls {
		for _, p := range l.Profiles {
			out[p]++
		}
	}
	return out
}

// freeableGPUs returns the GPUs that may change, from the last one down: each is taken when the
// slices in use still fit on the GPUs left.
func freeableGPUs(perGPU []mig.Layout, used map[mig.MIGProfile]int) []int {
	keep := make([]bool, len(perGPU))
	for i := range keep {
		keep[i] = true
	}
	var out []int
	for i := len(perGPU) - 1; i >= 0; i-- {
		keep[i] = false
		var left []mig.Layout
		for j, l := range perGPU {
			if keep[j] {
				left = append(left, l)
			}
		}
		have, fits := layoutCounts(left), true
		for p, n := range used {
			if have[p] < n {
				fits = false
				break
			}
		}
		if !fits {
			keep[i] = true
			continue
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// tryRelayout plans the node's freeable GPUs for the MIG demand of the pending pods that may run
// there, less what the other nodes' free slices and the node's kept GPUs serve, and applies the
// result when it serves more of that demand (weighted by slice size) than the GPUs do now.
func (s *state) tryRelayout(c relayoutCandidate, used map[mig.MIGProfile]int) *relayout {
	m, n := c.model, c.n
	demand := map[mig.MIGProfile]int{}
	for name, i := range s.dims.index {
		p, ok := mig.ParseResourceName(string(name))
		if !ok {
			continue
		}
		if _, known := m.Profile(p); !known {
			continue
		}
		for _, pi := range s.pending {
			if pi.req[i] > 0 && s.nodeCompatible(pi.sig, n) {
				demand[p] += int(pi.req[i])
			}
		}
	}
	if len(demand) == 0 {
		return nil
	}
	free := freeableGPUs(c.perGPU, used)
	if len(free) == 0 {
		return nil
	}
	var freed []mig.Layout
	for _, i := range free {
		freed = append(freed, c.perGPU[i])
	}
	old := layoutCounts(freed)
	need := map[mig.MIGProfile]int{}
	for p, want := range demand {
		// Free slices elsewhere (every available node, this one's kept GPUs included) serve first.
		spare := -old[p]
		if i, ok := s.dims.index[corev1.ResourceName(mig.ResourceName(p))]; ok {
			for _, o := range s.nodes {
				if o.available() && !o.removed {
					spare += int(o.alloc[i] - o.used[i])
				}
			}
		}
		if left := want - max(spare, 0); left > 0 {
			need[p] = left
		}
	}
	if len(need) == 0 {
		return nil
	}
	var allowed []mig.Layout
	for _, spec := range c.pool.GPU.MIGLayouts {
		ls, err := mig.ParseLayoutSpec(m, spec)
		if err != nil {
			return nil // validated against the pool's types when offerings were built
		}
		allowed = append(allowed, ls...)
	}
	planned, _ := m.Plan(need, len(free), allowed)
	if served(m, need, layoutCounts(planned)) <= served(m, need, old) {
		return nil
	}
	after := slices.Clone(c.perGPU)
	assignKeepingSame(after, free, planned)
	r := &relayout{node: n, model: m, before: c.perGPU, after: after, added: map[mig.MIGProfile]bool{}}
	for _, i := range free {
		if !slices.Equal(after[i].Profiles, c.perGPU[i].Profiles) {
			r.changed = append(r.changed, i)
		}
	}
	if len(r.changed) == 0 {
		return nil
	}
	var gone, gained []mig.Layout
	for _, i := range r.changed {
		gone, gained = append(gone, c.perGPU[i]), append(gained, after[i])
	}
	minus, plus := layoutCounts(gone), layoutCounts(gained)
	r.alloc = n.node.Status.Allocatable.DeepCopy()
	for p := range minus {
		name := corev1.ResourceName(mig.ResourceName(p))
		q := r.alloc[name]
		if v := q.Value() - int64(minus[p]); v > 0 {
			r.alloc[name] = qty(int(v))
		} else {
			delete(r.alloc, name)
		}
	}
	for p, k := range plus {
		name := corev1.ResourceName(mig.ResourceName(p))
		q := r.alloc[name]
		r.alloc[name] = qty(int(q.Value()) + k)
		if k > minus[p] {
			r.added[p] = true
		}
	}
	n.alloc = s.dims.grow(s.dims.fromList(r.alloc, false))
	return r
}

// served weighs how much of need the slices serve: each useful slice counts 8 × its compute
// slices + its memory slices (mig.Plan's weight).
func served(m *mig.GPUModel, need, have map[mig.MIGProfile]int) int {
	total := 0
	for p, k := range need {
		pr, ok := m.Profile(p)
		if !ok {
			continue
		}
		total += min(k, have[p]) * (8*pr.ComputeSlices + pr.MemorySlices)
	}
	return total
}

// assignKeepingSame puts the planned layouts on the freeable GPUs, each GPU keeping its layout
// when a planned one equals it, so that as few GPUs as possible change.
func assignKeepingSame(perGPU []mig.Layout, free []int, planned []mig.Layout) {
	left := slices.Clone(planned)
	var open []int
	for _, i := range free {
		j := slices.IndexFunc(left, func(l mig.Layout) bool { return slices.Equal(l.Profiles, perGPU[i].Profiles) })
		if j >= 0 {
			left = slices.Delete(left, j, j+1)
			continue
		}
		open = append(open, i)
	}
	for k, i := range open {
		perGPU[i] = left[k]
	}
}

// relayoutPlans returns the planned re-layouts that pods use: a re-layout no pod planned onto the
// node needs (its pods fit elsewhere after all) is left out, which is safe because the node's
// other placements never used the slices it removed.
func (s *state) relayoutPlans() []api.NodeRelayout {
	var out []api.NodeRelayout
	for _, r := range s.relayouts {
		var pods []string
		for _, pi := range r.node.pods {
			for p := range r.added {
				if i, ok := s.dims.index[corev1.ResourceName(mig.ResourceName(p))]; ok && pi.req[i] > 0 {
					pods = append(pods, pi.key)
					break
				}
			}
		}
		if len(pods) == 0 {
			continue
		}
		slices.Sort(pods)
		perGPU := make([][]mig.MIGProfile, len(r.after))
		layout := make([][]string, len(r.after))
		for i, l := range r.after {
			perGPU[i] = l.Profiles
			for _, p := range l.Profiles {
				layout[i] = append(layout[i], string(p))
			}
		}
		config := r.model.ConfigName(r.after)
		out = append(out, api.NodeRelayout{Node: r.node.name, Pool: r.node.labels[api.LabelPool], GPUs: r.changed, Layout: layout,
			MIGConfig: config, MigPartedConfig: mig.MigPartedConfig(config, perGPU), Allocatable: r.alloc, Pods: pods})
	}
	return out
}
