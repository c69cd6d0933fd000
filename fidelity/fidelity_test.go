package fidelity

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
)

// fixedSeeds run in `make test`: a few seeds that together cover CPU pools with spread,
// anti-affinity, selectors and tolerations, whole GPUs, time-sliced GPUs and MIG slices.
var fixedSeeds = []uint64{7, 27, 35, 44}

// preemptionSeeds run GeneratePreemption scenarios in `make test` (ModeOn only: the modes differ
// in what Tiler tells the scheduler about bought nodes, not in preemption). Seeds 1–12 were run
// once each: the scheduler evicted exactly the planned victims, on the planned nodes, in 11; in
// seed 1 (two preemptors) it served the lower-priority one first and the preemptors took each
// other's node (4 victims instead of 3). These two have one preemptor each.
var preemptionSeeds = []uint64{3, 5}

// TestFidelity runs the fixed seeds in ModeOn and ModeOff, and every regression scenario in
// testdata/ on one real control plane. In the fixed seeds a planned pod the scheduler does not bind,
// or an unplanned pod it binds on a bought node, fails the test; pods bound elsewhere than planned
// are reported (nodes turn Ready one after the other, and the scheduler uses the first with room).
// Regression scenarios that name a known bug are skipped (FIDELITY_RUN_SKIPPED=1 runs them and logs
// what they show); the others fail on any disagreement they do not accept.
func TestFidelity(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	h := newTestHarness(t, cp)
	t.Run("seeds", func(t *testing.T) {
		var rep Report
		for _, seed := range fixedSeeds {
			sc := Generate(seed, GenOptions{})
			for _, mode := range []Mode{ModeOn, ModeOff} {
				out, err := h.Run(context.Background(), sc, mode)
				if err != nil {
					t.Fatal(err)
				}
				rep.Add(out)
				for _, p := range out.Disagreements() {
					if p.Verdict != VerdictMoved {
						t.Errorf("%s [mode %s]: %s %s: planned %s, bound %q (%s)", sc.Name, mode,
							p.Verdict, p.Pod, p.Planned, p.Bound, p.Message)
					}
				}
			}
		}
		var b strings.Builder
		_ = rep.Write(&b)
		t.Logf("\n%s", b.String())
	})
	t.Run("soft", func(t *testing.T) { runSoftSeeds(t, h) })
	t.Run("dra", func(t *testing.T) { runDRASeeds(t, h) })
	t.Run("preemption", func(t *testing.T) {
		for _, seed := range preemptionSeeds {
			sc := GeneratePreemption(seed)
			out, err := h.Run(context.Background(), sc, ModeOn)
			if err != nil {
				t.Fatal(err)
			}
			pre := out.Preemptions
			t.Logf("%s: planned %d preemption(s) evicting %v; the scheduler evicted %v; %d launch(es)", sc.Name,
				len(pre.Planned), pre.PlannedVictims, pre.Evicted, out.Launches)
			for _, p := range out.Pods {
				t.Logf("  %s %v: planned %s, bound %q: %s", p.Pod, p.Kinds, orNone(p.Planned, p.Reason), p.Bound, p.Verdict)
				if p.Verdict == VerdictNotBound || p.Verdict == VerdictPessimistic {
					t.Errorf("%s: %s %s: planned %s, bound %q (%s)", sc.Name, p.Verdict, p.Pod, p.Planned, p.Bound, p.Message)
				}
			}
			for _, n := range out.Notes {
				t.Errorf("%s: %s", sc.Name, n)
			}
		}
	})
	files, _ := filepath.Glob("testdata/*.txt")
	for _, f := range files {
		t.Run("regression/"+strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runRegression(t, h, f)
		})
	}
}

// softSeeds are generated with GenOptions.Soft: their soft constraints are honoured by the plan
// among equally cheap placements and by kube-scheduler by score.
var softSeeds = []uint64{44, 5}

// runSoftSeeds runs the soft seeds in ModeOn: every planned pod must bind (soft constraints never
// cost a hard one), and how often kube-scheduler bound a pod of kind soft to its planned node is
// logged (informational: the scheduler scores other plugins too, and nodes turn Ready one by one).
func runSoftSeeds(t *testing.T, h *Harness) {
	rep := runSeedsOn(t, h, softSeeds, GenOptions{Soft: true}, nil)
	s := rep.Tally(ModeOn, KindSoft)
	if s.Placed == 0 {
		t.Fatal("no pod of kind soft was placed")
	}
	t.Logf("kind soft: %d placed, %d bound on the planned node (%.0f%%), %d moved, %d not bound",
		s.Placed, s.Placed-s.Moved-s.NotBound, 100*float64(s.Placed-s.Moved-s.NotBound)/float64(s.Placed), s.Moved, s.NotBound)
}

