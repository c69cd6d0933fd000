package replaycheck

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tiler-dev/tiler/replay"
)

// Report is both modes' figures on the same workload, policy and (compressed) timings.
type Report struct {
	Workload string        `json:"workload"`
	Length   time.Duration `json:"length"`
	Policy   string        `json:"policy"`
	Factor   float64       `json:"factor"`
	// Pods are the workload's pods; Arrivals those that arrived in the window (not carried in).
	Pods     int            `json:"pods"`
	Arrivals int            `json:"arrivals"`
	Fast     *replay.Result `json:"fast"`
	Live     *LiveResult    `json:"live,omitempty"`
	// FastWall and LiveWall are the wall time each mode took (the live run's includes its setup).
	FastWall time.Duration `json:"fastWall"`
	LiveWall time.Duration `json:"liveWall"`
}

// Agreement is how far the live run is from the fast replay.
type Agreement struct {
	// CostRatio is live $ / fast $; LaunchRatio live launches / fast launches.
	CostRatio   float64 `json:"costRatio"`
	LaunchRatio float64 `json:"launchRatio"`
	// PendingP50Diff and PendingP95Diff are live − fast, in simulated time.
	PendingP50Diff time.Duration `json:"pendingP50Diff"`
	PendingP95Diff time.Duration `json:"pendingP95Diff"`
}

