package simulator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// Team limits and namespace quotas.
//
// Simulate admits the pending pods before it plans, in placement order (higher priority first,
// then input order), and plans only for the admitted ones; the others are reported unschedulable
// and never placed, on new nodes or existing ones:
//
//   - a ResourceQuota of the pod's namespace (one without scopes) would be exceeded: QuotaExceeded.
//     Its hard limits on requests (requests.<resource>, and cpu, memory, ephemeral-storage which
//     mean requests) and on pods are checked against what the namespace's active pods request in
//     the snapshot plus the pods admitted before it. Limits (limits.*) and object counts are not
//     checked. The API server normally refuses a pod beyond quota at creation; this catches quotas
//     lowered afterwards and keeps Tiler from buying for them.
//   - the pod's team (policy teams) would exceed limits.gpus (nvidia.com/gpu requested by the
//     team's active pods plus its admitted pending pods, and the GPUs its allocated DRA claims
//     hold) or limits.migProfiles (nvidia.com/mig-<profile> alike): TeamLimitExceeded.
//
// A team's limits.maxPricePerHour and limits.maxNodes depend on the plan, so they are checked on
// it: the plan is applied to the snapshot (new nodes registered with their labels and allocatable,
// planned pods bound) and
//
//   - a team's $/h is the sum of its pods' chargeback shares (Chargeback's rule: each priced
//     node's price shared by the scarcest resource, GPUs first) over every priced node, existing
//     and new;
//   - a team's nodes are the nodes holding at least one of its active pods.
//
// When a team is over either, its admitted pods planned onto new nodes are dropped, lowest
// priority (last in placement order) first, until their $/h share covers the excess and the new
// nodes they alone hold cover the excess nodes; they are reported TeamLimitExceeded and the
// simulation runs again, until no team is over or none has a pod on a new node left to drop (a team
// over its limit by what already runs is not cut further: nothing is bought for it). Dropping is
// greedy, so a team may end below its limit by about one pod's share. GPUs and MIG partitions
// held through DRA claims count in limits.gpus and limits.migProfiles: allocated ones before the
// admission, those the plan allocates on the plan (teams_dra.go).
//
// Gated pods (spec.schedulingGates, e.g. Kueue's admission gate) are not pending
// (snapshot.IsPending) and never planned for.

// needsAdmission reports whether the simulation must admit pods against teams or quotas.
func needsAdmission(in Input) bool {
	if in.Snapshot == nil || in.Catalog == nil {
		return false
	}
	return in.Policy != nil && len(in.Policy.Teams) > 0 || len(in.Snapshot.ResourceQuotas) > 0
}

// teamIndex resolves namespaces to teams, with the snapshot's Namespace labels.
type teamIndex struct {
	resolver *policy.TeamResolver
	labels   map[string]map[string]string
}

func newTeamIndex(pol *policy.CostPolicy, snap *snapshot.Snapshot) *teamIndex {
	if pol == nil || len(pol.Teams) == 0 {
		return nil
	}
	t := &teamIndex{resolver: pol.NewTeamResolver(), labels: map[string]map[string]string{}}
	for _, ns := range snap.Namespaces {
		l := ns.Labels
		if l == nil {
			l = map[string]string{}
		}
		t.labels[ns.Name] = l
	}
	return t
}

// of returns the namespace's team (nil: none, or no teams).
func (t *teamIndex) of(ns string) (*policy.Team, error) {
	if t == nil {
		return nil, nil
	}
	return t.resolver.TeamOf(ns, t.labels[ns])
}

// poolAllowed reports whether a pod whose team may buy from pools (nil: all) may use pool.
func poolAllowed(pools []string, pool string) bool {
	return pools == nil || slices.Contains(pools, pool)
}

// quotaUse is one ResourceQuota's hard limits and what is counted against them.
type quotaUse struct {
	q    *corev1.ResourceQuota
	hard map[corev1.ResourceName]resource.Quantity // by the pod resource it bounds ("pods" for pods)
	used map[corev1.ResourceName]*resource.Quantity
}

// teamUse is what a team's pods request of the limits counted on requests.
type teamUse struct {
	team *policy.Team
	gpus int64
	mig  map[string]int64
	// dra holds the DRA devices ("pool/device") counted in gpus and mig, with their kinds
	// (teams_dra.go).
	dra map[string]string
}

// admission is the pre-simulation check of pods against quotas and team limits.
type admission struct {
	quotas   map[string][]*quotaUse // by namespace
	teams    map[string]*teamUse    // by team name
	index    *teamIndex
	warnings []string
	// steer lists, by pod, the GPU models its team's limits.gpusByModel keeps it off, with why
	// (teams_models.go).
	steer map[string]*steering
}

