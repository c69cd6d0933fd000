package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// DRA in the simulation. Whether claims fit a node is decided only by simulator/dra, which runs
// kube-scheduler's structured allocator; this file resolves what each pending pod asks for and
// which ResourceSlices each node has, filter_dra.go filters, allocates and undoes.
//
//   - Existing nodes use their real slices (the snapshot's, already in the allocator). An
//     in-flight node whose driver has not published yet gets the slices its type will publish.
//   - A new node of a GPU type gets dra.Slices(node, type, mode, consumable) in the mode
//     dra.PublishMode gives its pool's GPU configuration: DynamicMIG in a dynamic-mig pool, else
//     Full; consumable when the pool's gpu.consumableMemory is set. Types without GPUs and
//     statically partitioned MIG pools publish none (the driver would publish the MIG devices,
//     which are not modelled). These are dra.NodeSlices of the node, which cloudprovider/sim
//     publishes on the node launched for the plan.
//   - Extended resources a DeviceClass serves (spec.extendedResourceName, e.g. nvidia.com/gpu)
//     count as resources on a node that advertises them (the device plugin wins) and become a
//     claim, dra.Allocator.ExtendedResourceClaim, on a node that does not.

// draState is the simulation's DRA working set: one allocator for every Fit and Commit.
type draState struct {
	alloc *dra.Allocator
	index *dra.ClaimIndex
	// extNames are the extended resources DeviceClasses serve; extDims their dimensions among
	// those the pending pods request.
	extNames map[corev1.ResourceName]bool
	extDims  []int
	// nodesWithSlices are the nodes the snapshot has ResourceSlices for. clusterSlices reports
	// slices bound to no single node: their devices are shared by every node, so results on an
	// empty node are not cached.
	nodesWithSlices map[string]bool
	clusterSlices   bool
	// noMemo turns off what a node's version remembers (memoOf, replays): Options.noDRAMemo,
	// for the test that plans do not depend on it.
	noMemo bool
	// classes are the distinct (slices, advertised extended resources) of offerings; every DRA
	// answer about a new node depends on its offering only through the class.
	classes  []offeringClass
	classIDs map[offeringClass]int
	// slices caches the synthesized slices by node name and class.
	slices map[sliceRef][]*resourcev1.ResourceSlice
	// sigs interns claim-set signatures; empty caches, per (signature, class), the result of
	// fitting the claims on an empty new node; valid holds the claim specs found valid.
	sigs  map[string]int
	empty map[[2]int]emptyFit
	valid map[string]bool
	// owner is the node each claim the simulation allocated is allocated on.
	owner map[string]*simNode
	// epoch numbers the versions of nodes' allocations and DRA pods (nodeDRA.ver, podsVer).
	epoch int
}

// offeringClass is what DRA sees of an offering: the slices a node of it publishes and which of
// the DRA-served extended resources it advertises itself.
type offeringClass struct {
	it         *catalog.InstanceType // nil: the node publishes no slices
	mode       dra.Mode
	consumable bool
	advertised uint64 // bit i: extDims[i] is allocatable on the node
}

type sliceRef struct {
	node  string
	class int
}

type emptyFit struct{ reason *dra.Reason }

// podClaims is what a pending pod asks of DRA.
type podClaims struct {
	// claims are its spec.resourceClaims, resolved (existing or generated from templates), each
	// once.
	claims []*resourcev1.ResourceClaim
	// spec is the signature of the claims' specs.
	spec string
	// ext are the pod's requested extended resources that a DeviceClass can serve, by index
	// into draState.extDims.
	ext []int
	// sets caches the claims needed on a node by the node's advertised mask.
	sets map[uint64]*claimSet
	// devices estimates how many devices the claims take, for the placement order.
	devices int
}

// claimSet is the claims a pod needs on one kind of node, and their interned signature.
type claimSet struct {
	claims []*resourcev1.ResourceClaim
	sig    int
}

// draNeeded reports whether some pending pod uses DRA: it names claims, or requests an extended
// resource a DeviceClass serves.
func (s *state) draNeeded(ext map[corev1.ResourceName]bool) bool {
	for _, pi := range s.pending {
		if len(pi.pod.Spec.ResourceClaims) > 0 {
			return true
		}
		for name, i := range s.dims.index {
			if ext[name] && pi.req[i] > 0 {
				return true
			}
		}
	}
	return false
}

