package replay_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/replay"
	"github.com/tiler-dev/tiler/simulator/fgd"
)

const tracePath = "../testdata/alibaba-gpu-v2023/openb_pod_list_default.csv"

func alibaba(t testing.TB, from, length time.Duration) *replay.Workload {
	t.Helper()
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := replay.ReadAlibaba("openb_pod_list_default", f, from, length)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func config(t testing.TB) replay.Config {
	t.Helper()
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	return replay.DefaultConfig(cat)
}

// tilerAndBound replays the workload under tiler and computes its clairvoyant bound.
func tilerAndBound(t testing.TB, w *replay.Workload, cfg replay.Config) (*replay.Result, *replay.Bound) {
	t.Helper()
	r, err := replay.Run(w, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replay.ClairvoyantBound(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, b
}

// policy is the named policy buying on-demand only (replay.Policies' default).
func policy(t testing.TB, name string) replay.Policy {
	t.Helper()
	return spotPolicy(t, name)
}

// TestInvariants replays two hours of the Alibaba trace under every policy and checks what must
// hold whatever the numbers: the run ends without a binding that overcommits a node (Run checks
// every node a scheduling pass binds to), every pod is either bound or reported by name, the cost
// splits into spot and on-demand, nodes are not removed more often than launched, the series
// covers the window, and no policy costs less than the clairvoyant bound.
func TestInvariants(t *testing.T) {
	wl := alibaba(t, replay.DefaultAlibabaFrom, 2*time.Hour)
	pols, err := replay.Policies(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t)
	rep, err := replay.Compare(wl, pols, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound.Cost <= 0 || rep.Bound.Intervals < 2 {
		t.Fatalf("bound %+v: want a positive cost over the intervals between arrivals and departures", rep.Bound)
	}
	for _, r := range rep.Results {
		if r.Pods != len(wl.Pods) || r.Bound+r.NeverBound != r.Pods || len(r.Unbound) != r.NeverBound {
			t.Errorf("%s: %d pods, %d bound, %d never bound (%d reported); want all %d accounted for", r.Policy, r.Pods, r.Bound, r.NeverBound, len(r.Unbound), len(wl.Pods))
		}
		if r.Cost < rep.Bound.Cost {
			t.Errorf("%s: $%.2f is below the clairvoyant bound $%.2f", r.Policy, r.Cost, rep.Bound.Cost)
		}
		if d := r.Cost - r.SpotCost - r.OnDemandCost; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: $%.2f ≠ spot $%.2f + on-demand $%.2f", r.Policy, r.Cost, r.SpotCost, r.OnDemandCost)
		}
		if r.SpotCost != 0 {
			t.Errorf("%s: bought spot for $%.2f; the default config buys on-demand only", r.Policy, r.SpotCost)
		}
		if r.NodesRemoved > r.NodesLaunched || r.NodesLaunched == 0 {
			t.Errorf("%s: %d launched, %d removed", r.Policy, r.NodesLaunched, r.NodesRemoved)
		}
		if want := int(wl.Length / cfg.SampleInterval); len(r.Series) < want {
			t.Errorf("%s: %d samples; want at least %d", r.Policy, len(r.Series), want)
		}
		if r.PendingP50 > r.PendingP95 || r.PendingP95 > r.PendingP99 || r.PendingP99 > r.PendingMax {
			t.Errorf("%s: pending quantiles out of order: %s %s %s %s", r.Policy, r.PendingP50, r.PendingP95, r.PendingP99, r.PendingMax)
		}
		if r.PlanErrors != 0 {
			t.Errorf("%s: %d batches failed to plan", r.Policy, r.PlanErrors)
		}
		t.Logf("%s: $%.2f (%.2f× bound), GPU alloc %.0f%%, pending p95 %s, %d unbound", r.Policy, r.Cost, r.Cost/rep.Bound.Cost,
			100*r.GPUAllocation(), r.PendingP95, r.NeverBound)
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{replay.PolicyClairvoyant}, replay.PolicyTiler, replay.PolicyWholeGPU) {
		if !strings.Contains(sb.String(), name) {
			t.Errorf("table lacks %s:\n%s", name, sb.String())
		}
	}
}

// TestOnePodTimeline follows one GPU pod through the event loop: the batch after BatchIdle
// launches one node, which registers after the GPU boot delay and publishes its GPUs after the
// device delay, when the pod is bound; after the pod leaves, the node is removed as empty once
// EmptyNodeTTL has passed (seen at a resync).
func TestOnePodTimeline(t *testing.T) {
	cfg := config(t)
	// Off the resync grid (every ResyncPeriod from the start), so the batch comes BatchIdle after.
	arrive := 10*time.Minute + 3*time.Second
	wl := &replay.Workload{Name: "one", Start: replay.ReplayEpoch, Length: 2 * time.Hour, Pods: []replay.Pod{
		{Name: "train", Arrive: arrive, Depart: time.Hour, CPUMilli: 4000, MemoryMiB: 16384, NumGPUs: 1, GPUMilli: 1000},
	}}
	// Without consolidation, which would remove the empty node by its own rule.
	r, err := replay.Run(wl, policy(t, replay.PolicyTilerNoConsolidation), cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantWait := cfg.Controller.BatchIdle + cfg.GPUBootDelay + cfg.DeviceDelay
	if r.NodesLaunched != 1 || r.Bound != 1 || r.PendingMax != wantWait {
		t.Fatalf("launched %d, bound %d, waited %s; want one node and the pod bound after %s", r.NodesLaunched, r.Bound, r.PendingMax, wantWait)
	}
	if r.NodesRemoved != 1 || r.Removals["empty"] != 1 {
		t.Fatalf("removals %v; want the node removed as empty", r.Removals)
	}
	// Billed from the launch to a removal between EmptyNodeTTL and one resync later after the
	// departure.
	launched := arrive + cfg.Controller.BatchIdle
	minH := (time.Hour + cfg.Controller.EmptyNodeTTL - launched).Hours()
	maxH := minH + (2 * cfg.Controller.ResyncPeriod).Hours()
	if r.GPUHoursBought < minH || r.GPUHoursBought > maxH {
		t.Errorf("GPU-hours bought %.3f; want the node held %.3f–%.3f h", r.GPUHoursBought, minH, maxH)
	}
	if got := r.Cost / r.GPUHoursBought; got <= 0 {
		t.Errorf("price per GPU-hour %.3f", got)
	}
}

// TestConsolidationReplaces: two pods arrive together and share a node; when the big one leaves,
// tiler replaces the node by a smaller one (one eviction) and pays less than without
// consolidation, which keeps the big node.
func TestConsolidationReplaces(t *testing.T) {
	cfg := config(t)
	wl := &replay.Workload{Name: "shrink", Start: replay.ReplayEpoch, Length: 6 * time.Hour, Pods: []replay.Pod{
		{Name: "small", Arrive: 0, Depart: 6 * time.Hour, CPUMilli: 3000, MemoryMiB: 4096},
		{Name: "big", Arrive: 0, Depart: time.Hour, CPUMilli: 12000, MemoryMiB: 16384},
	}}
	with, err := replay.Run(wl, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	without, err := replay.Run(wl, policy(t, replay.PolicyTilerNoConsolidation), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if without.Evictions != 0 || without.NodesLaunched != 1 {
		t.Fatalf("without consolidation: %d evictions, %d launched; want the first node kept", without.Evictions, without.NodesLaunched)
	}
	if with.Evictions != 1 || with.NodesLaunched != 2 || with.Removals["consolidation:Underutilized"] != 1 || with.Cost >= without.Cost {
		t.Fatalf("with consolidation: %d evictions, %d launched, removals %v, $%.2f vs $%.2f; want the node replaced by a cheaper one",
			with.Evictions, with.NodesLaunched, with.Removals, with.Cost, without.Cost)
	}
}

// TestFromAlibaba: the window takes the pods alive in it, carries the ones alive at its start,
// cuts the ones alive at its end; a pod list without times is refused, naming what is missing.
func TestFromAlibaba(t *testing.T) {
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"before,1000,1024,0,0,,LS,Running,0,100,0\n" +
		"carried,1000,1024,1,500,T4,LS,Running,50,200,50\n" +
		"inside,1000,1024,1,1000,P100,LS,Failed,150,250,150\n" +
		"cut,1000,1024,0,0,,LS,Running,250,9000,250\n" +
		"after,1000,1024,0,0,,LS,Running,400,500,400\n"
	w, err := replay.ReadAlibaba("t", strings.NewReader(in), 100*time.Second, 200*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]replay.Pod{}
	for _, p := range w.Pods {
		got[p.Name] = p
	}
	if len(got) != 3 {
		t.Fatalf("pods %v; want carried, inside, cut", w.Pods)
	}
	if c := got["carried"]; !c.Carried || c.Arrive != 0 || c.Depart != 100*time.Second || len(c.GPUModels) != 1 || c.GPUModels[0] != "T4" {
		t.Errorf("carried: %+v", c)
	}
	if c := got["inside"]; c.Carried || c.Arrive != 50*time.Second || c.GPUModels != nil {
		t.Errorf("inside: %+v; want arrival at 50s, any GPU (P100 has no catalog counterpart)", c)
	}
	if c := got["cut"]; c.Depart != 200*time.Second {
		t.Errorf("cut: %+v; want it to leave at the window's end", c)
	}
	_, err = replay.ReadAlibaba("t", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,0,0,\n"), 0, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "creation_time") {
		t.Errorf("pod list without times: %v", err)
	}
	var pe *fgd.ParseError
	_, err = replay.ReadAlibaba("t", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\np,1,1,0,0,,x,5\n"), 0, time.Hour)
	if !errors.As(err, &pe) || pe.Field != "creation_time" {
		t.Errorf("bad creation_time: %v", err)
	}
}

// TestBoundBelowOneNode: one pod for an hour is bounded by the cheapest offering that holds it,
// and the bound grows when another pod joins.
func TestBoundBelowOneNode(t *testing.T) {
	cfg := config(t)
	one := &replay.Workload{Name: "b", Start: replay.ReplayEpoch, Length: time.Hour, Pods: []replay.Pod{
		{Name: "a", Arrive: 0, Depart: time.Hour, CPUMilli: 6000, MemoryMiB: 12288, NumGPUs: 1, GPUMilli: 460},
	}}
	b1, err := replay.ClairvoyantBound(one, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(one, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b1.Cost <= 0 || b1.Cost > r.Cost {
		t.Fatalf("bound $%.3f, tiler $%.3f; want 0 < bound ≤ cost", b1.Cost, r.Cost)
	}
	two := *one
	two.Pods = append(append([]replay.Pod(nil), one.Pods...), replay.Pod{Name: "b", Arrive: 30 * time.Minute, Depart: time.Hour, CPUMilli: 32000, MemoryMiB: 65536})
	b2, err := replay.ClairvoyantBound(&two, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b2.Cost <= b1.Cost || b2.Intervals != 2 {
		t.Errorf("bound with a second pod $%.3f over %d intervals; want more than $%.3f over 2", b2.Cost, b2.Intervals, b1.Cost)
	}
}

// TestWorkloadValidate names the field of bad workloads.
func TestWorkloadValidate(t *testing.T) {
	base := replay.Workload{Name: "v", Length: time.Hour, Pods: []replay.Pod{{Name: "a", Arrive: 0, Depart: time.Minute}}}
	cases := map[string]func(w *replay.Workload){
		"length must be positive": func(w *replay.Workload) { w.Length = 0 },
		"depart":                  func(w *replay.Workload) { w.Pods[0].Depart = 0 },
		"gpuMilli":                func(w *replay.Workload) { w.Pods[0].NumGPUs, w.Pods[0].GPUMilli = 1, 0 },
		"name is not unique":      func(w *replay.Workload) { w.Pods = append(w.Pods, w.Pods[0]) },
		"must ask for whole GPUs": func(w *replay.Workload) { w.Pods[0].NumGPUs, w.Pods[0].GPUMilli = 2, 500 },
		"outside the window":      func(w *replay.Workload) { w.Pods[0].Arrive = 2 * time.Hour },
	}
	for want, mutate := range cases {
		w := base
		w.Pods = append([]replay.Pod(nil), base.Pods...)
		mutate(&w)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

// TestDeterministic: the same workload, policy and configuration give the same result, series
// included — the replay reads no clock and orders everything it iterates.
func TestDeterministic(t *testing.T) {
	wl := alibaba(t, replay.DefaultAlibabaFrom+6*time.Hour, 30*time.Minute)
	cfg := config(t)
	a, err := replay.Run(wl, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replay.Run(wl, policy(t, replay.PolicyTiler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs differ:\n%+v\n%+v", a, b)
	}
}

// TestProgress: the progress callback sees the virtual time reached grow, spaced at least
// ProgressEvery apart, within the window, for the policy and for the bound.
func TestProgress(t *testing.T) {
	cfg := config(t)
	wl := &replay.Workload{Name: "p", Start: replay.ReplayEpoch, Length: 3 * time.Hour, Pods: []replay.Pod{
		{Name: "a", Arrive: 0, Depart: 2 * time.Hour, CPUMilli: 1000, MemoryMiB: 1024},
		{Name: "b", Arrive: 90 * time.Minute, Depart: 3 * time.Hour, CPUMilli: 1000, MemoryMiB: 1024},
	}}
	seen := map[string][]time.Duration{}
	cfg.ProgressEvery = time.Hour
	cfg.Progress = func(p string, reached, total time.Duration) {
		if total != wl.Length {
			t.Errorf("%s: total %s", p, total)
		}
		seen[p] = append(seen[p], reached)
	}
	if _, err := replay.Run(wl, policy(t, replay.PolicyTilerNoConsolidation), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.ClairvoyantBound(wl, cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{replay.PolicyTilerNoConsolidation, replay.PolicyClairvoyant} {
		r := seen[p]
		if len(r) < 2 || r[0] != 0 {
			t.Errorf("%s: progress %v; want it from 0", p, r)
		}
		for i := 1; i < len(r); i++ {
			if r[i]-r[i-1] < cfg.ProgressEvery || r[i] >= wl.Length {
				t.Errorf("%s: progress %v; want steps of at least %s within %s", p, r, cfg.ProgressEvery, wl.Length)
			}
		}
	}
}

// TestFromRecorded: a pod never deleted leaves at the window's end, one created before it is
// carried, one that left before it or came after it is not taken, and one that left before it was
// created is dropped.
func TestFromRecorded(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	rec := []replay.Recorded{
		{Name: "running", Created: t0.Add(time.Hour), CPUMilli: 100},
		{Name: "carried", Created: t0.Add(-time.Hour), Deleted: t0.Add(2 * time.Hour), CPUMilli: 100},
		{Name: "gone-before", Created: t0.Add(-2 * time.Hour), Deleted: t0, CPUMilli: 100},
		{Name: "after", Created: t0.Add(5 * time.Hour), CPUMilli: 100},
		{Name: "backwards", Created: t0.Add(2 * time.Hour), Deleted: t0.Add(time.Hour), CPUMilli: 100},
		{Name: "gpu", Created: t0.Add(30 * time.Minute), Deleted: t0.Add(90 * time.Minute), NumGPUs: 1, GPUMilli: 300},
	}
	w, err := replay.FromRecorded("r", rec, t0, 4*time.Hour, replay.ReplayEpoch)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range w.Pods {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "carried,gpu,running" {
		t.Fatalf("pods %s, want carried,gpu,running (by arrival)", got)
	}
	if c := w.Pods[0]; !c.Carried || c.Arrive != 0 || c.Depart != 2*time.Hour {
		t.Errorf("carried: %+v", c)
	}
	if r := w.Pods[2]; r.Carried || r.Arrive != time.Hour || r.Depart != 4*time.Hour {
		t.Errorf("running: %+v; want it to leave at the window's end", r)
	}
	if g := w.Pods[1]; g.GPUs() != 0.3 {
		t.Errorf("gpu: %+v", g)
	}
	if _, err := replay.FromRecorded("r", rec[2:4], t0, 4*time.Hour, replay.ReplayEpoch); err == nil {
		t.Error("a window without pods: no error")
	}
}
