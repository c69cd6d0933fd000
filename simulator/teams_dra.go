package simulator

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// GPUs held through DRA claims count in a team's limits.gpus and limits.migProfiles, as
// nvidia.com/gpu and nvidia.com/mig-<profile> requests do: each device of the NVIDIA DRA driver
// (dra.DriverName) once per team, however many of its claims share it (time-slicing, a share of
// its memory), a whole GPU in gpus and a MIG partition in migProfiles under its profile. A device
// is told by its ResourceSlice's attributes (type gpu or mig, profile); a device of the driver
// whose slice the snapshot lacks counts as a whole GPU, and devices of other types or drivers
// count nothing. The claims the scheduler makes for DRA-served extended resources are left out:
// their pods' nvidia.com/gpu requests count already.
//
// The claims the snapshot has allocated count before any pending pod is admitted
// (countAllocatedClaims). What the plan allocates to the admitted pods' claims is known only
// once it is made, so it is checked on the plan (dropOverDRALimits): a team over a limit has its
// pods that take such devices dropped, lowest priority first, until it is within it, and the
// simulation runs again.

// Kinds of DRA devices, as deviceKinds reports them.
const (
	kindGPU   = "gpu"
	kindOther = "other"
	kindMIG   = "mig:" // followed by the profile
)

// deviceKinds adds to kinds, by "pool/device", the kind of each device of the driver in slices.
func deviceKinds(slices []*resourcev1.ResourceSlice, kinds map[string]string) {
	for _, s := range slices {
		if s.Spec.Driver != dra.DriverName {
			continue
		}
		for _, d := range s.Spec.Devices {
			kind := kindOther
			switch attrString(d, "type") {
			case "gpu":
				kind = kindGPU
			case "mig":
				kind = kindMIG + attrString(d, "profile")
			}
			kinds[s.Spec.Pool.Name+"/"+d.Name] = kind
		}
	}
}

// attrString is the string attribute name of the device, under the driver's domain or bare.
func attrString(d resourcev1.Device, name string) string {
	for _, key := range []resourcev1.QualifiedName{resourcev1.QualifiedName(name), resourcev1.QualifiedName(dra.DriverName + "/" + name)} {
		if v, ok := d.Attributes[key]; ok && v.StringValue != nil {
			return *v.StringValue
		}
	}
	return ""
}

// kindOf is the kind of the device "pool/device": a whole GPU when no slice says.
func kindOf(kinds map[string]string, key string) string {
	if k, ok := kinds[key]; ok {
		return k
	}
	return kindGPU
}

// countAllocatedClaims adds the driver's devices of the snapshot's allocated claims to their
// namespaces' teams.
func (a *admission) countAllocatedClaims(snap *snapshot.Snapshot) error {
	kinds := map[string]string{}
	deviceKinds(snap.ResourceSlices, kinds)
	for _, c := range snap.ResourceClaims {
		if c.Status.Allocation == nil || c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] == "true" {
			continue
		}
		t, err := a.index.of(c.Namespace)
		if err != nil {
			return err
		}
		if t == nil {
			continue
		}
		tu := a.teams[t.Name]
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == dra.DriverName {
				tu.addDevice(r.Pool+"/"+r.Device, kindOf(kinds, r.Pool+"/"+r.Device))
			}
		}
	}
	return nil
}

// addDevice counts a DRA device the team holds, once.
func (tu *teamUse) addDevice(key, kind string) {
	if tu.dra == nil {
		tu.dra = map[string]string{}
	}
	if _, held := tu.dra[key]; held {
		return
	}
	tu.dra[key] = kind
	switch {
	case kind == kindGPU:
		tu.gpus++
	case strings.HasPrefix(kind, kindMIG):
		tu.mig[strings.TrimPrefix(kind, kindMIG)]++
	}
}