// extendedResourceNames lists the extended resources the classes serve: each class's
// spec.extendedResourceName and the implicit deviceclass.resource.kubernetes.io/<class>.
func extendedResourceNames(classes []*resourcev1.DeviceClass) map[corev1.ResourceName]bool {
	out := map[corev1.ResourceName]bool{}
	for _, c := range classes {
		if c == nil {
			continue
		}
		if c.Spec.ExtendedResourceName != nil {
			out[corev1.ResourceName(*c.Spec.ExtendedResourceName)] = true
		}
		out[corev1.ResourceName(resourcev1.ResourceDeviceClassPrefix+c.Name)] = true
	}
	return out
}

// setupDRA builds the allocator from the snapshot's DeviceClasses, ResourceSlices and
// ResourceClaims and resolves every pending pod's claims. A pod whose claims cannot be resolved
// (a missing template or claim) or validated (a missing DeviceClass, a CEL expression that does
// not compile) gets api.InvalidRequest and leaves the pending list. Without DRA pods it does nothing,
// so the rest of the simulation pays nothing for DRA.
func (s *state) setupDRA() error {
	snap := s.in.Snapshot
	ext := extendedResourceNames(snap.DeviceClasses)
	if !s.draNeeded(ext) {
		return nil
	}
	alloc, err := dra.NewAllocator(snap.DeviceClasses, snap.ResourceSlices, snap.ResourceClaims)
	if err != nil {
		return fmt.Errorf("simulate: snapshot DRA objects: %w", err)
	}
	d := &draState{alloc: alloc, index: dra.NewClaimIndex(snap.ResourceClaims, snap.ResourceClaimTemplates),
		extNames: ext, nodesWithSlices: map[string]bool{}, classIDs: map[offeringClass]int{},
		slices: map[sliceRef][]*resourcev1.ResourceSlice{}, sigs: map[string]int{}, empty: map[[2]int]emptyFit{},
		valid: map[string]bool{}, owner: map[string]*simNode{}, noMemo: s.in.Options.noDRAMemo}
	for _, sl := range snap.ResourceSlices {
		if sl.Spec.NodeName != nil && *sl.Spec.NodeName != "" {
			d.nodesWithSlices[*sl.Spec.NodeName] = true
		} else {
			d.clusterSlices = true
		}
	}
	for i, name := range s.dims.names {
		if ext[name] {
			d.extDims = append(d.extDims, i)
		}
	}
	if len(d.extDims) > 64 {
		return fmt.Errorf("simulate: pods request %d extended resources that DeviceClasses serve; at most 64 are supported", len(d.extDims))
	}
	s.dra = d
	for _, o := range s.offerings {
		mode, consumable, publishes := dra.PublishMode(o.gpu)
		o.draClass = s.classOf(o.it, publishes, mode, consumable, o.alloc)
	}
	valid := s.pending[:0]
	for _, pi := range s.pending {
		if err := s.resolveClaims(pi); err != nil {
			s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.InvalidRequest, Reason: err.Error()}
			continue
		}
		valid = append(valid, pi)
	}
	s.pending = valid
	for c := range d.classes {
		if d.orderSensitive(c) {
			for _, pi := range s.pending {
				pi.schedOrder = pi.dra != nil
			}
			break
		}
	}
	return nil
}

// classOf interns the DRA class of a node of the type whose allocatable is alloc.
func (s *state) classOf(it *catalog.InstanceType, publishes bool, mode dra.Mode, consumable bool, alloc vec) int {
	c := offeringClass{mode: mode, consumable: consumable}
	if publishes && it != nil && it.GPU.Count > 0 {
		c.it = it
	} else {
		c.mode, c.consumable = dra.Full, false
	}
	for i, dim := range s.dra.extDims {
		if dim < len(alloc) && alloc[dim] > 0 {
			c.advertised |= 1 << i
		}
	}
	if id, ok := s.dra.classIDs[c]; ok {
		return id
	}
	s.dra.classIDs[c] = len(s.dra.classes)
	s.dra.classes = append(s.dra.classes, c)
	return len(s.dra.classes) - 1
}

// hasSlices reports whether nodes of the class publish slices.
func (d *draState) hasSlices(class int) bool { return d.classes[class].it != nil }

// slicesFor returns the slices a new node of the class publishes, built once per node.
func (d *draState) slicesFor(node string, class int) []*resourcev1.ResourceSlice {
	c := d.classes[class]
	if c.it == nil {
		return nil
	}
	ref := sliceRef{node: node, class: class}
	if sl, ok := d.slices[ref]; ok {
		return sl
	}
	sl := dra.Slices(node, c.it, c.mode, c.consumable)
	d.slices[ref] = sl
	return sl
}

