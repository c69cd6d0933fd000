package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