// plannedDevices returns, for each admitted pod the plan places, the driver's devices the plan
// allocates to its claims that its team does not hold already, with their kinds.
func plannedDevices(in Input, a *admission, plan *api.Plan, admitted []*corev1.Pod) (map[string]map[string]string, error) {
	byClaim := planClaims(plan)
	if len(byClaim) == 0 {
		return nil, nil
	}
	kinds := map[string]string{} // of the snapshot's slices and the new nodes'
	newNodes := map[string]*catalog.InstanceType{}
	for _, nn := range plan.NewNodes {
		if len(nn.Claims) > 0 {
			if it, ok := in.Catalog.Type(nn.InstanceType); ok {
				newNodes[nn.Name] = it
			}
		}
	}
	deviceKinds(in.Snapshot.ResourceSlices, kinds)
	for name, it := range newNodes {
		// A new node's devices as the driver would publish them, whole GPUs and MIG partitions.
		deviceKinds(dra.Slices(name, it, dra.Full, false), kinds)
		deviceKinds(dra.Slices(name, it, dra.DynamicMIG, false), kinds)
	}
	index := dra.NewClaimIndex(in.Snapshot.ResourceClaims, in.Snapshot.ResourceClaimTemplates)
	out := map[string]map[string]string{}
	for _, p := range admitted {
		tu, err := a.teamOf(p)
		if err != nil {
			return nil, err
		}
		if tu == nil || len(p.Spec.ResourceClaims) == 0 {
			continue
		}
		claims, err := index.PodClaims(p)
		if err != nil {
			continue // the simulation reports the pod's claims
		}
		for _, c := range claims {
			if c.Status.Allocation != nil || c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] == "true" {
				continue
			}
			for _, d := range byClaim[claimKey(c)] {
				key := d.key()
				if _, held := tu.dra[key]; held || kindOf(kinds, key) == kindOther {
					continue
				}
				if out[podKey(p)] == nil {
					out[podKey(p)] = map[string]string{}
				}
				out[podKey(p)][key] = kindOf(kinds, key)
			}
		}
	}
	return out, nil
}

// dropOverDRALimits checks the GPUs and MIG partitions the plan allocates to the teams' claims
// against their limits, and blocks, for every team over one, its pods that take such devices from
// the lowest priority up until it is within. It reports whether it blocked any.
func dropOverDRALimits(c *planCheck, blocked map[string]api.UnschedulablePod) (bool, error) {
	a := c.a
	limited := false
	for _, tu := range a.teams {
		if tu.team.Limits.GPUs != nil || len(tu.team.Limits.MIGProfiles) > 0 {
			limited = true
		}
	}
	if !limited {
		return false, nil
	}
	devs, err := c.planned()
	if err != nil || len(devs) == 0 {
		return false, err
	}
	dropped := false
	for _, name := range sortedKeys(a.teams) {
		tu := a.teams[name]
		l := tu.team.Limits
		// What the team takes: its count at admission, less the nvidia.com/gpu and MIG requests
		// of its pods blocked since (an earlier check, an earlier pass), plus each planned device
		// once however many of its pods take it.
		gpus, mig := tu.gpus, map[string]int64{}
		for prof, n := range tu.mig {
			mig[prof] = n
		}
		release := func(p *corev1.Pod) {
			for r, q := range podRequests(p) {
				if r == api.ResourceGPU {
					gpus -= q.Value()
				} else if prof, ok := strings.CutPrefix(string(r), "nvidia.com/mig-"); ok {
					mig[prof] -= q.Value()
				}
			}
		}
		count := func(kind string, n int64) {
			if kind == kindGPU {
				gpus += n
			} else if prof, ok := strings.CutPrefix(kind, kindMIG); ok {
				mig[prof] += n
			}
		}
		var pods []*corev1.Pod // with planned devices, highest priority first
		refs := map[string]int{}
		for _, p := range c.admitted {
			if t, _ := a.teamOf(p); t != tu {
				continue
			}
			k := podKey(p)
			if _, gone := blocked[k]; gone {
				release(p)
				continue
			}
			if len(devs[k]) == 0 {
				continue
			}
			pods = append(pods, p)
			for key, kind := range devs[k] {
				if refs[key]++; refs[key] == 1 {
					count(kind, 1)
				}
			}
		}
		over := func() string {
			if l.GPUs != nil && gpus > int64(*l.GPUs) {
				return fmt.Sprintf("team %s is at its limit limits.gpus %d: %d GPUs in use or planned with the plan's DRA claims", name, *l.GPUs, gpus)
			}
			for _, prof := range sortedKeys(l.MIGProfiles) {
				if n := mig[prof]; n > int64(l.MIGProfiles[prof]) {
					return fmt.Sprintf("team %s is at its limit limits.migProfiles[%s] %d: %d in use or planned with the plan's DRA claims", name, prof, l.MIGProfiles[prof], n)
				}
			}
			return ""
		}
		for i := len(pods) - 1; i >= 0; i-- {
			reason := over()
			if reason == "" {
				break
			}
			k := podKey(pods[i])
			blocked[k] = api.UnschedulablePod{Pod: k, Code: api.TeamLimitExceeded, Reason: reason}
			dropped = true
			release(pods[i])
			for key, kind := range devs[k] {
				if refs[key]--; refs[key] == 0 {
					count(kind, -1)
				}
			}
		}
	}
	return dropped, nil
}