// resolveClaims fills pi.dra: the pod's claims, resolved and validated, and the DRA-served
// extended resources it requests. Pods that use neither keep pi.dra nil.
func (s *state) resolveClaims(pi *podInfo) error {
	d := s.dra
	var ext []int
	for i, dim := range d.extDims {
		if pi.req[dim] > 0 {
			ext = append(ext, i)
		}
	}
	if len(pi.pod.Spec.ResourceClaims) == 0 && len(ext) == 0 {
		return nil
	}
	claims, err := d.index.PodClaims(pi.pod)
	if err != nil {
		return fmt.Errorf("resolving the pod's resource claims: %w", err)
	}
	pc := &podClaims{ext: ext, sets: map[uint64]*claimSet{}}
	seen := map[string]bool{}
	var specs []string
	for _, c := range claims {
		key := claimKey(c)
		if seen[key] {
			continue
		}
		seen[key] = true
		pc.claims = append(pc.claims, c)
		b, err := json.Marshal(c.Spec)
		if err != nil {
			return fmt.Errorf("claim %s: encoding its spec: %w", key, err)
		}
		specs = append(specs, string(b))
		pc.devices += claimDevices(c)
	}
	pc.spec = strings.Join(specs, "\x00")
	if r := d.validate(pc); r != nil {
		return errors.New(oneLine(r.String()))
	}
	pi.dra = pc
	return nil
}

// validate checks what makes claims invalid on every node: a request naming a DeviceClass the
// snapshot does not have, a selector that does not compile. It runs the allocator against a node
// without devices, which validates before it allocates. Specs found valid are remembered, so
// pods from one template are checked once; claims that are already allocated are not validated
// (the allocator keeps their allocation).
func (d *draState) validate(pc *podClaims) *dra.Reason {
	var fresh []*resourcev1.ResourceClaim
	for _, c := range pc.claims {
		if c.Status.Allocation == nil {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) == 0 || d.valid[pc.spec] {
		return nil
	}
	node := &corev1.Node{}
	node.Name = "(validation)"
	_, r := d.fit(node, nil, fresh)
	if r != nil && (r.Code == dra.MissingDeviceClass || r.Code == dra.CELError) {
		return r
	}
	d.valid[pc.spec] = true
	return nil
}

// oneLine cuts a message at its first line break: CEL errors go on with a copy of the
// expression and a caret, which would break the table of reasons.
func oneLine(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return strings.TrimSpace(msg[:i])
	}
	return msg
}

// claimDevices estimates the devices a claim takes: ExactCount requests their count, others one
// (All, or the first alternative of a prioritized list).
func claimDevices(c *resourcev1.ResourceClaim) int {
	n := 0
	count := func(mode resourcev1.DeviceAllocationMode, c int64) int {
		if mode == resourcev1.DeviceAllocationModeAll || c <= 0 {
			return 1
		}
		return int(c)
	}
	for _, r := range c.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			n += count(r.Exactly.AllocationMode, r.Exactly.Count)
		case len(r.FirstAvailable) > 0:
			n += count(r.FirstAvailable[0].AllocationMode, r.FirstAvailable[0].Count)
		}
	}
	return n
}

// claimKey identifies a claim: "namespace/name".
func claimKey(c *resourcev1.ResourceClaim) string { return c.Namespace + "/" + c.Name }

// claimsOn returns the claims the pod needs on a node whose allocatable is alloc: its own and,
// when the node does not advertise some extended resource the pod requests and a DeviceClass
// serves, the claim the scheduler makes for those (dra.Allocator.ExtendedResourceClaim).
func (s *state) claimsOn(pi *podInfo, alloc vec) *claimSet {
	var mask uint64
	for _, i := range pi.dra.ext {
		if alloc[s.dra.extDims[i]] > 0 {
			mask |= 1 << i
		}
	}
	return s.claimSet(pi, mask)
}

// specClaims is the pod's own claims, without any for extended resources.
func (s *state) specClaims(pi *podInfo) *claimSet {
	var mask uint64
	for _, i := range pi.dra.ext {
		mask |= 1 << i
	}
	return s.claimSet(pi, mask)
}

