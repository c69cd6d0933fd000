// Package promtest starts a real Prometheus server on loopback for tests, over a TSDB built
// from a trace (promtool tsdb create-blocks-from openmetrics), as the Prometheus-facing tests of
// promsource and the pre-scaler need, and reads the series of a client-side registry
// (Value, SeriesCount). The Debian package `prometheus` provides both binaries
// (`make prometheus`).
package promtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Server is a running Prometheus and the trace it serves.
type Server struct {
	URL   string
	Trace forecast.Series
}

// Family is one gauge written from the trace: one series per label set (e.g. `trace="nyc_taxi"`),
// each value multiplied by Scale (0 means 1).
type Family struct {
	Name      string
	LabelSets []string
	Scale     float64
}

// Options adds to the defaults of Start.
type Options struct {
	// Families are the gauges written; default tiler_trace_value{trace="<file name>"}.
	Families []Family
	// LookbackOneStep sets --query.lookback-delta to the trace's step plus a minute, so that an
	// instant query between two samples sees the last one.
	LookbackOneStep bool
}

// LoadTrace reads a trace CSV (path relative to the test's package) onto its natural grid.
func LoadTrace(t *testing.T, path string) forecast.Series {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	samples, err := forecast.ReadCSV(f, forecast.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := forecast.NewSeries(samples, forecast.InferStep(samples))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RequireBinaries skips under -short and fails (not skips) when prometheus or promtool is
// missing: these tests are part of the suite.
func RequireBinaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Prometheus server; skipped with -short")
	}
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found in PATH: run `make prometheus` (hack/install-prometheus.sh) first", bin)
		}
	}
}

// Start loads the first span of the trace at path into a fresh TSDB and starts Prometheus over
// it; the server is stopped when the test ends.
func Start(t *testing.T, path string, span time.Duration, opts Options) *Server {
	t.Helper()
	RequireBinaries(t)
	s := LoadTrace(t, path)
	s.Values = s.Values[:s.Steps(span)]
	families := opts.Families
	if len(families) == 0 {
		name := strings.TrimSuffix(filepath.Base(path), ".csv")
		families = []Family{{Name: "tiler_trace_value", LabelSets: []string{fmt.Sprintf("trace=%q", name)}}}
	}
	var args []string
	if opts.LookbackOneStep {
		args = append(args, fmt.Sprintf("--query.lookback-delta=%s", s.Step+time.Minute))
	}
	url := StartBackfilled(t, func(w io.Writer) error { return writeOpenMetrics(w, s, families) }, args...)
	return &Server{URL: url, Trace: s}
}

// StartBackfilled writes an OpenMetrics exposition with explicit timestamps through write (ending
// in "# EOF"), loads it into a fresh TSDB (promtool tsdb create-blocks-from openmetrics), starts
// Prometheus over it with the extra args, and returns its URL; the server is stopped when the
// test ends.
func StartBackfilled(t *testing.T, write func(io.Writer) error, args ...string) string {
	t.Helper()
	RequireBinaries(t)
	dir := t.TempDir()
	om := filepath.Join(dir, "backfill.om.txt")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		t.Fatalf("writing OpenMetrics: %v", err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", om, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	// No scrape jobs: the server only serves the imported blocks.
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The blocks may be years old; retention counts back from the newest block, and 100 years
	// keeps the retention sweep from deleting them whatever the clock says.
	args = append([]string{"--storage.tsdb.retention.time=100y"}, args...)
	return launch(t, dir, cfg, data, args)
}

// StartScraping starts Prometheus over an empty TSDB, scraping /metrics of each target
// (host:port) every interval as job job; the server is stopped when the test ends.
func StartScraping(t *testing.T, job string, targets []string, interval time.Duration) *Server {
	t.Helper()
	RequireBinaries(t)
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n- job_name: %q\n  static_configs:\n  - targets: [%s]\n",
		interval, interval, job, strings.Join(quoted, ", "))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Server{URL: launch(t, dir, cfg, filepath.Join(dir, "data"), nil)}
}