// draSeeds are generated with GenOptions.DRA: who publishes a node's GPUs decided per node (39:
// plain GPU pods and a claim in one pool, a node of each publisher), pinned to the DRA driver with
// a DeviceClass serving nvidia.com/gpu (32: plain pods through extended-resource claims) and to
// the device plugin (50: the claims have no place), consumable GPU memory with that DeviceClass
// (44) and dynamic MIG with consumable memory (9).
var draSeeds = []uint64{39, 32, 50, 44, 9}

// runDRASeeds runs the DRA seeds in ModeOn: every planned pod must bind, no unplanned one on a
// bought node, and each DRA kind must have had a pod placed, so the seeds keep covering them —
// also plain GPU pods where the DRA driver serves nvidia.com/gpu (a DeviceClass's
// extendedResourceName), which the scheduler binds through the claims it makes for them.
func runDRASeeds(t *testing.T, h *Harness) {
	extended := 0 // plain GPU pods placed in scenarios whose DeviceClass serves nvidia.com/gpu
	rep := runSeedsOn(t, h, draSeeds, GenOptions{DRA: true}, func(sc *Scenario, out *Outcome) {
		if !slices.ContainsFunc(sc.Snapshot.DeviceClasses, func(dc *resourcev1.DeviceClass) bool { return dc.Spec.ExtendedResourceName != nil }) {
			return
		}
		for _, p := range out.Pods {
			if p.Planned != "" && slices.Contains(p.Kinds, KindGPU) {
				extended++
			}
		}
	})
	for _, k := range []Kind{KindDRA, KindDRAConsumable, KindDRADynamicMIG, KindGPUDriver, KindGPU} {
		if s := rep.Tally(ModeOn, k); s.Placed == 0 {
			t.Errorf("no pod of kind %s was placed in the DRA seeds %v", k, draSeeds)
		}
	}
	if extended == 0 {
		t.Errorf("no plain GPU pod was placed where a DeviceClass serves nvidia.com/gpu in the DRA seeds %v", draSeeds)
	}
	var b strings.Builder
	_ = rep.Write(&b)
	t.Logf("plain GPU pods placed through extended-resource claims: %d\n%s", extended, b.String())
}

// runSeedsOn runs the scenarios generated from seeds with opts in ModeOn and fails on any
// disagreement but a pod the scheduler moved to another node (a planned pod left unbound, an
// unplanned pod bound on a bought node); it returns their report, and passes each scenario and
// its outcome to each when not nil.
func runSeedsOn(t *testing.T, h *Harness, seeds []uint64, opts GenOptions, each func(*Scenario, *Outcome)) Report {
	t.Helper()
	var rep Report
	for _, seed := range seeds {
		sc := Generate(seed, opts)
		out, err := h.Run(context.Background(), sc, ModeOn)
		if err != nil {
			t.Fatal(err)
		}
		rep.Add(out)
		if each != nil {
			each(sc, out)
		}
		for _, p := range out.Disagreements() {
			if p.Verdict != VerdictMoved {
				t.Errorf("%s: %s %s %v: planned %s, bound %q (%s)", sc.Name, p.Verdict, p.Pod, p.Kinds, orNone(p.Planned, p.Reason), p.Bound, p.Message)
			}
		}
	}
	return rep
}

// gpuProfileSeeds run under deploy/scheduler/gpu-mostallocated.yaml: whole GPUs (44) and
// time-sliced GPUs with spread and anti-affinity (1), the resources the profile weights.
var gpuProfileSeeds = []uint64{44, 1}

