package provisioner_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestE2EConsolidationCampaign gives capacity back on generated fleets on the real control plane,
// one seed per subtest: a random cost policy and a few Deployments of random shapes (CPU and
// memory sizes, whole GPUs, a hard zone spread, required or preferred hostname anti-affinity, a
// PodDisruptionBudget, do-not-disrupt) are bought for by the controller, then run through phases
// (runCampaignSeed): scaled down at random, and consolidated until the controller plans nothing
// more; on a fleet with spot nodes, one interrupted; a policy change, and the drift it causes.
// Over each phase it must lose no pod (every replica bound and Ready at the end), break no
// budget (a watch per Deployment never sees more pods unavailable than its PodDisruptionBudget
// allows), buy
// nothing but the replacements its actions planned (a pod an action evicted that kube-scheduler
// would not bind where the plan moved it would stay pending, and the controller would buy for it
// after disruption-reschedule-grace), abandon no action, leak no instance, cordon no node before
// its replacement is Ready (an interrupted node is cordoned at the notice), and, consolidating,
// end on a fleet that costs no more than it began; the drift phase ends with no drifted node but
// those a do-not-disrupt pod holds. It reports, per seed and phase and in total, how many moved
// pods kube-scheduler bound on the node the plan moved them to (the replicas are new pods, so a
// move is matched per Deployment and wave of actions), how many moved pods were replicas of pods
// moved earlier in the phase (moved a second time), the longest a replica waited unbound, and the
// fleet's cost against a purchase from scratch.
//
// Seeds 1–4 run in `make test`; TILER_CAMPAIGN_SEEDS=N (and TILER_CAMPAIGN_FIRST=F) run more,
// TILER_CAMPAIGN_SCHEDULER_CONFIG=file under another kube-scheduler configuration (e.g.
// deploy/scheduler/gpu-mostallocated.yaml), TILER_CAMPAIGN_CANDIDATE_TAINT=0 without the
// disruption-candidate taint.
func TestE2EConsolidationCampaign(t *testing.T) {
	var opts controlplane.Options
	if path := os.Getenv("TILER_CAMPAIGN_SCHEDULER_CONFIG"); path != "" {
		cfg, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		opts.SchedulerConfig = cfg
	}
	cp := cptest.Start(t, opts)
	first, n := uint64(1), 4
	if v, err := strconv.Atoi(os.Getenv("TILER_CAMPAIGN_SEEDS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("TILER_CAMPAIGN_FIRST"), 10, 64); err == nil {
		first = v
	}
	total := map[string]*campaignResult{}
	for seed := first; seed < first+uint64(n); seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			for phase, r := range runCampaignSeed(t, cp, seed) {
				if total[phase] == nil {
					total[phase] = &campaignResult{}
				}
				total[phase].add(r)
			}
		})
	}
	for _, phase := range []string{phaseConsolidation, phaseInterruption, phaseGPURepair, phaseDrift, phaseExpiry, phaseRepair} {
		if r := total[phase]; r != nil {
			t.Logf("campaign, seeds %d–%d, %s: %s", first, first+uint64(n)-1, phase, r)
		}
	}
}

// campaignApp is one generated Deployment.
type campaignApp struct {
	name     string
	tmpl     *corev1.Pod
	replicas int32 // bought for
	after    int32 // scaled down to
	// budget is the PodDisruptionBudget: maxUnavailable or minAvailable, nil for none.
	maxUnavailable, minAvailable *intstr.IntOrString
	// allowed is how many pods the budget lets be unavailable at once after the scale-down; -1
	// without a budget.
	allowed int
	what    []string
}

// campaignFleet is one generated scenario.
type campaignFleet struct {
	ns     string
	policy campaignPolicy
	apps   []campaignApp
}

// campaignPolicy is a generated cost policy: a CPU pool and, when gpuTypes is set, a tainted GPU
// pool; spot and gpuSpot let them buy spot (the embedded catalog has spot prices for the GPU types
// only).
// generation, when set, labels a pool's nodes (a change of it drifts them); expireAfter, when
// set, is both pools' expireAfter.
type campaignPolicy struct {
	cpuTypes, gpuTypes, zones []string
	spot, gpuSpot             bool
	generation                map[string]string // pool → label value
	expireAfter               time.Duration
	// terminationGrace, when set, is both pools' terminationGracePeriod (the GPU repair phase's).
	terminationGrace time.Duration
}