// Agreement returns the live run's distance from the fast replay (zero without a live run).
func (r *Report) Agreement() Agreement {
	if r.Live == nil || r.Fast == nil {
		return Agreement{}
	}
	return Agreement{CostRatio: ratio(r.Live.Cost, r.Fast.Cost), LaunchRatio: ratio(float64(r.Live.NodesLaunched), float64(r.Fast.NodesLaunched)),
		PendingP50Diff: r.Live.PendingP50 - r.Fast.PendingP50, PendingP95Diff: r.Live.PendingP95 - r.Fast.PendingP95}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// Tolerance is the agreement Check asks for.
type Tolerance struct {
	// Cost bounds |CostRatio − 1|; Launches |LaunchRatio − 1|.
	Cost, Launches float64
	// PendingP50 bounds |PendingP50Diff|, PendingP95 |PendingP95Diff|.
	PendingP50, PendingP95 time.Duration
}

// DefaultTolerance is the agreement the cross-check asserts: cost within 15 %, launches within
// 35 %, pending p50 within two minutes and p95 within six minutes of simulated time. Cost and
// launches are fleet-level: over the runs measured at 60× on a loaded 2-core machine (load average
// 15–29) they held within 0.93–1.08× and 0.89–1.11×. The pending times carry the API latency that
// compression magnifies, most in the tail: over those runs p50 moved by −14 s to +2 min and p95 by
// +4 s to +5m52s (README, "Cross-check against the real control plane").
var DefaultTolerance = Tolerance{Cost: 0.15, Launches: 0.35, PendingP50: 2 * time.Minute, PendingP95: 6 * time.Minute}

// Check returns an error naming every figure outside the tolerance.
func (r *Report) Check(t Tolerance) error {
	if r.Live == nil {
		return errors.New("no live run to check")
	}
	a := r.Agreement()
	var errs []error
	if math.Abs(a.CostRatio-1) > t.Cost {
		errs = append(errs, fmt.Errorf("cost: live $%.2f is %.2f× the fast replay's $%.2f (tolerance ±%.0f%%)", r.Live.Cost, a.CostRatio, r.Fast.Cost, t.Cost*100))
	}
	if math.Abs(a.LaunchRatio-1) > t.Launches {
		errs = append(errs, fmt.Errorf("launches: live %d is %.2f× the fast replay's %d (tolerance ±%.0f%%)", r.Live.NodesLaunched, a.LaunchRatio, r.Fast.NodesLaunched, t.Launches*100))
	}
	for _, q := range []struct {
		name       string
		live, fast time.Duration
		tol        time.Duration
	}{{"pending p50", r.Live.PendingP50, r.Fast.PendingP50, t.PendingP50}, {"pending p95", r.Live.PendingP95, r.Fast.PendingP95, t.PendingP95}} {
		if d := q.live - q.fast; d > q.tol || d < -q.tol {
			errs = append(errs, fmt.Errorf("%s: live %s, fast %s (tolerance ±%s)", q.name, q.live.Round(time.Second), q.fast.Round(time.Second), q.tol))
		}
	}
	return errors.Join(errs...)
}

// Write prints the report: both modes side by side and the agreement.
func (r *Report) Write(w io.Writer) error {
	fmt.Fprintf(w, "cross-check: workload %s (%d pods, %d arriving) over %s, policy %s, time compressed %g× (%s of wall time)\n\n",
		r.Workload, r.Pods, r.Arrivals, r.Length, r.Policy, r.Factor, scale(r.Length, r.Factor).Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	f, l := r.Fast, r.Live
	if l == nil {
		l = &LiveResult{}
	}
	a := r.Agreement()
	d := func(x time.Duration) string { return x.Round(time.Second).String() }
	fmt.Fprintln(tw, "\tfast replay\tlive\tlive vs fast\t")
	fmt.Fprintf(tw, "cost $\t%.2f\t%.2f\t%.2f×\t\n", f.Cost, l.Cost, a.CostRatio)
	fmt.Fprintf(tw, "GPU-h bought\t%.1f\t%.1f\t%.2f×\t\n", f.GPUHoursBought, l.GPUHoursBought, ratio(l.GPUHoursBought, f.GPUHoursBought))
	fmt.Fprintf(tw, "pending p50\t%s\t%s\t%+.0fs\t\n", d(f.PendingP50), d(l.PendingP50), a.PendingP50Diff.Seconds())
	fmt.Fprintf(tw, "pending p95\t%s\t%s\t%+.0fs\t\n", d(f.PendingP95), d(l.PendingP95), a.PendingP95Diff.Seconds())
	fmt.Fprintf(tw, "pending max\t%s\t%s\t\t\n", d(f.PendingMax), d(l.PendingMax))
	fmt.Fprintf(tw, "never bound\t%d\t%d\t\t\n", f.NeverBound, l.NeverBound)
	fmt.Fprintf(tw, "nodes launched\t%d\t%d\t%.2f×\t\n", f.NodesLaunched, l.NodesLaunched, a.LaunchRatio)
	fmt.Fprintf(tw, "nodes removed\t%d\t%d\t\t\n", f.NodesRemoved, l.NodesRemoved)
	fmt.Fprintf(tw, "evictions\t%d\t%d\t\t\n", f.Evictions, l.Evictions)
	fmt.Fprintf(tw, "batches\t%d\t%d\t\t\n", f.Batches, l.Batches)
	fmt.Fprintf(tw, "wall time\t%s\t%s\t\t\n", r.FastWall.Round(time.Millisecond), r.LiveWall.Round(time.Millisecond))
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Live != nil {
		fmt.Fprintf(w, "\nlive run's own latency, in simulated time: pod creation p50 %s, driver late by %s at worst\n",
			r.Live.CreateLatencyP50.Round(100*time.Millisecond), r.Live.MaxLag.Round(100*time.Millisecond))
		var longest []string
		for _, pw := range r.Live.Waits[:min(3, len(r.Live.Waits))] {
			state := "bound"
			if !pw.Bound {
				state = "never bound"
			}
			longest = append(longest, fmt.Sprintf("%s (arrived %s, %.2f GPU) %s, %s", pw.Pod, pw.Arrive, pw.GPUs, pw.Wait.Round(time.Second), state))
		}
		fmt.Fprintf(w, "longest live waits: %s\n", strings.Join(longest, "; "))
		var apart []string
		for _, d := range r.PodDifferences()[:min(3, len(r.PodDifferences()))] {
			apart = append(apart, fmt.Sprintf("%s fast %s, live %s", d.Pod, d.Fast.Round(time.Second), d.Live.Round(time.Second)))
		}
		_, err := fmt.Fprintf(w, "pods furthest apart: %s\n", strings.Join(apart, "; "))
		return err
	}
	return nil
}

// PodDifference is one arriving pod's pending time in both modes.
type PodDifference struct {
	Pod        string        `json:"pod"`
	Fast, Live time.Duration `json:"-"`
}

// PodDifferences pairs the arriving pods' pending times of both modes, furthest apart first.
func (r *Report) PodDifferences() []PodDifference {
	if r.Live == nil || r.Fast == nil {
		return nil
	}
	var out []PodDifference
	for _, pw := range r.Live.Waits {
		if f, ok := r.Fast.Waits[pw.Pod]; ok {
			out = append(out, PodDifference{Pod: pw.Pod, Fast: f, Live: pw.Wait})
		}
	}
	abs := func(d time.Duration) time.Duration { return max(d, -d) }
	sort.SliceStable(out, func(i, j int) bool { return abs(out[i].Live-out[i].Fast) > abs(out[j].Live-out[j].Fast) })
	return out
}
