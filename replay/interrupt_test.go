package replay_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/replay"
)

// spotPolicy is the named policy buying the given capacity types (none: on-demand only).
func spotPolicy(t testing.TB, name string, caps ...api.CapacityType) replay.Policy {
	t.Helper()
	pols, err := replay.Policies(caps)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pols {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no policy %s", name)
	return replay.Policy{}
}

// checkAccounting checks what must hold of any run: every pod accounted for, the removals by
// reason summing to the removals, the interruptions' evictions among the evictions, and every
// interrupted node removed as interrupted (drained, or still there at the reclaim) unless it was
// still running at the window's end or booting when the cloud took it.
func checkAccounting(t *testing.T, wl *replay.Workload, r *replay.Result) {
	t.Helper()
	if r.Pods != len(wl.Pods) || r.Bound+r.NeverBound != r.Pods || len(r.Unbound) != r.NeverBound {
		t.Errorf("%s: %d pods, %d bound, %d never bound (%d named); want all %d accounted for", r.Policy, r.Pods, r.Bound, r.NeverBound, len(r.Unbound), len(wl.Pods))
	}
	sum := 0
	for _, n := range r.Removals {
		sum += n
	}
	if sum != r.NodesRemoved || r.NodesRemoved > r.NodesLaunched {
		t.Errorf("%s: removals %v sum to %d; %d removed of %d launched", r.Policy, r.Removals, sum, r.NodesRemoved, r.NodesLaunched)
	}
	if r.InterruptionEvictions > r.Evictions {
		t.Errorf("%s: %d evictions by interruptions of %d in all", r.Policy, r.InterruptionEvictions, r.Evictions)
	}
	if got := r.Removals["interrupted"] + r.Removals["interrupted:reclaimed"]; got > r.Interruptions {
		t.Errorf("%s: %d nodes removed as interrupted, %d interruptions", r.Policy, got, r.Interruptions)
	}
	if d := r.Cost - r.SpotCost - r.OnDemandCost; math.Abs(d) > 1e-6 {
		t.Errorf("%s: $%.2f ≠ spot $%.2f + on-demand $%.2f", r.Policy, r.Cost, r.SpotCost, r.OnDemandCost)
	}
}

// steadyWorkload is n pods of one whole GPU (a g4dn.xlarge each, the cheapest GPU node: the
// embedded catalog sells spot for GPU types only) running for the whole window.
func steadyWorkload(n int, length time.Duration) *replay.Workload {
	wl := &replay.Workload{Name: "steady", Start: replay.ReplayEpoch, Length: length}
	for i := range n {
		wl.Pods = append(wl.Pods, replay.Pod{Name: fmt.Sprintf("p%02d", i), Arrive: 0, Depart: length, CPUMilli: 3000, MemoryMiB: 12288,
			NumGPUs: 1, GPUMilli: 1000})
	}
	return wl
}

// TestSpotInterruptionsFollowRate: over a day of ten one-GPU pods on spot, the interruptions
// counted are within four standard deviations of rate × spot instance-hours (a Poisson count),
// under two rates and seeds; no pod is lost (Run checks that no pod stays bound to a node that
// is gone), the accounting adds up, and every interruption evicts the pod of its node.
func TestSpotInterruptionsFollowRate(t *testing.T) {
	wl := steadyWorkload(10, 24*time.Hour)
	pol := spotPolicy(t, replay.PolicyTilerNoConsolidation, api.Spot)
	for _, c := range []struct {
		rate float64
		seed uint64
	}{{0.1, 1}, {0.4, 2}} {
		rate, seed := c.rate, c.seed
		cfg := config(t)
		cfg.SpotInterruptionRate, cfg.InterruptionSeed = rate, seed
		r, err := replay.Run(wl, pol, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, wl, r)
		want := rate * r.SpotHours
		if r.SpotHours < 200 || math.Abs(float64(r.Interruptions)-want) > 4*math.Sqrt(want) {
			t.Errorf("rate %g, seed %d: %d interruptions over %.1f spot instance-hours; want %.1f ± %.1f", rate, seed, r.Interruptions,
				r.SpotHours, want, 4*math.Sqrt(want))
		}
		if r.Interruptions == 0 || r.InterruptionEvictions < r.Interruptions*9/10 || r.Bound != len(wl.Pods) {
			t.Errorf("rate %g, seed %d: %d interruptions evicted %d pods, %d of %d bound; want (about) one eviction each and every pod bound",
				rate, seed, r.Interruptions, r.InterruptionEvictions, r.Bound, len(wl.Pods))
		}
		t.Logf("rate %g, seed %d: %d interruptions over %.1f spot instance-hours (expected %.1f), %d evictions, rewait %s, $%.2f, launched %d, removals %v",
			rate, seed, r.Interruptions, r.SpotHours, want, r.InterruptionEvictions, r.InterruptionRewait, r.Cost, r.NodesLaunched, r.Removals)
	}
}

// TestSpotInterruptionReplacedFirst: a GPU pod on a spot node that the cloud interrupts moves to a
// replacement launched at the notice. When the replacement is usable within the notice less the
// drain margin (30 s < 2 min − 45 s), the node drains once the replacement is usable and the pod
// waits not at all; when it takes the defaults (3 min to Ready, 1 more for the GPUs), the node
// drains at the margin before the deadline and the pod waits for the replacement, at least
// 4 min − (2 min − 45 s) each time, which counts in its pending time.
func TestSpotInterruptionReplacedFirst(t *testing.T) {
	wl := steadyWorkload(1, 12*time.Hour)
	pol := spotPolicy(t, replay.PolicyTilerNoConsolidation, api.Spot)
	cfg := config(t)
	// Seed 2: no replacement is itself reclaimed while it boots (then the pod waits for the
	// registration timeout, as in the controller; TestSpotInterruptionsFollowRate meets that).
	cfg.SpotInterruptionRate, cfg.InterruptionSeed = 0.5, 2
	slowBoot, slowDevices := cfg.GPUBootDelay, cfg.DeviceDelay
	cfg.GPUBootDelay, cfg.DeviceDelay = 30*time.Second, 0
	fast, err := replay.Run(wl, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, wl, fast)
	if fast.Removals["registration-timeout"] != 0 {
		t.Fatalf("a replacement was reclaimed while booting (removals %v): choose another seed", fast.Removals)
	}
	if fast.Interruptions < 2 || fast.InterruptionEvictions != fast.Interruptions || fast.InterruptionRewait != 0 ||
		fast.NodesLaunched != 1+fast.Interruptions || fast.Removals["interrupted"] != fast.Interruptions {
		t.Errorf("fast boot: %d interruptions, %d evictions, rewait %s, %d launched, removals %v; want each replaced before the drain, no wait",
			fast.Interruptions, fast.InterruptionEvictions, fast.InterruptionRewait, fast.NodesLaunched, fast.Removals)
	}
	margin := cfg.Controller.InterruptionDrainMargin
	for _, e := range fast.InterruptionLog {
		// The replacement is bought at the notice on another offering (the interrupted one is
		// marked unavailable), and the node drains when the replacement is usable.
		if e.Replacement == "" || e.ReplacementOffering == nil || *e.ReplacementOffering == e.Offering || !e.Gone ||
			e.Removed != e.Notice+cfg.GPUBootDelay || e.Evicted != 1 {
			t.Errorf("fast boot: %+v; want a replacement on another offering, the node drained %s after the notice", e, cfg.GPUBootDelay)
		}
	}
	// (The pod arrives at the start, when a resync batch buys for it at once.)
	if fast.PendingMax != cfg.GPUBootDelay {
		t.Errorf("fast boot: pending max %s; want only the first boot", fast.PendingMax)
	}
	cfg.GPUBootDelay, cfg.DeviceDelay = slowBoot, slowDevices
	slow, err := replay.Run(wl, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, wl, slow)
	usable := cfg.GPUBootDelay + cfg.DeviceDelay
	for _, e := range slow.InterruptionLog {
		// The replacement is not usable by the margin before the deadline: the node drains then.
		if e.Replacement == "" || !e.Gone || e.Removed != e.Reclaim-margin {
			t.Errorf("slow boot: %+v; want a replacement and the node drained %s before the reclaim", e, margin)
		}
	}
	gap := usable - (cfg.InterruptionGrace - cfg.Controller.InterruptionDrainMargin)
	if slow.Interruptions < 2 || slow.InterruptionEvictions < 2 || slow.InterruptionRewait < time.Duration(slow.InterruptionEvictions)*gap ||
		slow.InterruptionRewait > time.Duration(slow.InterruptionEvictions)*usable || slow.PendingMax != usable+slow.InterruptionRewait {
		t.Errorf("slow boot: %d interruptions, %d evictions, rewait %s, pending max %s; want at least %s per eviction, counted in the pending time",
			slow.Interruptions, slow.InterruptionEvictions, slow.InterruptionRewait, slow.PendingMax, gap)
	}
	t.Logf("fast: %d interruptions, $%.2f; slow: %d interruptions, %d evictions, rewait %s", fast.Interruptions, fast.Cost,
		slow.Interruptions, slow.InterruptionEvictions, slow.InterruptionRewait)
}

// TestSpotInterruptionsSeeded: half an hour of workload 1 on spot and on-demand under tiler at a high
// rate gives the same result twice with the same seed and a different one with another seed;
// policies buying on-demand only are never interrupted.
func TestSpotInterruptionsSeeded(t *testing.T) {
	wl := alibaba(t, replay.DefaultAlibabaFrom+6*time.Hour, 30*time.Minute)
	pol := spotPolicy(t, replay.PolicyTiler, api.Spot, api.OnDemand)
	cfg := config(t)
	cfg.SpotInterruptionRate = 0.5
	run := func(seed uint64) *replay.Result {
		c := cfg
		c.InterruptionSeed = seed
		r, err := replay.Run(wl, pol, c)
		if err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, wl, r)
		return r
	}
	a, b, c := run(1), run(1), run(2)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, two results:\n%+v\n%+v", a, b)
	}
	if a.Interruptions == 0 || a.SpotHours == 0 {
		t.Fatalf("seed 1: %d interruptions over %.1f spot instance-hours; want some", a.Interruptions, a.SpotHours)
	}
	if a.Interruptions == c.Interruptions && a.Cost == c.Cost && reflect.DeepEqual(a.Waits, c.Waits) {
		t.Errorf("seeds 1 and 2 gave the same interruptions (%d), cost and waits", a.Interruptions)
	}
	t.Logf("seed 1: %d interruptions, %d evictions, $%.2f (spot $%.2f); seed 2: %d, %d, $%.2f", a.Interruptions, a.InterruptionEvictions,
		a.Cost, a.SpotCost, c.Interruptions, c.InterruptionEvictions, c.Cost)

	od := spotPolicy(t, replay.PolicyTiler, api.OnDemand)
	r, err := replay.Run(wl, od, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Interruptions != 0 || r.SpotHours != 0 || r.InterruptionEvictions != 0 {
		t.Errorf("on-demand only: %d interruptions over %.1f spot instance-hours", r.Interruptions, r.SpotHours)
	}
}

