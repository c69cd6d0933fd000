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
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			head, sections, order := parseSections(string(raw))
			snap, err := snapshot.Decode(strings.NewReader(sections["snapshot.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			catName := strings.TrimSpace(sections["catalog"])
			if catName == "" {
				catName = "aws-us-east-1"
			}
			cat, err := catalog.Embedded(catName)
			if err != nil {
				t.Fatal(err)
			}
			var pol *policy.CostPolicy
			if p := sections["policy.yaml"]; p != "" {
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
				sections["plan.txt"] = got.String()
				if !contains(order, "plan.txt") {
					order = append(order, "plan.txt")
				}
				if err := os.WriteFile(file, []byte(formatSections(head, sections, order)), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(sections["plan.txt"], got.String()); diff != "" {
				t.Errorf("plan differs from %s (-want +got; run go test ./simulator -rewrite and read the diff):\n%s", file, diff)
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func parseSections(s string) (head string, sections map[string]string, order []string) {
	sections = map[string]string{}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur == "" {
			head = b.String()
		} else {
			sections[cur] = b.String()
			order = append(order, cur)
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			cur = strings.TrimSuffix(strings.TrimPrefix(t, "-- "), " --")
			continue
		}
		b.WriteString(line)
	}
	flush()
	return head, sections, order
}

func formatSections(head string, sections map[string]string, order []string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, name := range order {
		b.WriteString("-- " + name + " --\n")
		b.WriteString(sections[name])
	}
	return b.String()
}
