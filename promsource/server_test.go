package promsource

import (
	"bufio"
	"context"
	"fmt"
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

// testServer is a real Prometheus started by a test on loopback, over a TSDB built from a trace.
type testServer struct {
	URL   string
	Trace forecast.Series
}

// requireBinaries fails (not skips) when Prometheus is missing: these tests are part of the suite.
func requireBinaries(t *testing.T) {
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

// startPrometheus loads the first `span` of a trace into a fresh TSDB as
// tiler_trace_value{trace="nyc_taxi"} (plus two copies as tiler_trace_copy{copy="a"|"b"} for the
// multiple-series case) and starts Prometheus over it. The server is stopped when the test ends.
func startPrometheus(t *testing.T, trace string, span time.Duration) *testServer {
	t.Helper()
	requireBinaries(t)
	s := loadTrace(t, trace)
	s.Values = s.Values[:s.Steps(span)]
	dir := t.TempDir()
	om := filepath.Join(dir, "trace.om.txt")
	if err := writeOpenMetrics(om, s); err != nil {
		t.Fatalf("writing OpenMetrics: %v", err)
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
	addr := freeAddr(t)
	cmd := exec.Command("prometheus",
		"--config.file="+cfg,
		"--storage.tsdb.path="+data,
		"--web.listen-address="+addr,
		// The blocks are from 2014; retention counts back from the newest block, and 100 years
		// keeps the retention sweep from deleting them whatever the clock says.
		"--storage.tsdb.retention.time=100y",
	)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	url := "http://" + addr
	if err := waitReady(url, 60*time.Second); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("prometheus at %s: %v\n%s", url, err, tail(string(log), 2000))
	}
	return &testServer{URL: url, Trace: s}
}

// writeOpenMetrics writes the series as a gauge with explicit timestamps (seconds).
func writeOpenMetrics(path string, s forecast.Series) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	family := func(name, labels string, scale float64) {
		fmt.Fprintf(w, "# HELP %s replayed trace\n# TYPE %s gauge\n", name, name)
		for _, l := range strings.Split(labels, ";") {
			for i, v := range s.Values {
				if v == v { // skip NaN: a gap is no sample, not a zero
					fmt.Fprintf(w, "%s{%s} %g %d\n", name, l, v*scale, s.TimeAt(i).Unix())
				}
			}
		}
	}
	family("tiler_trace_value", `trace="nyc_taxi"`, 1)
	family("tiler_trace_copy", `copy="a";copy="b"`, 2)
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls /-/ready until it answers 200 or the deadline passes.
func waitReady(url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/-/ready: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", within, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// loadTrace reads a trace of testdata/traces onto its natural grid.
func loadTrace(t *testing.T, name string) forecast.Series {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "traces", name))
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
