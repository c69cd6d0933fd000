package simulator_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/internal/golden"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the plan sections of testdata/*.txt golden files")

// TestGolden runs every scenario in testdata/*.txt. A scenario file has sections introduced by
// "-- name --" lines: snapshot.yaml (required), policy.yaml and catalog (optional, default
// aws-us-east-1), then plan.txt, the rendered plan, which `go test ./simulator -rewrite` regenerates.
// Every golden plan is also checked by the independent checker.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			file := golden.Parse(string(raw))
			snap, err := snapshot.Decode(strings.NewReader(file.Text("snapshot.yaml")))
			if err != nil {
				t.Fatal(err)
			}
			catName := strings.TrimSpace(file.Text("catalog"))
			if catName == "" {
				catName = "aws-us-east-1"
			}
			cat, err := catalog.Embedded(catName)
			if err != nil {
				t.Fatal(err)
			}
			var pol *policy.CostPolicy
			if p := file.Text("policy.yaml"); p != "" {
				if pol, err = policy.Parse([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol,
				Options: simulator.Options{Seed: "golden"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Errorf("checker: %s", v)
			}
			var got bytes.Buffer
			if err := plan.WriteTable(&got); err != nil {
				t.Fatal(err)
			}
			if *rewrite {
				file.Set("plan.txt", got.String())
				if err := os.WriteFile(path, []byte(file.Format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(file.Text("plan.txt"), got.String()); diff != "" {
				t.Errorf("plan differs from %s (-want +got; run go test ./simulator -rewrite and read the diff):\n%s", path, diff)
			}
		})
	}
}
