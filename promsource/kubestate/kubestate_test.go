package kubestate_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/internal/promtest"
	"github.com/tiler-dev/tiler/promsource"
	"github.com/tiler-dev/tiler/promsource/kubestate"
	"github.com/tiler-dev/tiler/replay"
)

// Two days of a synthetic cluster scraped every five minutes (about 140,000 samples).
var (
	from   = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	span   = 2 * 24 * time.Hour
	scrape = 5 * time.Minute
)

func client(t *testing.T, url string) *promsource.Client {
	t.Helper()
	c, err := promsource.New(promsource.Config{Address: url, Timeout: 30 * time.Second, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReadSyntheticCluster: three days of a synthetic GPU cluster's kube-state-metrics, backfilled
// into a real Prometheus, read back: every pod the cluster ran in the window (and only those) with
// its requests, its arrival exact and its departure within a scrape; the skipped pods counted by
// reason; the nodes and DCGM utilisation reported; and a replay of the result under tiler and
// the baselines accounts for every pod.
func TestReadSyntheticCluster(t *testing.T) {
	truth := promtest.SyntheticCluster(1, from, span, scrape)
	began := time.Now()
	url := promtest.StartBackfilled(t, truth.WriteOpenMetrics)
	ctx := context.Background()
	loaded := time.Now()
	cl, err := kubestate.Read(ctx, client(t, url), kubestate.Options{From: from, Until: from.Add(span)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backfill and start %s, read %s", loaded.Sub(began).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	t.Run("short chunks read the same", func(t *testing.T) {
		// Chunks shorter than most lifetimes, not aligned on anything: the same pods and times
		// as day-long ones, in more queries.
		o := kubestate.Options{From: from, Until: from.Add(12 * time.Hour)}
		day, err := kubestate.Read(ctx, client(t, url), o)
		if err != nil {
			t.Fatal(err)
		}
		o.Chunk = 47 * time.Minute
		short, err := kubestate.Read(ctx, client(t, url), o)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := day.Recorded()
		b, _ := short.Recorded()
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%d pods in day-long chunks, %d in 47-minute ones", len(a), len(b))
		}
		for i := range a {
			if a[i].Name != b[i].Name || !a[i].Created.Equal(b[i].Created) || !a[i].Deleted.Equal(b[i].Deleted) ||
				a[i].CPUMilli != b[i].CPUMilli || a[i].NumGPUs != b[i].NumGPUs || a[i].GPUMilli != b[i].GPUMilli {
				t.Errorf("pod %d: %+v vs %+v", i, a[i], b[i])
			}
		}
		if short.Queries <= day.Queries {
			t.Errorf("%d queries in short chunks, %d in one: want more", short.Queries, day.Queries)
		}
	})
	recs, skipped := cl.Recorded()

	// What the reader should find, from the generator's ground truth.
	want := map[string]promtest.KSMPod{}
	wantSkipped := map[string]int{}
	seen := map[string]int{}
	for _, p := range truth.Pods {
		dep := p.Departure()
		switch {
		case p.OwnerKind == "DaemonSet":
			wantSkipped[kubestate.SkipDaemonSet]++
		case p.OwnerKind == "Node":
			wantSkipped[kubestate.SkipMirror]++
		case !dep.IsZero() && !dep.After(from):
			wantSkipped[kubestate.SkipFinished]++ // the Job completed and the pod evicted before the window
		case p.Requests()["nvidia_com_mig_1g_5gb"] > 0:
			wantSkipped[kubestate.SkipUnsupported+" (nvidia_com_mig_1g_5gb)"]++
		default:
			name := p.Namespace + "." + p.Name
			if seen[name]++; seen[name] > 1 {
				name += "-2"
			}
			want[name] = p
		}
	}
	if len(recs) != len(want) {
		t.Errorf("%d pods reconstructed, want %d", len(recs), len(want))
	}
	for r, n := range wantSkipped {
		if skipped[r] != n {
			t.Errorf("skipped %q: %d, want %d (all: %v)", r, skipped[r], n, skipped)
		}
	}
	var running, carried, gpus int
	for _, r := range recs {
		p, ok := want[r.Name]
		if !ok {
			t.Errorf("pod %s reconstructed but not in the window's truth", r.Name)
			continue
		}
		if !r.Created.Equal(p.Created) {
			t.Errorf("%s: created %s, want %s", r.Name, r.Created, p.Created)
		}
		dep := p.Departure()
		switch {
		case dep.IsZero():
			running++
			if !r.Deleted.IsZero() {
				t.Errorf("%s: departs %s, want still running at the end", r.Name, r.Deleted)
			}
		case p.NoCompletionTime && dep.Equal(p.Completed):
			// Known from the phase only: the first scrape after, to a subquery step.
			if r.Deleted.Before(dep) || r.Deleted.Sub(dep) > scrape+time.Minute {
				t.Errorf("%s: departs %s, want within a scrape and a step (%s) after its completion %s", r.Name, r.Deleted, scrape+time.Minute, dep)
			}
		case r.Deleted.IsZero() || r.Deleted.After(dep) || dep.Sub(r.Deleted) > scrape:
			t.Errorf("%s: departs %s, want within a scrape (%s) before %s", r.Name, r.Deleted, scrape, dep)
		}
		if r.Created.Before(from) {
			carried++
		}
		req := p.Requests()
		wantGPUs, wantMilli := int(req["nvidia_com_gpu"]), int64(1000)
		if s := req["nvidia_com_gpu_shared"]; s > 0 {
			wantGPUs, wantMilli = 1, int64(s)*100
		}
		if wantGPUs == 0 {
			wantMilli = 0
		}
		if r.CPUMilli != int64(math.Round(req["cpu"]*1000)) || r.MemoryMiB != int64(math.Ceil(req["memory"]/(1<<20))) ||
			r.NumGPUs != wantGPUs || r.NumGPUs > 0 && r.GPUMilli != wantMilli {
			t.Errorf("%s: requests cpu %dm, %d MiB, %d×%d GPU; want %v", r.Name, r.CPUMilli, r.MemoryMiB, r.NumGPUs, r.GPUMilli, req)
		}
		gpus += r.NumGPUs
	}
	t.Logf("%d pods reconstructed of %d generated (%d carried in, %d running at the end, %d GPUs asked); skipped %v; %d queries",
		len(recs), len(truth.Pods), carried, running, gpus, skipped, cl.Queries)
	if carried == 0 || running == 0 {
		t.Errorf("the synthetic cluster should have pods carried in (%d) and running at the end (%d)", carried, running)
	}

	// Nodes by instance type, and DCGM's mean utilisation.
	wantNodes := map[string]int{}
	var sum float64
	var n int
	for _, nd := range truth.Nodes {
		wantNodes[nd.InstanceType]++
		for _, u := range nd.GPUUtil {
			sum += u
			n++
		}
	}
	for it, k := range wantNodes {
		if cl.Nodes[it] != k {
			t.Errorf("nodes %v, want %v", cl.Nodes, wantNodes)
		}
	}
	if cl.GPU == nil || cl.GPU.GPUs != n || math.Abs(cl.GPU.MeanPercent-sum/float64(n)) > 0.01 || cl.GPU.Models["NVIDIA A10G"] != n {
		t.Errorf("GPU %+v, want %d A10G GPUs at %.2f%%", cl.GPU, n, sum/float64(n))
	}

	// The replay runs over it and accounts for every pod under each policy: the whole window
	// (Workload) is checked to build, and its first day is replayed (two days take minutes).
	whole, _, err := cl.Workload()
	if err != nil {
		t.Fatal(err)
	}
	if whole.Length != span || len(whole.Pods) != len(recs) {
		t.Errorf("workload of %d pods over %s, want %d over %s", len(whole.Pods), whole.Length, len(recs), span)
	}
	wl, err := replay.FromRecorded(whole.Name, recs, from, 24*time.Hour, from)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	all, err := replay.Policies(nil)
	if err != nil {
		t.Fatal(err)
	}
	// tiler and one baseline: the replay's own tests cover the others.
	var pols []replay.Policy
	for _, p := range all {
		if p.Name == replay.PolicyTiler || p.Name == replay.PolicyWholeGPU {
			pols = append(pols, p)
		}
	}
	began = time.Now()
	rep, err := replay.Compare(wl, pols, replay.DefaultConfig(cat))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replay of %d pods over %s under %d policies: %s", len(wl.Pods), wl.Length, len(pols), time.Since(began).Round(time.Millisecond))
	if rep.Bound != nil {
		t.Logf("clairvoyant bound: $%.2f", rep.Bound.Cost)
	}
	var tilerCost float64
	for _, r := range rep.Results {
		t.Logf("%s: $%.2f, %d pods, %d launched, %d evictions", r.Policy, r.Cost, r.Pods, r.NodesLaunched, r.Evictions)
		if r.Pods != len(wl.Pods) || r.Cost <= 0 {
			t.Errorf("%s: %d of %d pods, $%.2f", r.Policy, r.Pods, len(wl.Pods), r.Cost)
		}
		if rep.Bound != nil && r.Cost < rep.Bound.Cost {
			t.Errorf("%s: $%.2f below the clairvoyant bound $%.2f", r.Policy, r.Cost, rep.Bound.Cost)
		}
		if r.Policy == replay.PolicyTiler {
			tilerCost = r.Cost
		}
	}
	if tilerCost == 0 {
		t.Errorf("no tiler result in %+v", rep.Results)
	}
}

// TestReadErrors: a server without kube-state-metrics, one that cannot be reached, and bad options
// are errors that say what is wrong and where.
func TestReadErrors(t *testing.T) {
	ctx := context.Background()
	window := kubestate.Options{From: from, Until: from.Add(time.Hour)}

	t.Run("unreachable", func(t *testing.T) {
		addr := "http://" + promtest.FreeAddr(t)
		c, err := promsource.New(promsource.Config{Address: addr, Timeout: time.Second, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = kubestate.Read(ctx, c, window)
		if !promsource.IsUnavailable(err) || !strings.Contains(err.Error(), addr) {
			t.Errorf("error = %v; want unavailable, naming %s", err, addr)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		c := client(t, "http://prometheus.invalid")
		for _, o := range []kubestate.Options{
			{From: from, Until: from},
			{From: from, Until: from.Add(time.Hour), Resolution: time.Millisecond},
			{From: from, Until: from.Add(time.Hour), Chunk: 20000 * time.Minute},
		} {
			if _, err := kubestate.Read(ctx, c, o); err == nil {
				t.Errorf("options %+v: no error", o)
			}
		}
	})
	if testing.Short() {
		return
	}
	// A server with only the pods' creation (no requests), and one with nothing of the kind.
	noRequests := promtest.StartBackfilled(t, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "# TYPE kube_pod_created gauge\nkube_pod_created{namespace=\"a\",pod=\"p\",uid=\"u1\"} %d %d\n# EOF\n", from.Unix(), from.Add(10*time.Minute).Unix())
		return err
	})
	empty := promtest.StartBackfilled(t, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "# TYPE up gauge\nup{job=\"x\"} 1 %d\n# EOF\n", from.Add(10*time.Minute).Unix())
		return err
	})
	for _, tt := range []struct{ url, metric string }{{noRequests, kubestate.MetricRequests}, {empty, kubestate.MetricCreated}} {
		_, err := kubestate.Read(ctx, client(t, tt.url), window)
		if err == nil || !strings.Contains(err.Error(), tt.metric) || !strings.Contains(err.Error(), tt.url) {
			t.Errorf("error = %v; want one naming %s and %s", err, tt.metric, tt.url)
		}
	}
}
