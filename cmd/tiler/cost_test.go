package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestCost: tiler cost prints the chargeback of a snapshot in each format, and names the flag of
// a bad format.
func TestCost(t *testing.T) {
	for _, out := range []string{"table", "json", "csv"} {
		var b bytes.Buffer
		if err := runCost(&b, costOptions{file: "../../testdata/snapshots/disruption.yaml", catalog: "aws-us-east-1", output: out}); err != nil {
			t.Fatalf("-o %s: %v", out, err)
		}
		if !strings.Contains(b.String(), "idle") {
			t.Errorf("-o %s has no idle line:\n%s", out, b.String())
		}
	}
	if err := runCost(io.Discard, costOptions{file: "../../testdata/snapshots/disruption.yaml", output: "yaml"}); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o yaml: %v, want an error naming --output", err)
	}
	if err := runCost(io.Discard, costOptions{file: "no-such-file.yaml", output: "table"}); err == nil || !strings.Contains(err.Error(), "no-such-file.yaml") {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}
