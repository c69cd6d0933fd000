package replaycheck_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/fidelity/replaycheck"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/replay"
)

// crossCheckWindow is the shortened workload of the test: the first half hour of workload 1's day
// (62 pods, 18 of them arriving in the window).
const crossCheckWindow = 30 * time.Minute

// crossCheckFactor compresses the test's live run: the half hour in 30 s of wall time.
const crossCheckFactor = 60

func options(t *testing.T, policyName string, length time.Duration) replaycheck.Options {
	t.Helper()
	f, err := os.Open("../../testdata/alibaba-gpu-v2023/openb_pod_list_default.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wl, err := replay.ReadAlibaba("openb_pod_list_default", f, replay.DefaultAlibabaFrom, length)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pols, err := replay.Policies(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pols {
		if p.Name == policyName {
			return replaycheck.Options{Workload: wl, Policy: p, Replay: replay.DefaultConfig(cat), Factor: crossCheckFactor,
				Dir: t.TempDir(), Progress: t.Logf}
		}
	}
	t.Fatalf("no policy %s", policyName)
	return replaycheck.Options{}
}

// TestCrossCheck runs the cross-check on half an hour of workload 1 under the tiler policy: the
// fast replay, then the real controller, control plane and simulated cloud at 60×, and requires
// the live run to agree with the fast one within DefaultTolerance (cost within 15 %, launches
// within 35 %, pending p50 within two simulated minutes, p95 within six).
func TestCrossCheck(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{SchedulerConfig: replaycheck.SchedulerConfig})
	o := options(t, replay.PolicyTiler, crossCheckWindow)
	rep, err := replaycheck.Run(context.Background(), cp.RESTConfig(), o)
	if rep != nil {
		var buf bytes.Buffer
		if werr := rep.Write(&buf); werr != nil {
			t.Error(werr)
		}
		t.Logf("\n%s", buf.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Live
	if l.Pods != rep.Pods || l.Bound == 0 || l.NodesLaunched == 0 {
		t.Fatalf("live run: %d of %d pods arrived, %d bound, %d nodes launched: it did not run the workload", l.Pods, rep.Pods, l.Bound, l.NodesLaunched)
	}
	if err := rep.Check(replaycheck.DefaultTolerance); err != nil {
		t.Errorf("the live run is outside the cross-check's tolerance:\n%v", err)
	}
}

// TestOptionsRefused checks that bad options are refused, naming the field, before anything runs.
func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		edit   func(*replaycheck.Options)
		want   string
	}{
		{"factor", replay.PolicyTiler, func(o *replaycheck.Options) { o.Factor = 0.5 }, "factor 0.5 must be at least 1"},
		{"dir", replay.PolicyTiler, func(o *replaycheck.Options) { o.Dir = "" }, "dir is required"},
		{"workload", replay.PolicyTiler, func(o *replaycheck.Options) { o.Workload = nil }, "workload is required"},
		{"ca-rule", replay.PolicyWholeGPU, func(*replaycheck.Options) {}, "Cluster Autoscaler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, tc.policy, time.Hour)
			tc.edit(&o)
			_, err := replaycheck.Run(context.Background(), nil, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestLiveConfigCompressed checks that the live controller's durations are the replay's divided by
// the factor, with reservations on and consolidation at the replay's interval.
func TestLiveConfigCompressed(t *testing.T) {
	o := options(t, replay.PolicyTiler, time.Hour)
	o.Factor = 100
	c := replaycheck.LiveConfig(o)
	r := o.Replay.Controller
	for _, d := range []struct {
		name      string
		live, sim time.Duration
	}{
		{"batchIdle", c.BatchIdle, r.BatchIdle}, {"batchMax", c.BatchMax, r.BatchMax}, {"resync", c.ResyncPeriod, r.ResyncPeriod},
		{"emptyNodeTTL", c.EmptyNodeTTL, r.EmptyNodeTTL}, {"disruptionInterval", c.DisruptionInterval, o.Replay.ConsolidationInterval},
		{"planUnjudgedWithin", c.PlanUnjudgedWithin, r.PlanUnjudgedWithin},
	} {
		if d.live*100 != d.sim {
			t.Errorf("%s: live %s, want %s / 100", d.name, d.live, d.sim)
		}
	}
	if !c.Reserve || c.Nominate {
		t.Errorf("reserve %v, nominate %v: want the controller's defaults (reservations on, nominations off)", c.Reserve, c.Nominate)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o = options(t, replay.PolicyTilerNoConsolidation, time.Hour)
	if c := replaycheck.LiveConfig(o); c.DisruptionInterval != 0 {
		t.Errorf("tiler-no-consolidation: disruption interval %s, want 0 (off)", c.DisruptionInterval)
	}
}
