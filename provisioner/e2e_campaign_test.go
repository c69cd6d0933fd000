package provisioner_test

import (
	"context"
	"fmt"
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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestE2EConsolidationCampaign consolidates generated fleets on the real control plane, one seed
// per subtest: a random cost policy and a few Deployments of random shapes (CPU and memory sizes,
// whole GPUs, a hard zone spread, required or preferred hostname anti-affinity, a
// PodDisruptionBudget, do-not-disrupt) are bought for by the controller, then scaled down at
// random, and the controller's consolidation runs until it plans nothing more. Over the whole
// run it must lose no pod (every replica bound and Ready at the end), break no budget (a watch
// per Deployment never sees more pods unavailable than its PodDisruptionBudget allows), buy
// nothing but the replacements its actions planned (a pod an action evicted that kube-scheduler
// would not bind where the plan moved it would stay pending, and the controller would buy for it
// after disruption-reschedule-grace), abandon no action, leak no instance, cordon no node before
// its replacement is Ready, and end on a fleet that costs no more than it began. It reports, per
// seed and in total, how many moved pods kube-scheduler bound on the node the plan moved them
// to (the replicas are new pods, so a move is matched per Deployment and wave of actions), how
// many moved pods were replicas of pods moved earlier in the run (moved a second time), the
// longest a replica waited unbound, and the fleet's cost against a purchase from scratch.
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
	var total campaignResult
	for seed := first; seed < first+uint64(n); seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			r := runConsolidationSeed(t, cp, seed)
			total.add(r)
		})
	}
	t.Logf("campaign, seeds %d–%d: %s", first, first+uint64(n)-1, total)
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
	policy string
	apps   []campaignApp
}

func (f campaignFleet) String() string {
	var b strings.Builder
	for _, a := range f.apps {
		fmt.Fprintf(&b, "\n  %s: %d → %d pods, %s", a.name, a.replicas, a.after, strings.Join(a.what, ", "))
	}
	return strings.TrimSpace(f.policy) + b.String()
}

var (
	campaignZones    = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	campaignCPUTypes = []string{"m7i.large", "m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge", "c7i.xlarge", "c7i.2xlarge", "r7i.large", "r7i.xlarge", "r7i.2xlarge"}
	campaignGPUTypes = []string{"g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.12xlarge"}
)