// launch starts prometheus with the config file and TSDB directory (and more args), stops it
// when the test ends, and returns its URL once /-/ready answers. The address is picked free
// (FreeAddr) but only taken when prometheus binds it, so another listener started meanwhile — the
// controller of the same test on an address picked a moment before, another package's test —
// may take it first: prometheus then exits at once ("address already in use") and is started
// again on another address, up to launchAttempts times.
func launch(t *testing.T, dir, cfg, data string, more []string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		url, log, err := launchOnce(t, dir, cfg, data, more)
		if err == nil {
			return url
		}
		if attempt < launchAttempts && strings.Contains(log, "address already in use") {
			t.Logf("prometheus at %s: %v; starting it again on another address", url, err)
			continue
		}
		if len(log) > 2000 {
			log = log[len(log)-2000:]
		}
		t.Fatalf("prometheus at %s: %v\n%s", url, err, log)
	}
}

// launchAttempts is how many times launch starts prometheus before it gives up.
const launchAttempts = 5

// pickAddr picks the address launchOnce starts prometheus on: FreeAddr; a test of launch itself
// replaces it to hand out a taken address first.
var pickAddr = FreeAddr

// launchOnce starts prometheus on a free address and waits until its /-/ready answers or it
// exits; it returns the URL, and the log with the error when it is not ready.
func launchOnce(t *testing.T, dir, cfg, data string, more []string) (string, string, error) {
	t.Helper()
	addr := pickAddr(t)
	url := "http://" + addr
	args := append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + data, "--web.listen-address=" + addr}, more...)
	cmd := exec.Command("prometheus", args...)
	logFile, err := os.CreateTemp(dir, "prometheus-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
	})
	err = waitReady(url, data, 60*time.Second, exited)
	if err == nil {
		return url, "", nil
	}
	log, _ := os.ReadFile(logFile.Name())
	return url, string(log), err
}

// writeOpenMetrics writes the families as gauges with explicit timestamps (seconds); a gap is
// no sample, not a zero.
func writeOpenMetrics(w io.Writer, s forecast.Series, families []Family) error {
	for _, fam := range families {
		scale := fam.Scale
		if scale == 0 {
			scale = 1
		}
		fmt.Fprintf(w, "# HELP %s replayed trace\n# TYPE %s gauge\n", fam.Name, fam.Name)
		for _, l := range fam.LabelSets {
			for i, v := range s.Values {
				if !math.IsNaN(v) {
					fmt.Fprintf(w, "%s{%s} %g %d\n", fam.Name, l, v*scale, s.TimeAt(i).Unix())
				}
			}
		}
	}
	_, err := fmt.Fprintln(w, "# EOF")
	return err
}

// FreeAddr returns a loopback address nothing listens on (at the time of the call).
func FreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls /-/ready until it answers 200 from the prometheus serving the TSDB at data, the
// deadline passes or exited is closed (the server is gone: whatever answers on its address now is
// not it). A 200 from another server on the address — another test's prometheus that took it
// first — is not taken for ours: its storage.tsdb.path (/api/v1/status/flags) is not data.
func waitReady(url, data string, within time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for {
		last = readyAt(ctx, url, data)
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready (last: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", within, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readyAt is one poll of waitReady: nil when /-/ready answers 200 and the server's TSDB is data.
func readyAt(ctx context.Context, url, data string) error {
	if err := get(ctx, url+"/-/ready", nil); err != nil {
		return err
	}
	var flags struct {
		Data map[string]string `json:"data"`
	}
	if err := get(ctx, url+"/api/v1/status/flags", &flags); err != nil {
		return err
	}
	if got := flags.Data["storage.tsdb.path"]; got != data {
		return fmt.Errorf("another server answers at %s (its storage.tsdb.path is %q, ours %q)", url, got, data)
	}
	return nil
}

// get fetches url and, when into is not nil, decodes its JSON body into it; a status other than
// 200 is an error.
func get(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if into == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}