// claimSet returns the claims the pod needs on a node that advertises the DRA-served extended
// resources of the mask.
func (s *state) claimSet(pi *podInfo, mask uint64) *claimSet {
	pc := pi.dra
	if cs, ok := pc.sets[mask]; ok {
		return cs
	}
	cs := &claimSet{claims: pc.claims}
	sig := pc.spec
	if served := s.dra.servedBy(pc, mask); len(served) > 0 {
		node := &corev1.Node{}
		node.Status.Allocatable = corev1.ResourceList{}
		for _, i := range pc.ext {
			if mask&(1<<i) != 0 {
				node.Status.Allocatable[s.dims.names[s.dra.extDims[i]]] = *resource.NewQuantity(1, resource.DecimalSI)
			}
		}
		if c := s.dra.alloc.ExtendedResourceClaim(pi.pod, node); c != nil {
			cs.claims = append(append([]*resourcev1.ResourceClaim(nil), pc.claims...), c)
			b, _ := json.Marshal(c.Spec)
			sig += "\x00ext:" + string(b)
		}
	}
	id, ok := s.dra.sigs[sig]
	if !ok {
		id = len(s.dra.sigs)
		s.dra.sigs[sig] = id
	}
	cs.sig = id
	pc.sets[mask] = cs
	return cs
}

// servedBy lists the pod's DRA-servable extended resources that a node with the advertised mask
// does not advertise.
func (d *draState) servedBy(pc *podClaims, mask uint64) []int {
	var out []int
	for _, i := range pc.ext {
		if mask&(1<<i) == 0 {
			out = append(out, i)
		}
	}
	return out
}

// allocated reports whether the claim already has an allocation: in the snapshot, or made by
// this simulation.
func (d *draState) allocated(c *resourcev1.ResourceClaim) bool {
	if c.Status.Allocation != nil {
		return true
	}
	_, ok := d.owner[claimKey(c)]
	return ok
}

func (d *draState) anyAllocated(claims []*resourcev1.ResourceClaim) bool {
	for _, c := range claims {
		if d.allocated(c) {
			return true
		}
	}
	return false
}

// pinned explains why the pod can only go where one of its claims is already allocated: a claim
// this simulation allocated on a node (shared claims), or one the snapshot allocated for some
// nodes. It returns the node (nil for a snapshot allocation) and "" when no claim pins the pod.
func (d *draState) pinned(pi *podInfo) (*simNode, string) {
	if pi.dra == nil {
		return nil, ""
	}
	for _, c := range pi.dra.claims {
		if n, ok := d.owner[claimKey(c)]; ok {
			return n, fmt.Sprintf("claim %s is allocated on node %s", claimKey(c), n.name)
		}
		if a := c.Status.Allocation; a != nil && a.NodeSelector != nil {
			return nil, fmt.Sprintf("claim %s is already allocated (status.allocation) for other nodes", claimKey(c))
		}
	}
	return nil, ""
}

// probeNode is the node empty-node fits run on: named after the class so that reasons read
// "on node (new p4d.24xlarge)". Nothing is ever committed in its pool.
func (d *draState) probeNode(class int) *corev1.Node {
	c := d.classes[class]
	name := "(new node without DRA devices)"
	if c.it != nil {
		name = "(new " + string(c.it.Name)
		if c.mode == dra.DynamicMIG {
			name += ", dynamic MIG"
		}
		if c.consumable {
			name += ", consumable memory"
		}
		name += ")"
	}
	n := &corev1.Node{}
	n.Name = name
	return n
}

// fit runs the allocator. An error of Fit (a bug: nil input) becomes a reason, so that one bad
// claim cannot stop the simulation.
func (d *draState) fit(node *corev1.Node, slices []*resourcev1.ResourceSlice, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, *dra.Reason) {
	results, r, err := d.alloc.Fit(node, slices, claims)
	if err != nil {
		return nil, &dra.Reason{Code: dra.InvalidClaim, Message: err.Error()}
	}
	return results, r
}

// emptyReason fits the claim set on an empty new node of the class and returns why it does not
// fit, or nil. Results are cached per (claims signature, class) unless some claim is already
// allocated or cluster-wide slices make the answer depend on what is allocated elsewhere.
func (s *state) emptyReason(cs *claimSet, class int) *dra.Reason {
	if len(cs.claims) == 0 {
		return nil
	}
	d := s.dra
	cacheable := !d.clusterSlices && !d.anyAllocated(cs.claims)
	key := [2]int{cs.sig, class}
	if cacheable {
		if f, ok := d.empty[key]; ok {
			return f.reason
		}
	}
	r := d.fitEmpty(cs.claims, class)
	if cacheable {
		d.empty[key] = emptyFit{reason: r}
	}
	return r
}

// fitEmpty fits the claims on an empty node of DRA class class, uncached, and returns why they
// do not fit (nil when they do).
func (d *draState) fitEmpty(claims []*resourcev1.ResourceClaim, class int) *dra.Reason {
	node := d.probeNode(class)
	_, r := d.fit(node, d.slicesFor(node.Name, class), claims)
	return r
}