// genCampaignFleet builds the scenario of a seed.
func genCampaignFleet(seed uint64) campaignFleet {
	r := rand.New(rand.NewPCG(seed, 0x636f6e73))
	f := campaignFleet{ns: fmt.Sprintf("campaign-%d", seed)}
	zones := campaignZones
	if r.IntN(3) == 0 {
		zones = zones[:2]
	}
	pick := func(from []string, lo, hi int) []string {
		xs := slices.Clone(from)
		r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		return xs[:lo+r.IntN(hi-lo+1)]
	}
	capacity := "[on-demand]"
	if r.IntN(4) == 0 {
		capacity = "[spot, on-demand]"
	}
	list := func(xs []string) string { return "[" + strings.Join(xs, ", ") + "]" }
	// Every pod fits some type of its pool: the CPU pool has one with 8 vCPUs or more.
	cpuTypes := pick(campaignCPUTypes, 2, 5)
	if !slices.ContainsFunc(cpuTypes, func(t string) bool { return strings.HasSuffix(t, "2xlarge") || strings.HasSuffix(t, "4xlarge") }) {
		cpuTypes = append(cpuTypes, "m7i.2xlarge")
	}
	f.policy = fmt.Sprintf(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: cpu
  instanceTypes: %s
  capacityTypes: %s
  zones: %s
  disruption:
    consolidateAfter: 2s
`, list(cpuTypes), capacity, list(zones))
	gpu := r.IntN(2) == 0
	if gpu {
		f.policy += fmt.Sprintf(`- name: gpu
  instanceTypes: %s
  capacityTypes: [on-demand]
  zones: %s
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  disruption:
    consolidateAfter: 2s
`, list(pick(campaignGPUTypes, 2, 3)), list(zones))
	}
	apps := 3 + r.IntN(3)
	shrunk := false
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
		f.apps = append(f.apps, a)
	}
	return f
}

// campaignResult tallies what a run showed.
type campaignResult struct {
	seeds, actions, replaces, deletes int
	moves, asPlanned, movedAgain      int
	longestUnbound                    time.Duration
	before, after, scratch            float64
}

func (c *campaignResult) add(o campaignResult) {
	c.seeds += o.seeds
	c.actions += o.actions
	c.replaces += o.replaces
	c.deletes += o.deletes
	c.moves += o.moves
	c.asPlanned += o.asPlanned
	c.movedAgain += o.movedAgain
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
	return fmt.Sprintf("%d seeds, %d actions done (%d Replace, %d Delete); %d pods moved, %d bound where planned, %d moved a second time; longest a replica waited unbound %s; fleet $%.3f/h → $%.3f/h (from scratch $%.3f/h, ratio %.3f)",
		c.seeds, c.actions, c.replaces, c.deletes, c.moves, c.asPlanned, c.movedAgain, c.longestUnbound.Round(time.Millisecond), c.before, c.after, c.scratch, ratio)
}

// runConsolidationSeed runs one generated fleet through purchase, scale-down and consolidation.
func runConsolidationSeed(t *testing.T, cp *controlplane.ControlPlane, seed uint64) campaignResult {
	f := genCampaignFleet(seed)
	t.Logf("seed %d:\n%s", seed, f)
	cfg := disruptionConfig()
	// (TILER_CAMPAIGN_CANDIDATE_TAINT=0 measures the campaign without the candidate taint.)
	cfg.DisruptionCandidateTaint = os.Getenv("TILER_CAMPAIGN_CANDIDATE_TAINT") != "0"
	e, passes := newDisruptionEnv(t, cp, cfg, nil)
	e.namespace(f.ns)
	e.applyPolicy("policy", f.policy)
	for _, a := range f.apps {
		if a.maxUnavailable != nil || a.minAvailable != nil {
			e.pdb(f.ns, a.name, a.maxUnavailable, a.minAvailable)
		}
		e.deployment(f.ns, a.name, a.replicas, a.tmpl)
	}
	for _, a := range f.apps {
		e.waitAppReady(f.ns, a.name, int(a.replicas), 120*time.Second)
	}
	res := campaignResult{seeds: 1, before: e.fleetCost()}
	launches := e.launches()
	pods := e.watchPods(f.ns)
	nw := e.watchNodes()
	avail := map[string]*availabilityWatch{}
	for _, a := range f.apps {
		avail[a.name] = e.watchAvailability(f.ns, a.name, int(a.after))
	}
	start := time.Now()
	for _, a := range f.apps {
		if a.after != a.replicas {
			e.scale(f.ns, a.name, a.after)
		}
	}
	for _, a := range f.apps {
		e.waitAppReady(f.ns, a.name, int(a.after), 60*time.Second)
	}
	mark := len(passes.all())
	testwait.Until(t, testwait.Slow, "consolidation to plan nothing more for three passes in a row", 240*time.Second, func() bool {
		return settled(passes.all()[mark:], 3)
	})
	took := time.Since(start)
	for _, a := range f.apps {
		e.waitAppReady(f.ns, a.name, int(a.after), 30*time.Second)
	}
	events := nw.finish()
	log := pods.finish()
	for _, a := range f.apps {
		missing, _ := avail[a.name].finish()
		if a.allowed >= 0 && missing > a.allowed {
			t.Errorf("%s: %d pods unavailable at once; its PodDisruptionBudget allows %d", a.name, missing, a.allowed)
		}
	}
	// What the actions did, and where their moved pods landed.
	all := passes.all()
	ws := waves(all)
	replacements := 0
	for _, w := range ws {
		for _, a := range w.actions {
			if a.Replacement != nil {
				replacements++
			}
		}
	}
	for _, p := range all {
		if p.Err != nil {
			t.Logf("pass at %s: %v", p.Now.Format(time.TimeOnly), p.Err)
		}
		for _, a := range p.Actions {
			switch a.Step {
			case provisioner.ActionAbandoned:
				t.Errorf("action %s on %v abandoned: %s", a.ID, a.Nodes, a.Message)
			case provisioner.ActionDone:
				res.actions++
				if a.Kind == api.ActionReplace {
					res.replaces++
					for _, old := range a.Nodes {
						readyBeforeCordon(t, events, old, a.Replacement)
					}
				} else {
					res.deletes++
				}
			}
		}
	}
	res.moves, res.asPlanned, res.movedAgain = movesAsPlanned(t, ws, log, start)
	res.longestUnbound = log.longestUnbound(start)
	if got := e.launches() - launches; got != replacements {
		t.Errorf("%d launches during consolidation, %d of them replacements its actions planned: the rest were bought for pods a disruption left pending", got, replacements)
	}
	e.instancesMatchNodes()
	res.after = e.fleetCost()
	if res.after > res.before+1e-9 {
		t.Errorf("the fleet costs $%.4f/h after consolidation, $%.4f/h before", res.after, res.before)
	}
	res.scratch = e.scratchFleet(f)
	t.Logf("seed %d settled in %.1fs: %s; kept at the end: %s", seed, took.Seconds(), res, keptSummary(all[len(all)-1].Plan))
	e.cleanupNamespace(f.ns)
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
func movesAsPlanned(t *testing.T, ws []wave, log *podLog, start time.Time) (moves, asPlanned, again int) {
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
func (e *env) scratchFleet(f campaignFleet) float64 {
	e.t.Helper()
	var pods []*corev1.Pod
	for _, a := range f.apps {
		for i := range a.after {
			p := a.tmpl.DeepCopy()
			p.Name = fmt.Sprintf("%s-%d", a.name, i)
			pods = append(pods, p)
		}
	}
	return e.scratchPlan(f.policy, pods).CostPerHour
}