// TestSpotInterruptionConfig: a bad rate or grace is refused naming the field; the table shows
// the interruptions column and the rate when spot was bought.
func TestSpotInterruptionConfig(t *testing.T) {
	wl := steadyWorkload(1, time.Hour)
	pol := spotPolicy(t, replay.PolicyTilerNoConsolidation, api.Spot)
	for field, mutate := range map[string]func(*replay.Config){
		"spotInterruptionRate": func(c *replay.Config) { c.SpotInterruptionRate = -1 },
		"interruptionGrace":    func(c *replay.Config) { c.InterruptionGrace = -time.Second },
	} {
		cfg := config(t)
		mutate(&cfg)
		if _, err := replay.Run(wl, pol, cfg); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v; want an error naming it", field, err)
		}
	}
	cfg := config(t)
	if cfg.SpotInterruptionRate != replay.DefaultSpotInterruptionRate || cfg.InterruptionGrace != 2*time.Minute {
		t.Errorf("defaults: rate %g, grace %s", cfg.SpotInterruptionRate, cfg.InterruptionGrace)
	}
	cfg.SpotInterruptionRate = 2
	rep, err := replay.Compare(wl, []replay.Policy{pol}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Interruptions == 0 || !strings.Contains(sb.String(), "interrupted") || !strings.Contains(sb.String(), "spot interruptions: 2 per spot instance-hour, seed 1") {
		t.Errorf("%d interruptions; table:\n%s", r.Interruptions, sb.String())
	}
}
