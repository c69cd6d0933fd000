package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCost: tiler cost prints the chargeback of a snapshot in each format, and names the flag of
// a bad format.
func TestCost(t *testing.T) {
	for _, out := range []string{"table", "json", "csv"} {
		var b bytes.Buffer
		if err := runCost(context.Background(), &b, costOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", output: out}); err != nil {
			t.Fatalf("-o %s: %v", out, err)
		}
		if !strings.Contains(b.String(), "idle") {
			t.Errorf("-o %s has no idle line:\n%s", out, b.String())
		}
	}
	if err := runCost(context.Background(), io.Discard, costOptions{file: "../../testdata/snapshots/disruption.yaml", output: "yaml"}); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o yaml: %v, want an error naming --output", err)
	}
	if err := runCost(context.Background(), io.Discard, costOptions{file: "no-such-file.yaml", output: "table"}); err == nil || !strings.Contains(err.Error(), "no-such-file.yaml") {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}

// TestCostTeams: with --policy, tiler cost adds the team column and the per-team totals; a policy
// file that does not parse is an error naming the file.
func TestCostTeams(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools: [{name: general}]
teams:
- name: platform
  namespaces: [default]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := runCost(context.Background(), &b, costOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", policy: pol, output: "csv"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "namespace,team,pool") || !strings.Contains(b.String(), "default,platform,") {
		t.Errorf("CSV with teams:\n%s", b.String())
	}
	b.Reset()
	if err := runCost(context.Background(), &b, costOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", policy: pol, output: "table"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "TEAM") || !strings.Contains(b.String(), "platform") {
		t.Errorf("table with teams:\n%s", b.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools: [{name: general}]\nteams: [{name: a}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runCost(context.Background(), io.Discard, costOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", policy: bad, output: "table"}); err == nil ||
		!strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "teams[0].namespaces") {
		t.Errorf("bad policy: %v", err)
	}
}