// TestFidelityGPUProfile runs kube-scheduler with the recommended GPU profile
// (deploy/scheduler/gpu-mostallocated.yaml: NodeResourcesFit MostAllocated, nvidia.com/gpu
// weighted) and checks that plans still bind: no planned pod left unbound, no unplanned pod bound
// on a bought node. That the scheduler really runs the profile is read from its /configz.
func TestFidelityGPUProfile(t *testing.T) {
	cfg, err := os.ReadFile("../deploy/scheduler/gpu-mostallocated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cp := cptest.Start(t, controlplane.Options{SchedulerConfig: cfg})
	configz, err := cp.SchedulerConfigz(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"MostAllocated"`, `"name":"nvidia.com/gpu","weight":5`} {
		if !strings.Contains(string(configz), want) {
			t.Fatalf("kube-scheduler /configz lacks %s:\n%s", want, configz)
		}
	}
	rep := runSeedsOn(t, newTestHarness(t, cp), gpuProfileSeeds, GenOptions{}, nil)
	all := rep.Tally(ModeOn, KindAll)
	if all.Placed == 0 {
		t.Fatal("no pod was placed")
	}
	t.Logf("MostAllocated profile: %d placed, %d placed but not bound, %d moved, %d pessimistic",
		all.Placed, all.NotBound, all.Moved, all.Pessimistic)
	var b strings.Builder
	_ = rep.Write(&b)
	t.Logf("\n%s", b.String())
}

func runRegression(t *testing.T, h *Harness, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := DecodeScenario(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	skipped := sc.Skip != ""
	if skipped && os.Getenv("FIDELITY_RUN_SKIPPED") != "1" {
		t.Skip("known bug: " + sc.Skip)
	}
	// A skipped scenario run on request (FIDELITY_RUN_SKIPPED=1) logs what it finds and is
	// skipped again, so that one can see whether the bug still shows.
	report := t.Errorf
	if skipped {
		report = t.Logf
	}
	found := 0
	for _, mode := range sc.RunModes() {
		out, err := h.Run(context.Background(), sc, mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range out.Disagreements() {
			if !slices.Contains(sc.Accept, p.Verdict) {
				found++
				report("[mode %s] %s %s %v: planned %s, bound %q (%s)", mode, p.Verdict, p.Pod,
					p.Kinds, orNone(p.Planned, p.Reason), p.Bound, p.Message)
			}
		}
		for _, n := range out.Notes {
			found++
			report("[mode %s] %s", mode, n)
		}
	}
	if skipped {
		t.Skipf("known bug (%d disagreements seen in this run): %s", found, sc.Skip)
	}
}

// TestFidelitySeeds runs FIDELITY_SEEDS generated scenarios (from seed FIDELITY_FIRST, default 1),
// each in the modes FIDELITY_MODES lists (comma-separated; default all), and prints the agreement per constraint kind; `make fidelity
// SEEDS=N` runs it. FIDELITY_DRA=1 adds DRA claim workloads, FIDELITY_NARROW_ZONES=1 confines the
// general pool to two zones in most scenarios (GenOptions.NarrowZones), FIDELITY_SOFT=1 adds soft
// constraints (GenOptions.Soft), FIDELITY_SCHEDULER_CONFIG names a KubeSchedulerConfiguration
// kube-scheduler runs with (e.g. deploy/scheduler/gpu-mostallocated.yaml); FIDELITY_OUT names a folder that
// receives every scenario with a disagreement (as a regression file) and the report.
func TestFidelitySeeds(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FIDELITY_SEEDS"))
	if n <= 0 {
		t.Skip("set FIDELITY_SEEDS=N (make fidelity SEEDS=N) to run N generated scenarios")
	}
	if testing.Short() {
		t.Skip("skipping control-plane test in -short mode")
	}
	first, _ := strconv.ParseUint(os.Getenv("FIDELITY_FIRST"), 10, 64)
	if first == 0 {
		first = 1
	}
	c := Campaign{First: first, Seeds: n, Gen: GenOptions{DRA: os.Getenv("FIDELITY_DRA") == "1", NarrowZones: os.Getenv("FIDELITY_NARROW_ZONES") == "1",
		Soft: os.Getenv("FIDELITY_SOFT") == "1"},
		Out: os.Getenv("FIDELITY_OUT"), Dir: t.TempDir(), Progress: t.Logf}
	if f := os.Getenv("FIDELITY_SCHEDULER_CONFIG"); f != "" {
		cfg, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("FIDELITY_SCHEDULER_CONFIG: %v", err)
		}
		c.ControlPlane.SchedulerConfig = cfg
	}
	if s := os.Getenv("FIDELITY_MODES"); s != "" {
		for _, name := range strings.Split(s, ",") {
			m, err := ParseMode(strings.TrimSpace(name))
			if err != nil {
				t.Fatalf("FIDELITY_MODES: %v", err)
			}
			c.Modes = append(c.Modes, m)
		}
	}
	if os.Getenv("FIDELITY_LOG") == "1" {
		c.Log = zaptest.NewLogger(t)
	}
	rep, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("\n" + b.String())
	if err := c.WriteReport(rep); err != nil {
		t.Fatal(err)
	}
}

func newTestHarness(t *testing.T, cp *controlplane.ControlPlane) *Harness {
	var log *zap.Logger
	if os.Getenv("FIDELITY_LOG") == "1" {
		log = zaptest.NewLogger(t)
	}
	return NewHarness(kubernetes.NewForConfigOrDie(cp.RESTConfig()), dynamic.NewForConfigOrDie(cp.RESTConfig()), t.TempDir(), log, Timing{})
}