func quotaResource(name corev1.ResourceName) (corev1.ResourceName, bool) {
	switch {
	case name == corev1.ResourcePods:
		return name, true
	case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage:
		return name, true
	case strings.HasPrefix(string(name), "requests."):
		return corev1.ResourceName(strings.TrimPrefix(string(name), "requests.")), true
	}
	return "", false
}

func newAdmission(in Input, pol *policy.CostPolicy) (*admission, error) {
	a := &admission{quotas: map[string][]*quotaUse{}, teams: map[string]*teamUse{}, index: newTeamIndex(pol, in.Snapshot)}
	for _, q := range in.Snapshot.ResourceQuotas {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			a.warnings = append(a.warnings, fmt.Sprintf("ResourceQuota %s/%s has scopes, which the simulation does not evaluate; ignored", q.Namespace, q.Name))
			continue
		}
		u := &quotaUse{q: q, hard: map[corev1.ResourceName]resource.Quantity{}, used: map[corev1.ResourceName]*resource.Quantity{}}
		for name, qty := range q.Spec.Hard {
			if r, ok := quotaResource(name); ok {
				u.hard[r] = qty
				u.used[r] = resource.NewQuantity(0, qty.Format)
			}
		}
		if len(u.hard) > 0 {
			a.quotas[q.Namespace] = append(a.quotas[q.Namespace], u)
		}
	}
	for i := range pol.Teams {
		a.teams[pol.Teams[i].Name] = &teamUse{team: &pol.Teams[i], mig: map[string]int64{}}
	}
	for _, p := range in.Snapshot.Pods {
		if snapshot.IsActive(p) {
			if err := a.count(p, podRequests(p)); err != nil {
				return nil, err
			}
		}
	}
	if len(pol.Teams) > 0 {
		if err := a.countAllocatedClaims(in.Snapshot); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// teamOf returns the use of the pod's team (nil: none).
func (a *admission) teamOf(p *corev1.Pod) (*teamUse, error) {
	t, err := a.index.of(p.Namespace)
	if err != nil || t == nil {
		return nil, err
	}
	return a.teams[t.Name], nil
}

// count adds the pod's requests to its namespace's quotas and its team.
func (a *admission) count(p *corev1.Pod, req corev1.ResourceList) error {
	for _, u := range a.quotas[p.Namespace] {
		for r, used := range u.used {
			if q, ok := req[r]; ok {
				used.Add(q)
			}
		}
	}
	tu, err := a.teamOf(p)
	if err != nil || tu == nil {
		return err
	}
	for name, q := range req {
		if name == api.ResourceGPU {
			tu.gpus += q.Value()
		} else if prof, ok := strings.CutPrefix(string(name), "nvidia.com/mig-"); ok {
			tu.mig[prof] += q.Value()
		}
	}
	return nil
}

// admit checks one pending pod, counts it when it is admitted and returns the reason it is not.
func (a *admission) admit(p *corev1.Pod) (*api.UnschedulablePod, error) {
	req := podRequests(p)
	for _, u := range a.quotas[p.Namespace] {
		names := make([]string, 0, len(u.hard))
		for r := range u.hard {
			names = append(names, string(r))
		}
		sort.Strings(names)
		for _, r := range names {
			want, ok := req[corev1.ResourceName(r)]
			if !ok || want.IsZero() {
				continue
			}
			hard := u.hard[corev1.ResourceName(r)]
			total := u.used[corev1.ResourceName(r)].DeepCopy()
			total.Add(want)
			if total.Cmp(hard) > 0 {
				return &api.UnschedulablePod{Pod: podKey(p), Code: api.QuotaExceeded, Reason: fmt.Sprintf(
					"namespace %s's ResourceQuota %s: %s requested %s with %s in use exceeds hard %s",
					p.Namespace, u.q.Name, r, want.String(), u.used[corev1.ResourceName(r)].String(), hard.String())}, nil
			}
		}
	}
	tu, err := a.teamOf(p)
	if err != nil {
		return nil, err
	}
	if tu != nil {
		l := tu.team.Limits
		if g := req[api.ResourceGPU]; l.GPUs != nil && !g.IsZero() && tu.gpus+g.Value() > int64(*l.GPUs) {
			return &api.UnschedulablePod{Pod: podKey(p), Code: api.TeamLimitExceeded, Reason: fmt.Sprintf(
				"team %s is at its limit limits.gpus %d: %d GPUs in use or planned, the pod requests %d",
				tu.team.Name, *l.GPUs, tu.gpus, g.Value())}, nil
		}
		profiles := make([]string, 0, len(l.MIGProfiles))
		for prof := range l.MIGProfiles {
			profiles = append(profiles, prof)
		}
		sort.Strings(profiles)
		for _, prof := range profiles {
			q := req[corev1.ResourceName("nvidia.com/mig-"+prof)]
			if !q.IsZero() && tu.mig[prof]+q.Value() > int64(l.MIGProfiles[prof]) {
				return &api.UnschedulablePod{Pod: podKey(p), Code: api.TeamLimitExceeded, Reason: fmt.Sprintf(
					"team %s is at its limit limits.migProfiles[%s] %d: %d in use or planned, the pod requests %d",
					tu.team.Name, prof, l.MIGProfiles[prof], tu.mig[prof], q.Value())}, nil
			}
		}
	}
	return nil, a.count(p, req)
}

// simulateAdmitted plans for the pods the quotas and team limits admit (see the comment at the top
// of this file).
func simulateAdmitted(in Input) (*api.Plan, error) {
	pol := in.Policy
	if pol == nil {
		pol = policy.Default()
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	in.Policy = pol
	// Placeholder pods hold room the scheduler preempts for real pods: they count against no
	// limit, as the simulation leaves them out.
	in.Snapshot = withoutPlaceholders(in.Snapshot)
	a, err := newAdmission(in, pol)
	if err != nil {
		return nil, err
	}
	prio := priorityClasses(in.Snapshot)
	var order []*corev1.Pod
	for _, p := range in.Snapshot.Pods {
		if snapshot.IsPending(p) {
			order = append(order, p)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return podPriority(order[i], prio) > podPriority(order[j], prio) })
	blocked := map[string]api.UnschedulablePod{}
	var admitted []*corev1.Pod
	for _, p := range order {
		r, err := a.admit(p)
		if err != nil {
			return nil, err
		}
		if r != nil {
			blocked[r.Pod] = *r
		} else {
			admitted = append(admitted, p)
		}
	}
	var plan *api.Plan
	for {
		run := in
		run.Snapshot = steered(withoutBlocked(in.Snapshot, blocked), a.steer)
		if plan, err = simulateOnce(run); err != nil {
			return nil, err
		}
		dropped := false
		check := &planCheck{in: run, a: a, plan: plan, admitted: admitted}
		for _, drop := range []func(*planCheck, map[string]api.UnschedulablePod) (bool, error){
			dropOverTeamLimits, dropOverDRALimits, dropOverModelLimits,
		} {
			d, err := drop(check, blocked)
			if err != nil {
				return nil, err
			}
			dropped = dropped || d
		}
		if !dropped {
			break
		}
	}
	a.reportSteered(plan)
	for _, r := range blocked {
		plan.Unschedulable = append(plan.Unschedulable, r)
	}
	sort.Slice(plan.Unschedulable, func(i, j int) bool { return plan.Unschedulable[i].Pod < plan.Unschedulable[j].Pod })
	plan.Warnings = append(plan.Warnings, a.warnings...)
	return plan, nil
}

// withoutBlocked returns the snapshot without the blocked pods.
func withoutBlocked(snap *snapshot.Snapshot, blocked map[string]api.UnschedulablePod) *snapshot.Snapshot {
	if len(blocked) == 0 {
		return snap
	}
	out := *snap
	out.Pods = slices.DeleteFunc(slices.Clone(snap.Pods), func(p *corev1.Pod) bool { _, ok := blocked[podKey(p)]; return ok })
	return &out
}

// applyPlan returns the snapshot as it would be once the plan's nodes registered and its pods
// bound: new nodes with their labels and allocatable, planned pods with spec.nodeName, and their
// claims allocated the devices the plan gives them (allocatePlanned), so that a pod's GPUs
// through DRA count in its chargeback share.
func applyPlan(snap *snapshot.Snapshot, plan *api.Plan) *snapshot.Snapshot {
	out := *snap
	out.Nodes = slices.Clone(snap.Nodes)
	where := map[string]string{}
	for _, nn := range plan.NewNodes {
		n := &corev1.Node{}
		n.Name = nn.Name
		n.Labels = map[string]string{api.LabelPool: nn.Pool}
		for k, v := range nn.Labels {
			n.Labels[k] = v
		}
		n.Status.Allocatable = nn.Allocatable
		n.Status.Capacity = nn.Allocatable
		out.Nodes = append(out.Nodes, n)
		for _, p := range nn.Pods {
			where[p] = nn.Name
		}
	}
	for _, en := range plan.ExistingNodes {
		for _, p := range en.Pods {
			where[p] = en.Name
		}
	}
	out.Pods = make([]*corev1.Pod, len(snap.Pods))
	var placed []*corev1.Pod
	for i, p := range snap.Pods {
		if node, ok := where[podKey(p)]; ok && snapshot.IsPending(p) {
			c := p.DeepCopy()
			c.Spec.NodeName = node
			c.Status.Phase = corev1.PodRunning
			p = c
			placed = append(placed, c)
		}
		out.Pods[i] = p
	}
	out.ResourceClaims = allocatePlanned(snap, plan, placed)
	return &out
}

// planCheck is what the checks of one plan against the teams' limits read: the simulation's
// input, the admission, the plan and the admitted pods (in placement order), with the plan applied
// to the snapshot and the DRA devices it gives each pod, each worked out once, when first asked.
type planCheck struct {
	in       Input
	a        *admission
	plan     *api.Plan
	admitted []*corev1.Pod

	after    *snapshot.Snapshot
	devs     map[string]map[string]string
	devsErr  error
	devsDone bool
}

// applied is the snapshot with the plan applied (applyPlan).
func (c *planCheck) applied() *snapshot.Snapshot {
	if c.after == nil {
		c.after = applyPlan(c.in.Snapshot, c.plan)
	}
	return c.after
}

// planned is, by admitted pod, the DRA devices the plan gives it (plannedDevices).
func (c *planCheck) planned() (map[string]map[string]string, error) {
	if !c.devsDone {
		c.devs, c.devsErr = plannedDevices(c.in, c.a, c.plan, c.admitted)
		c.devsDone = true
	}
	return c.devs, c.devsErr
}

// dropOverTeamLimits checks the plan against the teams' $/h and node limits and blocks, for every
// team over one, its pods on new nodes from the lowest priority up until the excess is covered.
// It reports whether it blocked any.
func dropOverTeamLimits(c *planCheck, blocked map[string]api.UnschedulablePod) (bool, error) {
	in, a, plan, admitted := c.in, c.a, c.plan, c.admitted
	limited := false
	for _, tu := range a.teams {
		if tu.team.Limits.MaxPricePerHour > 0 || tu.team.Limits.MaxNodes > 0 {
			limited = true
		}
	}
	if !limited {
		return false, nil
	}
	after := c.applied()
	podCost := map[string]float64{}
	podNode := map[string]string{}
	teamCost := map[string]float64{}
	teamNodes := map[string]map[string]bool{}
	var resolveErr error
	nodeCosts(after, in.Catalog, func(n *corev1.Node, _ nodePrice, pods []*corev1.Pod, costs, _ []float64) {
		for i, p := range pods {
			tu, err := a.teamOf(p)
			if err != nil {
				resolveErr = err
			}
			if tu == nil {
				continue
			}
			podCost[podKey(p)] = costs[i]
			podNode[podKey(p)] = n.Name
			teamCost[tu.team.Name] += costs[i]
			if teamNodes[tu.team.Name] == nil {
				teamNodes[tu.team.Name] = map[string]bool{}
			}
			teamNodes[tu.team.Name][n.Name] = true
		}
	})
	if resolveErr != nil {
		return false, resolveErr
	}
	newNodes := map[string]bool{}
	for _, nn := range plan.NewNodes {
		newNodes[nn.Name] = true
	}
	dropped := false
	names := make([]string, 0, len(a.teams))
	for name := range a.teams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := a.teams[name].team.Limits
		costOver := l.MaxPricePerHour > 0 && teamCost[name] > l.MaxPricePerHour+1e-9
		nodesOver := l.MaxNodes > 0 && len(teamNodes[name]) > l.MaxNodes
		if !costOver && !nodesOver {
			continue
		}
		// The team's pods on new nodes, lowest priority (last admitted) first.
		var candidates []string
		left := map[string]int{} // per new node, the team's pods on it not dropped
		for i := len(admitted) - 1; i >= 0; i-- {
			p := admitted[i]
			k := podKey(p)
			if _, gone := blocked[k]; gone || !newNodes[podNode[k]] {
				continue
			}
			if tu, _ := a.teamOf(p); tu == nil || tu.team.Name != name {
				continue
			}
			candidates = append(candidates, k)
			left[podNode[k]]++
		}
		saved, freed := 0.0, 0
		for _, k := range candidates {
			costDone := !costOver || teamCost[name]-saved <= l.MaxPricePerHour+1e-9
			nodesDone := !nodesOver || len(teamNodes[name])-freed <= l.MaxNodes
			if costDone && nodesDone {
				break
			}
			var reason string
			if !costDone {
				reason = fmt.Sprintf("team %s is at its limit limits.maxPricePerHour %g: its share would be $%.4f/h with the plan", name, l.MaxPricePerHour, teamCost[name])
			} else {
				reason = fmt.Sprintf("team %s is at its limit limits.maxNodes %d: its pods would be on %d nodes with the plan", name, l.MaxNodes, len(teamNodes[name]))
			}
			blocked[k] = api.UnschedulablePod{Pod: k, Code: api.TeamLimitExceeded, Reason: reason}
			dropped = true
			saved += podCost[k]
			if left[podNode[k]]--; left[podNode[k]] == 0 {
				freed++
			}
		}
	}
	return dropped, nil
}