// plannedDevice is a device a plan allocates to a claim (planDevice).
type plannedDevice struct {
	pool, name string
	consumed   map[resourcev1.QualifiedName]resource.Quantity
}

// key is the device as "pool/device".
func (d plannedDevice) key() string { return d.pool + "/" + d.name }

// planClaims returns the devices the plan allocates, by claim ("namespace/name").
func planClaims(plan *api.Plan) map[string][]plannedDevice {
	out := map[string][]plannedDevice{}
	add := func(node string, claims []api.ClaimAllocation) {
		for _, ca := range claims {
			for _, text := range ca.Devices {
				pool, name, consumed := planDevice(node, text)
				out[ca.Claim] = append(out[ca.Claim], plannedDevice{pool: pool, name: name, consumed: consumed})
			}
		}
	}
	for _, nn := range plan.NewNodes {
		add(nn.Name, nn.Claims)
	}
	for _, en := range plan.ExistingNodes {
		add(en.Name, en.Claims)
	}
	return out
}

// planDevice parses a device of a plan's ClaimAllocation on node (claimAllocations' format): its
// pool (the node's unless it is prefixed), its name, and the capacity it consumes of a shared
// device (" [memory=10Gi]"); " (alternative)" is skipped.
func planDevice(node, s string) (pool, device string, consumed map[resourcev1.QualifiedName]resource.Quantity) {
	device, rest, _ := strings.Cut(s, " ")
	pool = node
	if p, name, ok := strings.Cut(device, "/"); ok {
		pool, device = p, name
	}
	if _, caps, ok := strings.Cut(rest, "["); ok {
		caps, _, _ = strings.Cut(caps, "]")
		for _, kv := range strings.Split(caps, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if q, err := resource.ParseQuantity(v); ok && err == nil {
				if consumed == nil {
					consumed = map[resourcev1.QualifiedName]resource.Quantity{}
				}
				consumed[resourcev1.QualifiedName(k)] = q
			}
		}
	}
	return pool, device, consumed
}

// allocatePlanned returns the snapshot's claims with those of the placed pods (bound to their
// planned nodes) allocated the devices the plan gives them and reserved for the pods: a claim
// already allocated is only reserved for them too; a template's claim that does not exist yet is
// added. The devices' driver is their slice's, the NVIDIA driver's on a new node.
func allocatePlanned(snap *snapshot.Snapshot, plan *api.Plan, placed []*corev1.Pod) []*resourcev1.ResourceClaim {
	byClaim := planClaims(plan)
	if len(byClaim) == 0 {
		return snap.ResourceClaims
	}
	drivers := map[string]string{}
	for _, s := range snap.ResourceSlices {
		for _, d := range s.Spec.Devices {
			drivers[s.Spec.Pool.Name+"/"+d.Name] = s.Spec.Driver
		}
	}
	index := dra.NewClaimIndex(snap.ResourceClaims, snap.ResourceClaimTemplates)
	changed := map[string]*resourcev1.ResourceClaim{}
	var order []string
	for _, p := range placed {
		claims, err := index.PodClaims(p)
		if err != nil {
			continue // the simulation reported the pod's claims
		}
		for _, c := range claims {
			key := claimKey(c)
			devs, planned := byClaim[key]
			if !planned && c.Status.Allocation == nil {
				continue
			}
			cc, ok := changed[key]
			if !ok {
				cc = c.DeepCopy()
				changed[key] = cc
				order = append(order, key)
				if cc.Status.Allocation == nil {
					cc.Status.Allocation = &resourcev1.AllocationResult{}
					for _, d := range devs {
						driver, known := drivers[d.key()]
						if !known {
							driver = dra.DriverName
						}
						cc.Status.Allocation.Devices.Results = append(cc.Status.Allocation.Devices.Results,
							resourcev1.DeviceRequestAllocationResult{Driver: driver, Pool: d.pool, Device: d.name, ConsumedCapacity: d.consumed})
					}
				}
			}
			cc.Status.ReservedFor = append(cc.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
		}
	}
	out := make([]*resourcev1.ResourceClaim, 0, len(snap.ResourceClaims)+len(changed))
	for _, c := range snap.ResourceClaims {
		if cc, ok := changed[claimKey(c)]; ok {
			out = append(out, cc)
			delete(changed, claimKey(c))
			continue
		}
		out = append(out, c)
	}
	for _, key := range order {
		if cc, ok := changed[key]; ok {
			out = append(out, cc) // a template's claim the snapshot does not have yet
		}
	}
	return out
}