// specReason is emptyReason for the claims' specs, whatever is allocated now: copies of the
// claims without allocation are fitted (and the answer cached like emptyReason's). The lower
// bound uses it: a pod placed by the plan has its own claims allocated. With cluster-wide slices
// the answer would depend on other allocations, and it is nil (fits), which only weakens the
// bound.
func (s *state) specReason(cs *claimSet, class int) *dra.Reason {
	d := s.dra
	if len(cs.claims) == 0 || d.clusterSlices {
		return nil
	}
	key := [2]int{cs.sig, class}
	if f, ok := d.empty[key]; ok {
		return f.reason
	}
	fresh := make([]*resourcev1.ResourceClaim, len(cs.claims))
	for i, c := range cs.claims {
		cp := c.DeepCopy()
		cp.Name += "-spec"
		cp.Status = resourcev1.ResourceClaimStatus{}
		fresh[i] = cp
	}
	node := d.probeNode(class)
	_, r := d.fit(node, d.slicesFor(node.Name, class), fresh)
	d.empty[key] = emptyFit{reason: r}
	return r
}

// claimAllocations renders a node's allocations for the plan, sorted by claim.
func claimAllocations(node string, commits []claimCommit) []api.ClaimAllocation {
	out := make([]api.ClaimAllocation, 0, len(commits))
	for _, c := range commits {
		ca := api.ClaimAllocation{Claim: claimKey(c.claim), Devices: []string{}}
		for _, r := range c.result.Devices.Results {
			dev := r.Device
			if r.Pool != node {
				dev = r.Pool + "/" + dev
			}
			if strings.Contains(r.Request, "/") {
				dev += " (" + r.Request + ")"
			}
			if len(r.ConsumedCapacity) > 0 {
				names := make([]string, 0, len(r.ConsumedCapacity))
				for name := range r.ConsumedCapacity {
					names = append(names, string(name))
				}
				sort.Strings(names)
				var parts []string
				for _, name := range names {
					q := r.ConsumedCapacity[resourcev1.QualifiedName(name)]
					parts = append(parts, name+"="+q.String())
				}
				dev += " [" + strings.Join(parts, ",") + "]"
			}
			ca.Devices = append(ca.Devices, dev)
		}
		out = append(out, ca)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Claim < out[j].Claim })
	return out
}

// claimDeviceNeed is the least number of devices the pods' claims take together, each claim
// counted once (shared claims): what the lower bound may charge for. Claims the snapshot already
// allocated are left out, and so is everything when cluster-wide slices could serve devices
// off the node.
func (s *state) claimDeviceNeed(pods []*podInfo) int {
	if s.dra == nil || s.dra.clusterSlices {
		return 0
	}
	seen := map[string]bool{}
	need := 0
	for _, pi := range pods {
		if pi.dra == nil {
			continue
		}
		for _, c := range pi.dra.claims {
			if seen[claimKey(c)] || c.Status.Allocation != nil {
				continue
			}
			seen[claimKey(c)] = true
			need += minDevices(c)
		}
	}
	return need
}

// minDevices is the least number of devices the claim can be allocated: ExactCount requests
// take their count, prioritized lists the least of their alternatives; All requests (which may
// match few devices) and admin-access requests (whose devices stay free) count nothing.
func minDevices(c *resourcev1.ResourceClaim) int {
	count := func(mode resourcev1.DeviceAllocationMode, n int64) int {
		switch {
		case mode == resourcev1.DeviceAllocationModeAll:
			return 0
		case n <= 0:
			return 1 // the API server's default
		}
		return int(n)
	}
	total := 0
	for _, r := range c.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			if r.Exactly.AdminAccess == nil || !*r.Exactly.AdminAccess {
				total += count(r.Exactly.AllocationMode, r.Exactly.Count)
			}
		case len(r.FirstAvailable) > 0:
			least := -1
			for _, sub := range r.FirstAvailable {
				if n := count(sub.AllocationMode, sub.Count); least < 0 || n < least {
					least = n
				}
			}
			total += least
		}
	}
	return total
}

// deviceCapacity bounds how many devices claims can be allocated, exclusively, on a node of the
// offering: its GPUs, or seven MIG partitions per GPU under dynamic MIG (MIG GPUs have at most
// seven instances; the whole-GPU device uses them all). It is unbounded (false) when devices
// allow multiple allocations (consumable memory).
func (d *draState) deviceCapacity(o *offering) (int, bool) {
	c := d.classes[o.draClass]
	switch {
	case c.it == nil:
		return 0, true
	case c.consumable:
		return 0, false
	case c.mode == dra.DynamicMIG:
		return 7 * c.it.GPU.Count, true
	}
	return c.it.GPU.Count, true
}
