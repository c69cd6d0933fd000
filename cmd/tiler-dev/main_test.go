package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSubcommands pins what the developer binary offers: the harnesses that left cmd/tiler.
func TestSubcommands(t *testing.T) {
	got := map[string]bool{}
	for _, c := range newRoot().Commands() {
		got[c.Name()] = true
	}
	for _, want := range []string{"demo", "fidelity", "replay-crosscheck"} {
		if !got[want] {
			t.Errorf("tiler-dev has no %s subcommand (has %v)", want, got)
		}
	}
}

// TestFidelityFlags checks that bad flags are refused before a control plane is started.
func TestFidelityFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fidelity", "--seeds", "0"}, "--seeds must be positive"},
		{[]string{"fidelity", "--modes", "on,sometimes"}, "--modes"},
		{[]string{"replay-crosscheck", "--factor", "0.5"}, "--factor must be at least 1"},
		{[]string{"replay-crosscheck", "--hours", "0"}, "--hours must be positive"},
		{[]string{"replay-crosscheck", "--workload", "weekly"}, "--workload"},
		{[]string{"replay-crosscheck", "--pods", "../../testdata/alibaba-gpu-v2023/openb_pod_list_default.csv", "--policy", "whole-gpu"}, "--policy"},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tiler-dev %s: error %v, want one mentioning %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestApplyExamples applies the sample manifests of deploy/examples, as `tiler-dev demo` does, to
// a fake clientset: every kind they use must be one the demo can create, and comment-only
// documents are skipped.
func TestApplyExamples(t *testing.T) {
	kube := fake.NewClientset()
	var out bytes.Buffer
	if err := applyExamples(context.Background(), kube, "../../deploy/examples", &out); err != nil {
		t.Fatalf("applyExamples: %v", err)
	}
	ctx := context.Background()
	deps, err := kube.AppsV1().Deployments("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := kube.BatchV1().Jobs("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	classes, err := kube.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) == 0 || len(jobs.Items) == 0 || len(classes.Items) == 0 {
		t.Errorf("applied %d Deployments, %d Jobs, %d DeviceClasses in namespace demo; want some of each\n%s",
			len(deps.Items), len(jobs.Items), len(classes.Items), out.String())
	}
	if !strings.Contains(out.String(), "applied 00-policy.yaml") {
		t.Errorf("progress does not name the policy file:\n%s", out.String())
	}
}

// TestApplyExamplesEmptyFolder checks that a folder without manifests is an error, not a demo
// that waits for pods that never come.
func TestApplyExamplesEmptyFolder(t *testing.T) {
	err := applyExamples(context.Background(), fake.NewClientset(), t.TempDir(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no sample manifests") {
		t.Errorf("error %v, want one saying there are no sample manifests", err)
	}
}

func TestStripYAMLComments(t *testing.T) {
	if got := strings.TrimSpace(stripYAMLComments("# header\n\n  # indented\n")); got != "" {
		t.Errorf("comment-only document kept %q", got)
	}
	if got := stripYAMLComments("# c\nkind: Job\n"); got != "kind: Job\n" {
		t.Errorf("got %q, want the kind line alone", got)
	}
}
