package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/provisioner"
)

// TestKubeClientRateLimit: the API client's rate limit comes from --kube-api-qps and
// --kube-api-burst (or their environment twins), defaults to Karpenter's, and bad values are
// errors naming the flag.
func TestKubeClientRateLimit(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		args, env []string
		qps       float32
		burst     int
	}{
		{"defaults", nil, nil, DefaultKubeQPS, DefaultKubeBurst},
		{"flags", []string{"--kube-api-qps", "50.5", "--kube-api-burst", "80"}, nil, 50.5, 80},
		{"environment", nil, []string{"TILER_KUBE_API_QPS=20", "TILER_KUBE_API_BURST=40"}, 20, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			_, rf := runConfig(t, append([]string{"--kubeconfig", kubeconfig}, tc.args...)...)
			c, err := restConfig(rf)
			if err != nil {
				t.Fatal(err)
			}
			if c.QPS != tc.qps || c.Burst != tc.burst {
				t.Errorf("QPS, burst = %v, %d; want %v, %d", c.QPS, c.Burst, tc.qps, tc.burst)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps", "0"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps", "-3"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps", "NaN"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps", "+Inf"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst", "0"}, "--kube-api-burst"},
	} {
		cmd := runCmd(func(context.Context, provisioner.Config, runFlags) error { return nil })
		cmd.SetArgs(tc.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tiler run %v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestLeaderElectionTiming: the leader election's timing comes from the
// --leader-election-{lease-duration,renew-deadline,retry-period} flags (10s, 7s, 1s by default), a standby answers ready for the lease duration after its last answered Lease call,
// and timings client-go would panic on are errors naming the flag, and --sim-step-interval must
// be positive.
func TestLeaderElectionTiming(t *testing.T) {
	_, rf := runConfig(t)
	if rf.leaderTiming != defaultLeaderTiming || defaultLeaderTiming != (leaderTiming{lease: 10 * time.Second, renew: 7 * time.Second, retry: time.Second}) {
		t.Errorf("default timing %+v, want 10s, 7s, 1s", rf.leaderTiming)
	}
	_, rf = runConfig(t, "--leader-election-lease-duration", "8s", "--leader-election-renew-deadline", "5s", "--leader-election-retry-period", "1s")
	if want := (leaderTiming{lease: 8 * time.Second, renew: 5 * time.Second, retry: time.Second}); rf.leaderTiming != want {
		t.Errorf("timing %+v, want %+v", rf.leaderTiming, want)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &readiness{lease: rf.leaderTiming.lease, now: func() time.Time { return now }}
	r.leaseSeen()
	now = now.Add(7 * time.Second)
	if !r.ready() {
		t.Error("standby not ready 7s after a Lease answer with an 8s lease")
	}
	now = now.Add(time.Second)
	if r.ready() {
		t.Error("standby ready 8s after a Lease answer with an 8s lease")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--leader-election-retry-period", "0s"}, "--leader-election-retry-period"},
		{[]string{"--leader-election-renew-deadline", "1s"}, "--leader-election-renew-deadline"},
		{[]string{"--leader-election-lease-duration", "7s"}, "--leader-election-lease-duration"},
		{[]string{"--sim-step-interval", "0s"}, "--sim-step-interval"},
	} {
		cmd := runCmd(func(context.Context, provisioner.Config, runFlags) error { return nil })
		cmd.SetArgs(tc.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tiler run %v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestLeaderIdentityUnique: replicas started at the same moment on one host get different Lease
// identities. An identity of host name plus start time repeated within a millisecond, and two
// replicas sharing one both led (each took the other's renewals for its own): CI caught it as
// "both replicas lead" in internal/chaos.
func TestLeaderIdentityUnique(t *testing.T) {
	host, _ := os.Hostname()
	seen := map[string]bool{}
	for range 1000 {
		id := leaderIdentity()
		if seen[id] {
			t.Fatalf("identity %q handed out twice", id)
		}
		seen[id] = true
		if host != "" && !strings.HasPrefix(id, host+"_") {
			t.Fatalf("identity %q does not name the host %q", id, host)
		}
	}
}
