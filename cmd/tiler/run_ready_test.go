package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRunUnreachableAPIServer: against an API server that does not answer, `tiler run` logged
// "controller running", answered /readyz ok and said nothing more. It must stay not ready and log
// the connection error until its informer caches sync.
func TestRunUnreachableAPIServer(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg, rf := runConfig(t, "--kubeconfig", kubeconfig, "--cloud", "sim", "--sim-state", filepath.Join(dir, "sim.json"), "--metrics-addr", addr)
	syncWarnAfter, syncWarnEvery = 0, time.Hour
	t.Cleanup(func() { syncWarnAfter, syncWarnEvery = 5*time.Second, 30*time.Second })

	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runControllerWithLogger(ctx, cfg, rf, zap.New(core)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	var warned []observer.LoggedEntry
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for len(warned) == 0 {
		select {
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-deadline:
			t.Fatalf("no warning about the caches after 30s; logs: %v", logs.All())
		case <-tick.C:
			warned = logs.FilterMessageSnippet("informer caches have not synced").All()
		}
	}
	if err := warned[0].ContextMap()["error"]; err == nil || !strings.Contains(err.(string), "127.0.0.1:1") || !strings.Contains(err.(string), "connection refused") {
		t.Errorf("warning %v does not name the connection error", warned[0].ContextMap())
	}
	if n := logs.FilterMessageSnippet("controller running").Len(); n != 0 {
		t.Errorf("logged %q %d times while nothing synced", "controller running", n)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d, want 503 while the caches have not synced", resp.StatusCode)
	}
}

// TestReadiness: leadership is not readiness. The leader is ready once its caches have synced; a
// standby while the API server answered a Lease call within the lease duration, and not before
// its first answer nor after the API server stopped answering.
func TestReadiness(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	synced := false
	r := &readiness{synced: func() bool { return synced }, now: func() time.Time { return now }}
	lease := defaultLeaderTiming.lease // readiness's lease when none is set
	steps := []struct {
		what string
		do   func()
		want bool
	}{
		{"standby before any Lease call was answered", func() {}, false},
		{"standby right after a Lease call was answered", r.leaseSeen, true},
		{"standby a second short of the lease after the last answered Lease call", func() { now = now.Add(lease - time.Second) }, true},
		{"standby the lease after the last answered Lease call", func() { now = now.Add(time.Second) }, false},
		{"standby answered again", r.leaseSeen, true},
		{"leading, caches not synced", func() { r.set(true) }, false},
		{"leading, caches synced", func() { synced = true }, true},
		{"leading long after the last Lease answer (the leader's renewals are not its readiness)", func() { now = now.Add(time.Hour) }, true},
	}
	for _, s := range steps {
		s.do()
		if got := r.ready(); got != s.want {
			t.Errorf("%s: ready %v, want %v", s.what, got, s.want)
		}
	}
}
