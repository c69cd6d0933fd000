package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/internal/promtest"
	"github.com/tiler-dev/tiler/promsource/kubestate"
	"github.com/tiler-dev/tiler/replay"
)

// TestReplayPrometheusFlags: flags that need --prometheus-url, flags it excludes, and bad values
// are refused naming the flag; an unreachable server is an error naming its URL. None reaches a
// server that answers, so these run under -short.
func TestReplayPrometheusFlags(t *testing.T) {
	down := "http://" + promtest.FreeAddr(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--since=1d"}, "--since: only with --prometheus-url"},
		{[]string{"--until=2026-06-01T00:00:00Z"}, "--until: only with --prometheus-url"},
		{[]string{"--prometheus-url=" + down, "--hours=2"}, "--hours: not with --prometheus-url"},
		{[]string{"--prometheus-url=" + down, "--workload=diurnal"}, "--workload: not with --prometheus-url"},
		{[]string{"--prometheus-url=" + down, "--since=0s"}, "--since must be positive"},
		{[]string{"--prometheus-url=" + down, "--since=7x"}, `invalid argument "7x" for "--since"`},
		{[]string{"--prometheus-url=" + down, "--until=yesterday"}, "--until"},
		{[]string{"--prometheus-url=" + down, "--prometheus-step=10ms"}, "--prometheus-step must be at least 1s"},
		{[]string{"--prometheus-url=prometheus:9090"}, `--prometheus-url "prometheus:9090": want an http(s) base URL`},
		{[]string{"--prometheus-url=" + down, "--prometheus-timeout=2s", "--policies=tiler"}, down},
	}
	for _, tt := range tests {
		_, err := execute(t, newFleetReplayCmd(), tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("replay %v: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

// TestReplayPrometheus: `tiler replay --prometheus-url` over twelve hours of a synthetic cluster's
// kube-state-metrics in a real Prometheus says what it read and left out, and replays it under
// the policies asked for.
func TestReplayPrometheus(t *testing.T) {
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	span := 12 * time.Hour
	truth := promtest.SyntheticCluster(3, from, span, 5*time.Minute)
	url := promtest.StartBackfilled(t, truth.WriteOpenMetrics)
	out, err := execute(t, newFleetReplayCmd(), "--prometheus-url="+url, "--since=12h", "--until="+from.Add(span).Format(time.RFC3339),
		"--policies=tiler,whole-gpu")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("\n%s", out)
	// With --json, stdout is the report alone and the summary goes to stderr.
	cmd := newFleetReplayCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--prometheus-url=" + url, "--since=2h", "--until=" + from.Add(2*time.Hour).Format(time.RFC3339), "--policies=tiler", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 1 || rep.Results[0].Pods != rep.Pods || rep.Pods == 0 {
		t.Errorf("--json: %v, report %+v", err, rep)
	}
	if !strings.Contains(stderr.String(), "pods replayed") {
		t.Errorf("--json: no summary on stderr: %q", stderr.String())
	}
	for _, want := range []string{url + ", 2026-06-01T00:00:00Z – 2026-06-01T12:00:00Z: ", "left out: " + kubestate.SkipDaemonSet + ": 4",
		"left out: " + kubestate.SkipMirror + ": 4", "left out: " + kubestate.SkipFinished + ": 2", "the cluster ran 4 nodes (3 g5.12xlarge, 1 m6i.4xlarge)", "DCGM: 12 GPUs (12 NVIDIA A10G)",
		"workload prometheus " + url, "tiler", "whole-gpu", "clairvoyant-bound"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
