package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/replay"
)

func runFleetReplayCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newFleetReplayCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	err := cmd.Execute()
	return out.String(), err
}

// TestReplayCommand: half an hour of the trace under two policies, as a table and as JSON (every
// pod accounted for, the bound below both); bad flags name themselves.
func TestReplayCommand(t *testing.T) {
	pods := "--pods=../../" + benchDefaultPods
	out, err := runFleetReplayCmd(t, pods, "--hours=0.5", "--policies=tiler,whole-gpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiler", "whole-gpu", "clairvoyant-bound", "tiler's savings", "vs whole-gpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	html := filepath.Join(t.TempDir(), "report.html")
	out, err = runFleetReplayCmd(t, pods, "--hours=0.5", "--policies=tiler,whole-gpu", "--json", "--html="+html)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Results) != 2 || rep.Bound == nil {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Results {
		if r.Pods != rep.Pods || r.Cost < rep.Bound.Cost {
			t.Errorf("%s: %d of %d pods, $%.2f vs bound $%.2f", r.Policy, r.Pods, rep.Pods, r.Cost, rep.Bound.Cost)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "<svg"); n != 3 || !strings.Contains(string(page), "Savings of tiler") {
		t.Errorf("HTML report: %d plots, savings section %v; want 3 plots and the savings", n, strings.Contains(string(page), "Savings of tiler"))
	}
	for _, banned := range []string{"<script", "<link", "@import", `src="http`, `href="http`, "url(http"} {
		if strings.Contains(string(page), banned) {
			t.Errorf("HTML report loads something (%q); it must be self-contained", banned)
		}
	}
	// Workload 3: half an hour of the mixed day under tiler and its reactive self.
	out, err = runFleetReplayCmd(t, "--workload=mixed", "--traffic=../../testdata/traces/tune/synth/web-1.csv", "--hours=0.5",
		"--policies=tiler,tiler-no-forecast", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var mixed replay.Report
	if err := json.Unmarshal([]byte(out), &mixed); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(mixed.Results) != 2 || mixed.Results[0].ForecastRounds == 0 || mixed.Results[1].ForecastRounds != 0 || !strings.HasSuffix(mixed.Workload, "-mixed") {
		t.Errorf("mixed report: workload %s, %d results; want tiler forecasting and tiler-no-forecast not", mixed.Workload, len(mixed.Results))
	}
	// Spot at a high interruption rate: interruptions happen and are reported, seeded.
	out, err = runFleetReplayCmd(t, pods, "--hours=0.5", "--policies=tiler", "--capacity-types=spot,on-demand",
		"--spot-interruption-rate=2", "--interruption-seed=7", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var spot replay.Report
	if err := json.Unmarshal([]byte(out), &spot); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(spot.Results) != 1 || spot.Results[0].Interruptions == 0 || spot.Results[0].SpotCost == 0 || spot.InterruptionSeed != 7 || spot.SpotInterruptionRate != 2 {
		t.Errorf("spot report: %+v; want spot bought and interrupted, seed 7 at rate 2", spot.Results)
	}
	for args, want := range map[string]string{
		"--spot-interruption-rate=-0.5":     "--spot-interruption-rate -0.5: must be a finite number ≥ 0",
		"--spot-interruption-rate=NaN":      "--spot-interruption-rate NaN",
		"--policies=tiler,nope":             `--policies: unknown policy "nope"`,
		"--capacity-types=reserved":         `--capacity-types: unknown capacity type "reserved"`,
		"--hours=0":                         "--hours must be positive",
		"--workload=weekly":                 `--workload: unknown workload "weekly"`,
		"--pods=/nonexistent.csv":           "--pods:",
		"--workload=mixed --from=yesterday": "--from:",
	} {
		if _, err := runFleetReplayCmd(t, append([]string{pods}, strings.Fields(args)...)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", args, err, want)
		}
	}
}