func (p campaignPolicy) String() string {
	list := func(xs []string) string { return "[" + strings.Join(xs, ", ") + "]" }
	capacity := func(spot bool) string {
		if spot {
			return "[spot, on-demand]"
		}
		return "[on-demand]"
	}
	labels := func(pool string) string {
		if g := p.generation[pool]; g != "" {
			return "  labels: {generation: \"" + g + "\"}\n"
		}
		return ""
	}
	expire := ""
	if p.expireAfter > 0 {
		expire = "    expireAfter: " + p.expireAfter.String() + "\n"
	}
	if p.terminationGrace > 0 {
		expire += "    terminationGracePeriod: " + p.terminationGrace.String() + "\n"
	}
	doc := fmt.Sprintf(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: cpu
  instanceTypes: %s
  capacityTypes: %s
  zones: %s
%s  disruption:
    consolidateAfter: 2s
    repair: {notReadyGracePeriod: %s, gracePeriod: %s}
%s`, list(p.cpuTypes), capacity(p.spot), list(p.zones), labels("cpu"), campaignNotReadyGrace, campaignRepairGrace, expire)
	if len(p.gpuTypes) > 0 {
		doc += fmt.Sprintf(`- name: gpu
  instanceTypes: %s
  capacityTypes: %s
  zones: %s
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
%s  disruption:
    consolidateAfter: 2s
    repair: {notReadyGracePeriod: %s, gracePeriod: %s}
%s`, list(p.gpuTypes), capacity(p.gpuSpot), list(p.zones), labels("gpu"), campaignNotReadyGrace, campaignRepairGrace, expire)
	}
	return doc
}

func (p campaignPolicy) clone() campaignPolicy {
	p.cpuTypes, p.gpuTypes, p.zones = slices.Clone(p.cpuTypes), slices.Clone(p.gpuTypes), slices.Clone(p.zones)
	p.generation = maps.Clone(p.generation)
	return p
}

func (f campaignFleet) String() string {
	var b strings.Builder
	for _, a := range f.apps {
		fmt.Fprintf(&b, "\n  %s: %d → %d pods, %s", a.name, a.replicas, a.after, strings.Join(a.what, ", "))
	}
	return strings.TrimSpace(f.policy.String()) + b.String()
}

var (
	campaignZones    = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	campaignCPUTypes = []string{"m7i.large", "m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge", "c7i.xlarge", "c7i.2xlarge", "r7i.large", "r7i.xlarge", "r7i.2xlarge"}
	campaignGPUTypes = []string{"g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.12xlarge"}
)

// bigCPUType reports whether an instance type of the CPU pool fits every generated CPU pod.
func bigCPUType(t string) bool {
	return strings.HasSuffix(t, "2xlarge") || strings.HasSuffix(t, "4xlarge")
}

// genCampaignFleet builds the scenario of a seed.
func genCampaignFleet(seed uint64) campaignFleet {
	r := rand.New(rand.NewPCG(seed, 0x636f6e73))
	f := campaignFleet{ns: fmt.Sprintf("campaign-%d", seed)}
	f.policy.zones = campaignZones
	if r.IntN(3) == 0 {
		f.policy.zones = campaignZones[:2]
	}
	pick := func(from []string, lo, hi int) []string {
		xs := slices.Clone(from)
		r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		return xs[:lo+r.IntN(hi-lo+1)]
	}
	f.policy.spot = r.IntN(4) == 0
	// Every pod fits some type of its pool: the CPU pool has one with 8 vCPUs or more.
	f.policy.cpuTypes = pick(campaignCPUTypes, 2, 5)
	if !slices.ContainsFunc(f.policy.cpuTypes, bigCPUType) {
		f.policy.cpuTypes = append(f.policy.cpuTypes, "m7i.2xlarge")
	}
	gpu := r.IntN(2) == 0
	if gpu {
		f.policy.gpuTypes = pick(campaignGPUTypes, 2, 3)
		// (Drawn apart, so that the draws above and below are those of the seeds before it was.)
		f.policy.gpuSpot = f.policy.spot || rand.New(rand.NewPCG(seed, 0x73706f74)).IntN(2) == 0
	}
	apps := 3 + r.IntN(3)
	shrunk := false
	// Each app's terminationGracePeriodSeconds, 0–3 (drawn apart, so that the draws above and
	// below are those of the seeds before it was): a pod with one ends at the kubelet's next
	// step, but on a node whose kubelet is down (the repair phase) it stays terminating.
	graces := rand.New(rand.NewPCG(seed, 0x67726163))
	for i := range apps {
		a := campaignApp{name: fmt.Sprintf("a%d", i), replicas: int32(2 + r.IntN(9)), allowed: -1}
		b := simtest.Pod("t").Namespace(f.ns).Label("app", a.name)
		if gpu && r.IntN(10) < 3 {
			cpu, mem := []string{"1", "2", "3"}[r.IntN(3)], []string{"4Gi", "8Gi", "12Gi"}[r.IntN(3)]
			b.CPU(cpu).Mem(mem).GPU(1).Tolerate("nvidia.com/gpu")
			a.what = append(a.what, fmt.Sprintf("%s CPU %s 1 GPU", cpu, mem))
		} else {
			cpu, mem := []string{"250m", "500m", "1", "1500m", "2", "3"}[r.IntN(6)], []string{"512Mi", "1Gi", "2Gi", "4Gi", "6Gi"}[r.IntN(5)]
			b.CPU(cpu).Mem(mem)
			a.what = append(a.what, fmt.Sprintf("%s CPU %s", cpu, mem))
		}
		switch x := r.IntN(20); {
		case x < 6:
			b.Spread(corev1.LabelTopologyZone, 1, true)
			a.what = append(a.what, "zone spread (hard, maxSkew 1)")
		case x < 9:
			a.replicas = min(a.replicas, 4)
			b.AntiAffinity(corev1.LabelHostname, a.name)
			a.what = append(a.what, "hostname anti-affinity (required)")
		case x < 13:
			b.PreferAntiAffinity(100, corev1.LabelHostname, a.name)
			a.what = append(a.what, "hostname anti-affinity (preferred)")
		}
		switch x := r.IntN(20); {
		case x < 3:
			a.after = a.replicas
		case x < 6:
			a.after = 0
		default:
			a.after = 1 + r.Int32N(a.replicas-1)
		}
		shrunk = shrunk || a.after < a.replicas
		if i == apps-1 && !shrunk {
			a.after = a.replicas / 2
		}
		switch x := r.IntN(20); {
		case x < 9:
			one := intstr.FromInt32(1)
			a.maxUnavailable, a.allowed = &one, 1
			a.what = append(a.what, "PDB maxUnavailable 1")
		case x < 13:
			m := intstr.FromInt32(max(a.after-1, 0))
			a.minAvailable, a.allowed = &m, 1
			a.what = append(a.what, fmt.Sprintf("PDB minAvailable %d", m.IntValue()))
		}
		if r.IntN(10) == 0 {
			b.Annotate(api.AnnotationDoNotDisrupt, "true")
			a.what = append(a.what, "do-not-disrupt")
		}
		a.tmpl = b.Obj()
		if g := int64(graces.IntN(4)); g > 0 {
			a.tmpl.Spec.TerminationGracePeriodSeconds = &g
			a.what = append(a.what, fmt.Sprintf("terminationGracePeriodSeconds %d", g))
		}
		f.apps = append(f.apps, a)
	}
	return f
}

// campaignResult tallies what a run showed.
type campaignResult struct {
	seeds, actions, replaces, deletes int
	replacements                      int // new nodes of the Replace actions
	moves, asPlanned, movedAgain      int
	evictions                         int // pods evicted through the Eviction API
	longestUnbound                    time.Duration
	before, after, scratch            float64
}

func (c *campaignResult) add(o campaignResult) {
	c.seeds += o.seeds
	c.actions += o.actions
	c.replaces += o.replaces
	c.replacements += o.replacements
	c.deletes += o.deletes
	c.moves += o.moves
	c.asPlanned += o.asPlanned
	c.movedAgain += o.movedAgain
	c.evictions += o.evictions
	c.longestUnbound = max(c.longestUnbound, o.longestUnbound)
	c.before += o.before
	c.after += o.after
	c.scratch += o.scratch
}

func (c campaignResult) String() string {
	ratio := 0.0
	if c.scratch > 0 {
		ratio = c.after / c.scratch
	}
	more := ""
	if c.replacements > c.replaces {
		more = fmt.Sprintf(" launching %d new nodes", c.replacements)
	}
	return fmt.Sprintf("%d seeds, %d actions done (%d Replace%s, %d Delete); %d pods evicted, %d moved, %d bound where planned, %d moved a second time; longest a replica waited unbound %s; fleet $%.3f/h → $%.3f/h (from scratch $%.3f/h, ratio %.3f)",
		c.seeds, c.actions, c.replaces, more, c.deletes, c.evictions, c.moves, c.asPlanned, c.movedAgain, c.longestUnbound.Round(time.Millisecond), c.before, c.after, c.scratch, ratio)
}

// runCampaignSeed runs one generated fleet through purchase, then the phases: a scale-down and
// the consolidation it allows; on a fleet with spot nodes, a spot interruption; on a fleet with
// GPU pods, a GPU node whose GPUs fail while it stays Ready, repaired; a policy change and the
// drift it causes; the expiry of the whole fleet; and a node whose kubelet stops, repaired. Each
// phase is watched on its own (campaignPhase).
func runCampaignSeed(t *testing.T, cp *controlplane.ControlPlane, seed uint64) map[string]campaignResult {
	f := genCampaignFleet(seed)
	t.Logf("seed %d:\n%s", seed, &f)
	cfg := disruptionConfig()
	// (TILER_CAMPAIGN_CANDIDATE_TAINT=0 measures the campaign without the candidate taint.)
	cfg.DisruptionCandidateTaint = os.Getenv("TILER_CAMPAIGN_CANDIDATE_TAINT") != "0"
	e, passes := newDisruptionEnv(t, cp, cfg, func(c *sim.Config) { c.InterruptionGrace = campaignInterruptionGrace })
	e.namespace(f.ns)
	e.applyPolicy("policy", f.policy.String())
	for _, a := range f.apps {
		if a.maxUnavailable != nil || a.minAvailable != nil {
			e.pdb(f.ns, a.name, a.maxUnavailable, a.minAvailable)
		}
		e.deployment(f.ns, a.name, a.replicas, a.tmpl)
	}
	for _, a := range f.apps {
		e.waitAppReady(f.ns, a.name, int(a.replicas), 120*time.Second)
	}
	out := map[string]campaignResult{}
	out[phaseConsolidation] = e.consolidationPhase(&f, passes)
	if t.Failed() {
		return out
	}
	if r, ok := e.interruptionPhase(&f, passes, seed); ok {
		out[phaseInterruption] = r
	}
	if t.Failed() {
		return out
	}
	if r, ok := e.gpuRepairPhase(&f, passes, seed); ok {
		out[phaseGPURepair] = r
	}
	if t.Failed() {
		return out
	}
	out[phaseDrift] = e.driftPhase(&f, passes, seed)
	if t.Failed() {
		return out
	}
	out[phaseExpiry] = e.expiryPhase(&f, passes)
	if t.Failed() {
		return out
	}
	if r, ok := e.repairPhase(&f, passes, seed); ok {
		out[phaseRepair] = r
	}
	e.cleanupNamespace(f.ns)
	return out
}

// The campaign's phases.
const (
	phaseConsolidation = "consolidation"
	phaseDrift         = "drift"
	phaseInterruption  = "interruption"
	phaseExpiry        = "expiry"
	phaseRepair        = "repair"
	phaseGPURepair     = "GPU repair"
)

// campaignInterruptionGrace is how long after an interruption notice the simulated cloud
// reclaims the instance: the two minutes of EC2's notice, so that the replacement has time to
// boot and the pods to move under their budgets, as on EC2.
const campaignInterruptionGrace = 2 * time.Minute

// consolidationPhase scales the fleet's Deployments down and consolidates until it plans nothing
// more; the fleet must end no dearer than it began. A watch per Deployment checks its budget
// (a lifecycleWatch would take the budget's healthy count from the pods before the scale-down).
func (e *env) consolidationPhase(f *campaignFleet, passes *passLog) campaignResult {
	avail := map[string]*availabilityWatch{}
	for _, a := range f.apps {
		avail[a.name] = e.watchAvailability(f.ns, a.name, int(a.after))
	}
	res := e.campaignPhase(f, passes, phaseConsolidation, func() {
		for _, a := range f.apps {
			if a.after != a.replicas {
				e.scale(f.ns, a.name, a.after)
			}
		}
		for _, a := range f.apps {
			e.waitAppReady(f.ns, a.name, int(a.after), 60*time.Second)
		}
	}, nil)
	for _, a := range f.apps {
		missing, _ := avail[a.name].finish()
		if a.allowed >= 0 && missing > a.allowed {
			e.t.Errorf("%s: %d pods unavailable at once; its PodDisruptionBudget allows %d", a.name, missing, a.allowed)
		}
	}
	if res.after > res.before+1e-9 {
		e.t.Errorf("the fleet costs $%.4f/h after consolidation, $%.4f/h before", res.after, res.before)
	}
	return res
}

// driftPhase changes the cost policy so that some nodes no longer match it, and runs until every
// such node is replaced or deleted, but for those a do-not-disrupt pod holds. The change, drawn
// from the seed: a pool's nodes labelled anew (every node of the pool drifts), an instance type
// in use removed from the CPU or GPU pool, or spot removed from the pools' capacity types.
// A lifecycleWatch checks every budget, that no do-not-disrupt pod is evicted and that no pod is
// lost.
func (e *env) driftPhase(f *campaignFleet, passes *passLog, seed uint64) campaignResult {
	t := e.t
	r := rand.New(rand.NewPCG(seed, 0x64726966))
	nodes := e.managedNodes()
	inUse := func(pool string) []string {
		var out []string
		for _, n := range nodes {
			if n.Labels[api.LabelPool] == pool && !slices.Contains(out, n.Labels[corev1.LabelInstanceTypeStable]) {
				out = append(out, n.Labels[corev1.LabelInstanceTypeStable])
			}
		}
		slices.Sort(out)
		return out
	}
	next := f.policy.clone()
	var what string
	drifts := func(n corev1.Node) bool { return false }
	var options []func()
	for _, pool := range []string{"cpu", "gpu"} {
		if len(inUse(pool)) == 0 {
			continue
		}
		options = append(options, func() {
			if next.generation == nil {
				next.generation = map[string]string{}
			}
			next.generation[pool] = "2"
			what = "the " + pool + " pool's nodes labelled generation=2"
			drifts = func(n corev1.Node) bool { return n.Labels[api.LabelPool] == pool }
		})
	}
	// An instance type in use may go when the pool keeps one that fits every pod.
	for _, typ := range inUse("cpu") {
		if rest := slices.DeleteFunc(slices.Clone(next.cpuTypes), func(x string) bool { return x == typ }); slices.ContainsFunc(rest, bigCPUType) {
			options = append(options, func() {
				next.cpuTypes = rest
				what = "instance type " + typ + " removed from the cpu pool"
				drifts = func(n corev1.Node) bool { return n.Labels[corev1.LabelInstanceTypeStable] == typ }
			})
		}
	}
	for _, typ := range inUse("gpu") {
		if len(next.gpuTypes) > 1 {
			options = append(options, func() {
				next.gpuTypes = slices.DeleteFunc(slices.Clone(next.gpuTypes), func(x string) bool { return x == typ })
				what = "instance type " + typ + " removed from the gpu pool"
				drifts = func(n corev1.Node) bool { return n.Labels[corev1.LabelInstanceTypeStable] == typ }
			})
		}
	}
	if slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Labels[api.LabelCapacityType] == "spot" }) {
		options = append(options, func() {
			next.spot, next.gpuSpot = false, false
			what = "spot removed from the pools' capacity types"
			drifts = func(n corev1.Node) bool { return n.Labels[api.LabelCapacityType] == "spot" }
		})
	}
	if len(options) == 0 {
		t.Logf("drift: no node left to drift")
		return campaignResult{seeds: 1}
	}
	options[r.IntN(len(options))]()
	var due []string
	for _, n := range nodes {
		if drifts(n) {
			due = append(due, n.Name)
		}
	}
	t.Logf("drift: %s; %d of %d nodes drift: %v", what, len(due), len(nodes), due)
	lw := e.watchLifecycle(f.ns)
	f.policy = next
	res := e.campaignPhase(f, passes, phaseDrift, func() { e.applyPolicy("policy", next.String()) },
		func(ps []*provisioner.DisruptionPass) bool {
			// Over once no drifted node is left but those a do-not-disrupt pod holds (and the
			// plan says so: it has seen the change).
			last := ps[len(ps)-1].Plan
			if last == nil {
				return false
			}
			left := map[string]bool{}
			for _, n := range e.managedNodes() {
				if slices.Contains(due, n.Name) {
					left[n.Name] = true
				}
			}
			for _, k := range last.Kept {
				if left[k.Name] && k.Due == api.ReasonDrifted && k.Reason == api.KeepPodDoNotDisrupt {
					delete(left, k.Name)
				}
			}
			return len(left) == 0
		})
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("drift: pods lost with their node: %v", lost)
	}
	return res
}

// campaignExpireAfter is the shortest expireAfter the expiry phase gives: its replacements expire
// in turn once that old, so the shorter it is the more of them the roll replaces again before the
// phase lifts it.
const campaignExpireAfter = 20 * time.Second

// expiryPhase gives both pools an expireAfter that every node of the fleet reaches within
// campaignExpireAfter (the youngest node's age, at least campaignExpireAfter), and runs until each
// of them is gone or under an action, but those a do-not-disrupt pod holds; then it lifts the
// expireAfter (the replacements would expire in turn) and runs until they are all gone and the
// plans settle. A lifecycleWatch checks every budget, that no do-not-disrupt pod is evicted and
// that no pod is lost.
func (e *env) expiryPhase(f *campaignFleet, passes *passLog) campaignResult {
	t := e.t
	nodes := e.managedNodes()
	if len(nodes) == 0 {
		return campaignResult{seeds: 1}
	}
	due := map[string]bool{}
	after := campaignExpireAfter
	for _, n := range nodes {
		due[n.Name] = true
		after = max(after, time.Since(n.CreationTimestamp.Time).Truncate(time.Second))
	}
	// left are the fleet's nodes still there but those a do-not-disrupt pod held (a plan said so
	// while they were expired); moving, those not yet under an action.
	held := map[string]bool{}
	left := func(ps []*provisioner.DisruptionPass, moving bool) int {
		if last := ps[len(ps)-1].Plan; last != nil {
			for _, k := range last.Kept {
				if k.Due == api.ReasonExpired && k.Reason == api.KeepPodDoNotDisrupt {
					held[k.Name] = true
				}
			}
		}
		n := 0
		for _, node := range e.managedNodes() {
			if due[node.Name] && !held[node.Name] && (!moving || node.Annotations[api.AnnotationDisruptionAction] == "") {
				n++
			}
		}
		return n
	}
	t.Logf("expiry: both pools' expireAfter %s; %d nodes expire", after, len(nodes))
	lw := e.watchLifecycle(f.ns)
	next := f.policy.clone()
	next.expireAfter = after
	lifted := false
	res := e.campaignPhase(f, passes, phaseExpiry, func() { e.applyPolicy("policy", next.String()) },
		func(ps []*provisioner.DisruptionPass) bool {
			if !lifted {
				if left(ps, true) > 0 {
					return false
				}
				lifted = true
				e.applyPolicy("policy", f.policy.String())
				return false
			}
			return left(ps, false) == 0
		})
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("expiry: pods lost with their node: %v", lost)
	}
	return res
}

// campaignNotReadyGrace is both pools' repair.notReadyGracePeriod: how long the repair phase's
// node stays not Ready before the controller repairs it.
const campaignNotReadyGrace = "5s"

// repairPhase stops the kubelet of one node of the fleet that runs pods of its namespace (drawn
// from the seed) and marks the node's Ready condition Unknown and its pods not Ready, as
// kube-controller-manager would once its heartbeats stop; it runs until the node is gone and the controller plans nothing
// more. No kubelet ends the node's pods, so its drain waits StuckTerminatingAfter for those it
// evicted with a terminationGracePeriodSeconds. Nothing may be lost but the node's do-not-disrupt
// pods (a repair deletes them, not evicted, and they go with the node);
// every budget kept (a lifecycleWatch), no do-not-disrupt pod evicted, one replacement launched,
// Ready before the node is cordoned (campaignPhase). ok is false when no node runs a pod of the
// namespace.
func (e *env) repairPhase(f *campaignFleet, passes *passLog, seed uint64) (campaignResult, bool) {
	t := e.t
	var nodes []corev1.Node
	for _, n := range e.managedNodes() {
		if len(e.podsOn(f.ns, n.Name)) > 0 {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return campaignResult{}, false
	}
	r := rand.New(rand.NewPCG(seed, 0x72657061))
	victim := nodes[r.IntN(len(nodes))]
	on, _, staying := e.victimPods(f.ns, victim.Name)
	t.Logf("repair: %s (%s) not Ready, its kubelet stopped, with pods %v", victim.Name, victim.Labels[corev1.LabelInstanceTypeStable], on)
	id := victim.Labels[api.LabelInstanceID]
	lw := e.watchLifecycle(f.ns)
	res := e.campaignPhase(f, passes, phaseRepair, func() {
		e.cloud.SetKubeletDown(id, true)
		e.setNodeReady(victim.Name, corev1.ConditionUnknown)
		e.markPodsNotReady(victim.Name)
	}, func([]*provisioner.DisruptionPass) bool {
		// Over once the node is gone, and the do-not-disrupt pods with it (deleted by the
		// drain), so that their successors are placed within the phase.
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Name == victim.Name }) &&
			!slices.ContainsFunc(e.podsOn(f.ns, victim.Name), func(p corev1.Pod) bool { return staying[p.Name] && p.DeletionTimestamp == nil })
	})
	if _, lost := lw.finish(30 * time.Second); len(slices.DeleteFunc(lost, func(p string) bool { return staying[p] })) > 0 {
		t.Errorf("repair: pods lost with their node: %v", lost)
	}
	return res, true
}

// campaignRepairGrace is both pools' repair.gracePeriod: how long a node's GPUs may be missing
// from allocatable before the controller repairs it.
const campaignRepairGrace = "5s"

// campaignTerminationGrace is the terminationGracePeriod the GPU repair phase gives both pools:
// how long its node's drain waits for the do-not-disrupt pods there, and for evictions its
// budgets refuse, before it deletes those pods.
const campaignTerminationGrace = 20 * time.Second

// gpuRepairPhase, on a fleet with a GPU node that runs pods of its namespace, gives both pools a
// terminationGracePeriod (campaignTerminationGrace) for the phase, then fails the GPUs of one
// such node (drawn from the seed, as the fault: lost from allocatable, repaired after
// campaignRepairGrace, or critical XID errors, repaired at once); the node stays Ready and its
// pods keep running. It runs until the node is gone and the controller plans nothing more, then
// lifts the period. (It runs before the drift phase: the period would end what holds the nodes
// that drift and expiry leave to their do-not-disrupt pods.) The node goes by a repair
// (Unhealthy) that moves its pods: its do-not-disrupt pods stay until the period is about to end,
// then are deleted, as is any pod whose eviction its budget still refuses then; every budget
// kept but by those deletions, which only the node's pods may suffer, each no earlier than its
// own terminationGracePeriodSeconds before the node's force-after; no pod lost; one
// replacement, Ready before the cordon (campaignPhase). ok is false when no GPU node runs a pod
// of the namespace.
func (e *env) gpuRepairPhase(f *campaignFleet, passes *passLog, seed uint64) (campaignResult, bool) {
	t := e.t
	var nodes []corev1.Node
	for _, n := range e.managedNodes() {
		if n.Labels[api.LabelPool] == "gpu" && len(e.podsOn(f.ns, n.Name)) > 0 {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return campaignResult{}, false
	}
	r := rand.New(rand.NewPCG(seed, 0x67707572))
	victim := nodes[r.IntN(len(nodes))]
	fault := []sim.GPUFault{sim.GPUFaultLost, sim.GPUFaultXID}[r.IntN(2)]
	on, apps, held := e.victimPods(f.ns, victim.Name)
	t.Logf("GPU repair: %s (%s) GPU fault %q, with pods %v", victim.Name, victim.Labels[corev1.LabelInstanceTypeStable], fault, on)
	lw := e.watchLifecycle(f.ns)
	lw.expectForcedApps(apps)
	graced := f.policy.clone()
	graced.terminationGrace = campaignTerminationGrace
	forceAfter := e.watchNodeTime(victim.Name, api.AnnotationDisruptionForceAfter)
	mark := len(passes.all())
	res := e.campaignPhase(f, passes, phaseGPURepair, func() {
		e.applyPolicy("policy", graced.String())
		// (Planned after the controller has seen the period: an XID fault is due at once.)
		passes.waitMorePlans(t, "after the policy gains a terminationGracePeriod", 2)
		if err := e.cloud.InjectGPUFault(victim.Labels[api.LabelInstanceID], fault); err != nil {
			t.Fatal(err)
		}
	}, func([]*provisioner.DisruptionPass) bool {
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Name == victim.Name })
	})
	e.applyPolicy("policy", f.policy.String())
	repaired := false
	for _, p := range passes.all()[mark:] {
		for _, a := range p.Actions {
			repaired = repaired || a.Step == provisioner.ActionDone && a.Reason == api.ReasonUnhealthy && slices.Contains(a.Nodes, victim.Name)
		}
	}
	if !repaired {
		t.Errorf("GPU repair: %s went, but not by a repair (reason %s)", victim.Name, api.ReasonUnhealthy)
	}
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("GPU repair: pods lost with their node, which stayed Ready: %v", lost)
	}
	heldDeleted(t, "GPU repair", lw, victim.Name, forceAfter(), "force-after", held)
	return res, true
}

// victimPods returns the names of the pods of ns on node, their apps (label app) and, by name,
// those annotated not to be disrupted.
func (e *env) victimPods(ns, node string) (names, apps []string, held map[string]bool) {
	held = map[string]bool{}
	for _, p := range e.podsOn(ns, node) {
		names = append(names, p.Name)
		if !slices.Contains(apps, p.Labels["app"]) {
			apps = append(apps, p.Labels["app"])
		}
		if p.Annotations[api.AnnotationDoNotDisrupt] == "true" {
			held[p.Name] = true
		}
	}
	return names, apps, held
}

// expectForcedApps is expectForced for the pods of apps (label app); none for no app.
func (lw *lifecycleWatch) expectForcedApps(apps []string) {
	if len(apps) == 0 {
		return
	}
	sel, err := labels.Parse("app in (" + strings.Join(apps, ", ") + ")")
	if err != nil {
		lw.e.t.Fatal(err)
	}
	lw.expectForced(sel)
}

// heldDeleted checks the pods deleted without the Eviction API (deletedAt) and that each pod of
// held (do-not-disrupt pods of node) was among them.
func heldDeleted(t testing.TB, what string, lw *lifecycleWatch, node string, at time.Time, which string, held map[string]bool) {
	t.Helper()
	left := maps.Clone(held)
	for _, name := range deletedAt(t, what, lw, node, at, which) {
		delete(left, name)
	}
	if len(left) > 0 {
		t.Errorf("%s: do-not-disrupt pods %v not deleted without the Eviction API by the node's %s", what, slices.Sorted(maps.Keys(left)), which)
	}
}

// deletedAt checks the pods the watch saw deleted without the Eviction API (expectForced): each
// on node, deleted no earlier than its own terminationGracePeriodSeconds before at (its deletion
// timestamp, the deletion plus its grace, at or after at, to the second) and within 10 s after
// it. It returns their names. what names the phase, and which the time.
func deletedAt(t testing.TB, what string, lw *lifecycleWatch, node string, at time.Time, which string) []string {
	t.Helper()
	var out []string
	for _, p := range lw.forcedPods() {
		out = append(out, p.Name)
		own := time.Duration(ptr.Deref(p.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second
		switch {
		case p.Spec.NodeName != node:
			t.Errorf("%s: pod %s deleted without the Eviction API on %s, not %s", what, p.Name, p.Spec.NodeName, node)
		case at.IsZero():
			t.Errorf("%s: pod %s deleted without the Eviction API, but %s never showed a %s", what, p.Name, node, which)
		case p.DeletionTimestamp == nil || p.DeletionTimestamp.Add(time.Second).Before(at) ||
			p.DeletionTimestamp.Add(-own).After(at.Add(10*time.Second)):
			t.Errorf("%s: pod %s deleted for %v with a grace of %s; the node's %s is %s", what, p.Name, p.DeletionTimestamp, own, which, at)
		}
	}
	return out
}

// watchNodeTime reads the RFC 3339 time annotation key of node every 200 ms until the returned
// func is called, which returns the last time seen (zero: none).
func (e *env) watchNodeTime(node, key string) func() time.Time {
	var mu sync.Mutex
	var last time.Time
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, n := range e.managedNodes() {
				if v := n.Annotations[key]; n.Name == node && v != "" {
					at, err := time.Parse(time.RFC3339, v)
					if err == nil {
						mu.Lock()
						last = at
						mu.Unlock()
					}
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() time.Time {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// interruptionPhase, on a fleet with spot nodes, has the cloud interrupt one of them (with
// campaignInterruptionGrace's notice) and runs until the node is gone and the controller plans
// nothing more. The pods on it must move before the cloud reclaims it: none lost with the node
// (its do-not-disrupt pods, which an urgent action leaves, and any whose eviction is still refused
// then, are deleted within their own grace period of the reclaim, not earlier: session 50), every
// budget kept but by those deletions (a lifecycleWatch), no do-not-disrupt pod evicted elsewhere.
// ok is false when the fleet has no spot node.
func (e *env) interruptionPhase(f *campaignFleet, passes *passLog, seed uint64) (campaignResult, bool) {
	t := e.t
	var spot []corev1.Node
	for _, n := range e.managedNodes() {
		if n.Labels[api.LabelCapacityType] == "spot" {
			spot = append(spot, n)
		}
	}
	if len(spot) == 0 {
		return campaignResult{}, false
	}
	r := rand.New(rand.NewPCG(seed, 0x696e7472))
	victim := spot[r.IntN(len(spot))]
	t.Logf("interruption: %s (%s)", victim.Name, victim.Labels[corev1.LabelInstanceTypeStable])
	// Its do-not-disrupt pods stay on it (an urgent action leaves them) until they are within
	// their grace period of the reclaim, then are deleted, as are pods whose eviction their budget
	// still refuses then.
	_, apps, staying := e.victimPods(f.ns, victim.Name)
	lw := e.watchLifecycle(f.ns)
	lw.allowDoNotDisruptEvictionsOn(victim.Name)
	lw.expectForcedApps(apps)
	deadline := e.watchNodeTime(victim.Name, api.AnnotationInterruptionDeadline)
	res := e.campaignPhase(f, passes, phaseInterruption, func() {
		if err := e.cloud.Interrupt(victim.Labels[api.LabelInstanceID]); err != nil {
			t.Fatal(err)
		}
	}, func([]*provisioner.DisruptionPass) bool {
		return !slices.ContainsFunc(e.managedNodes(), func(n corev1.Node) bool { return n.Name == victim.Name })
	})
	if _, lost := lw.finish(30 * time.Second); len(lost) > 0 {
		t.Errorf("interruption: pods lost with their node: %v", lost)
	}
	heldDeleted(t, "interruption", lw, victim.Name, deadline(), "interruption deadline", staying)
	return res, true
}

// campaignPhase runs one phase: start disrupts the fleet (a scale-down, a policy change, a
// notice), and the controller runs until three passes in a row plan nothing and over, when set,
// holds of the passes since the start. Over the phase it must buy nothing but the replacements
// its actions planned (a pod an action left pending is bought a node after the reschedule
// grace), abandon no action, cordon no node before its replacement is Ready, leak no instance
// and count each pod it evicts once (tiler_disruption_evictions_total against the pods seen
// evicted); every replica must be Ready at the end. It reports the actions, the moves (of the actions a
// plan started: an interruption notice's are not listed), how many were bound where planned, the longest a replica waited unbound and the fleet against a purchase from
// scratch.
func (e *env) campaignPhase(f *campaignFleet, passes *passLog, name string, start func(), over func([]*provisioner.DisruptionPass) bool) campaignResult {
	t := e.t
	t.Helper()
	res := campaignResult{seeds: 1, before: e.fleetCost()}
	launches := e.launches()
	evictions := counterValue(t, e.metrics.DisruptionEvictions)
	pods := e.watchPods(f.ns)
	nw := e.watchNodes()
	mark := len(passes.all())
	begin := time.Now()
	start()
	if err := testwait.Poll(testwait.Slow, 4*time.Minute, func() bool {
		ps := passes.all()[mark:]
		// (over is asked at every poll, settled or not: the expiry phase lifts its expireAfter
		// there once every expired node is under an action, which must not wait for a settle
		// that the replacements' own expiry would put off for ever.)
		done := over == nil || len(ps) > 0 && over(ps)
		return settled(ps, 3) && done
	}); err != nil {
		ps := passes.all()
		if p := ps[len(ps)-1]; p.Plan != nil {
			for _, k := range p.Plan.Kept {
				t.Logf("kept %s (%s, due %q): %s", k.Name, k.Reason, k.Due, k.Message)
			}
			t.Logf("last plan: %d actions, candidates %v; actions under way %+v", len(p.Plan.Actions), p.Plan.Candidates, p.Actions)
		}
		t.Fatalf("%s: timed out after 4m waiting for the controller to plan nothing more for three passes in a row", name)
	}
	took := time.Since(begin)
	for _, a := range f.apps {
		e.waitAppReady(f.ns, a.name, int(a.after), 30*time.Second)
	}
	events := nw.finish()
	log := pods.finish()
	ps := passes.all()[mark:]
	ws := waves(ps)
	for _, p := range ps {
		if p.Err != nil {
			t.Logf("%s: pass at %s: %v", name, p.Now.Format(time.TimeOnly), p.Err)
		}
		for _, a := range p.Actions {
			switch a.Step {
			case provisioner.ActionAbandoned:
				t.Errorf("%s: action %s on %v abandoned: %s", name, a.ID, a.Nodes, a.Message)
			case provisioner.ActionDone:
				res.actions++
				if a.Kind == api.ActionReplace {
					res.replaces++
					// Every replacement Ready before the old nodes are cordoned (but an
					// interrupted node, cordoned at the notice: its drain waits for the
					// replacement, which TestE2EDisruption/SpotInterruptionReplacedFirst checks).
					for _, old := range a.Nodes {
						if a.Reason == api.ReasonInterrupted {
							break
						}
						for _, r := range strings.Split(a.Replacement, ",") {
							readyBeforeCordon(t, events, old, r)
						}
					}
					res.replacements += len(strings.Split(a.Replacement, ","))
				} else {
					res.deletes++
				}
			}
		}
	}
	res.moves, res.asPlanned, res.movedAgain = movesAsPlanned(t, ws, log, begin)
	// Each pod evicted is counted once (a pass the informer lags must not evict it again).
	res.evictions = log.evictions()
	if got := int(counterValue(t, e.metrics.DisruptionEvictions) - evictions); got != res.evictions {
		t.Errorf("%s: tiler_disruption_evictions_total rose by %d; %d pods were evicted through the Eviction API", name, got, res.evictions)
	}
	res.longestUnbound = log.longestUnbound(begin)
	// (The replacements of the actions done: those the plan started and those an interruption
	// notice did, which no plan lists.)
	if got := e.launches() - launches; got != res.replacements {
		t.Errorf("%s: %d launches, %d of them replacements of its actions: the rest were bought for pods a disruption left pending", name, got, res.replacements)
	}
	e.instancesMatchNodes()
	res.after = e.fleetCost()
	res.scratch = e.scratchFleet(f)
	t.Logf("%s settled in %.1fs: %s; kept at the end: %s", name, took.Seconds(), res, keptSummary(ps[len(ps)-1].Plan))
	return res
}

// settled reports whether the last n passes each planned, had no action under way, started none,
// and planned no action, no candidate and no node kept for a reason that passes by itself (a
// budget of pods or nodes, a node too young or being disrupted).
func settled(passes []*provisioner.DisruptionPass, n int) bool {
	if len(passes) < n {
		return false
	}
	for _, p := range passes[len(passes)-n:] {
		if p.Plan == nil || p.Err != nil || len(p.Actions) > 0 || len(p.Started) > 0 || len(p.Plan.Actions) > 0 || len(p.Plan.Candidates) > 0 {
			return false
		}
		for _, k := range p.Plan.Kept {
			switch k.Reason {
			case api.KeepPDB, api.KeepBudget, api.KeepTooYoung, api.KeepDisrupting:
				return false
			}
		}
	}
	return true
}

// keptSummary counts a plan's kept nodes by reason.
func keptSummary(p *api.DisruptionPlan) string {
	if p == nil {
		return "-"
	}
	n := map[api.KeepReason]int{}
	for _, k := range p.Kept {
		n[k.Reason]++
	}
	var out []string
	for r, c := range n {
		out = append(out, fmt.Sprintf("%s %d", r, c))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// wave is the actions one pass started, and when.
type wave struct {
	at      time.Time
	actions []api.DisruptionAction
}

func waves(passes []*provisioner.DisruptionPass) []wave {
	var out []wave
	for _, p := range passes {
		if len(p.Started) == 0 || p.Plan == nil {
			continue
		}
		w := wave{at: p.Now}
		for _, a := range p.Plan.Actions {
			if slices.Contains(p.Started, a.ID) {
				w.actions = append(w.actions, a)
			}
		}
		out = append(out, w)
	}
	return out
}

// movesAsPlanned counts the pods the waves moved and those whose replicas kube-scheduler bound on
// the node the plan moved them to. A replica is a new pod, so moves are matched per Deployment:
// the replicas of an app created between a wave's start and the next wave's are the moved pods'
// replicas, and as many of them count as planned as the nodes they are bound on match, one for
// one, the nodes the wave's moves of that app named.
func movesAsPlanned(t testing.TB, ws []wave, log *podLog, start time.Time) (moves, asPlanned, again int) {
	t.Helper()
	for i, w := range ws {
		end := time.Now().Add(time.Hour)
		if i+1 < len(ws) {
			end = ws[i+1].at
		}
		planned := map[string][]string{} // app → nodes planned
		for _, a := range w.actions {
			for _, m := range a.Moves {
				app, seen := log.app(m.Pod)
				planned[app] = append(planned[app], m.To)
				moves++
				if seen.After(start) {
					again++
				}
			}
		}
		for app, want := range planned {
			got := log.boundBetween(app, w.at, end)
			matched := 0
			for _, n := range got {
				if j := slices.Index(want, n); j >= 0 {
					want = slices.Delete(want, j, j+1)
					matched++
				}
			}
			asPlanned += matched
			if len(want) > 0 {
				t.Logf("wave at %s: %d pods of %s moved elsewhere than planned (planned %v still open; replicas bound on %v)",
					w.at.Format(time.TimeOnly), len(want), app, want, got)
			}
		}
	}
	return moves, asPlanned, again
}

// podLog records every pod of a namespace: its app, when the watch first saw it, and where and
// when it was first seen bound.
type podLog struct {
	mu   sync.Mutex
	pods map[string]*loggedPod // by namespace/name
	stop context.CancelFunc
	done chan struct{}
}

type loggedPod struct {
	app      string
	node     string
	boundAt  time.Time
	observed time.Time // first seen
	evicted  bool      // seen with the DisruptionTarget condition the Eviction API sets
	// before: evicted before the log began (a pod an earlier phase evicted from a node not
	// Ready, still terminating until the pod garbage collector deletes it): not counted.
	before bool
}

func (e *env) watchPods(ns string) *podLog {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	l := &podLog{pods: map[string]*loggedPod{}, stop: cancel, done: make(chan struct{})}
	for i := range list.Items {
		l.see(&list.Items[i])
	}
	for _, lp := range l.pods {
		lp.before, lp.evicted = lp.evicted, false
	}
	go func() {
		defer close(l.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
				l.see(p)
			}
		}
	}()
	return l
}

func (l *podLog) see(p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	lp := l.pods[key]
	if lp == nil {
		lp = &loggedPod{app: p.Labels["app"], observed: time.Now()}
		l.pods[key] = lp
	}
	if lp.node == "" && p.Spec.NodeName != "" {
		lp.node, lp.boundAt = p.Spec.NodeName, time.Now()
	}
	if reason, _ := disruptionTarget(p); reason == "EvictionByEvictionAPI" && !lp.before {
		lp.evicted = true
	}
}

// evictions counts the pods seen evicted through the Eviction API.
func (l *podLog) evictions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, lp := range l.pods {
		if lp.evicted {
			n++
		}
	}
	return n
}

func (l *podLog) finish() *podLog {
	l.stop()
	<-l.done
	return l
}

// app returns the app of a pod and when the watch first saw it.
func (l *podLog) app(key string) (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pods[key]; p != nil {
		return p.app, p.observed
	}
	return "", time.Time{}
}

// boundBetween lists the nodes of the pods of app created in [from, to).
func (l *podLog) boundBetween(app string, from, to time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.pods {
		// (When the watch first saw it: creation timestamps have whole seconds.)
		if p.app == app && !p.observed.Before(from) && p.observed.Before(to) && p.node != "" {
			out = append(out, p.node)
		}
	}
	return out
}

// longestUnbound is the longest a pod first seen after since waited from being seen to being
// bound; a pod never bound counts until now.
func (l *podLog) longestUnbound(since time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	for _, p := range l.pods {
		if p.observed.Before(since) {
			continue
		}
		end := p.boundAt
		if p.node == "" {
			end = time.Now()
		}
		longest = max(longest, end.Sub(p.observed))
	}
	return longest
}

// scratchFleet is what Tiler buys from nothing, under the fleet's policy, for the pods the fleet
// runs after the scale-down.
func (e *env) scratchFleet(f *campaignFleet) float64 {
	e.t.Helper()
	var pods []*corev1.Pod
	for _, a := range f.apps {
		for i := range a.after {
			p := a.tmpl.DeepCopy()
			p.Name = fmt.Sprintf("%s-%d", a.name, i)
			pods = append(pods, p)
		}
	}
	return e.scratchPlan(f.policy.String(), pods).CostPerHour
}

// podsOn lists the pods of ns bound to node.
func (e *env) podsOn(ns, node string) []corev1.Pod {
	e.t.Helper()
	list, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}
