package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runTiler runs the root command with args and returns stdout and the error.
func runTiler(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newForecastCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	root.SilenceUsage = true
	err := root.Execute()
	return out.String(), err
}

func TestForecastBacktestJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through a whole trace")
	}
	out, err := runTiler(t, "backtest", "--csv", "../../testdata/traces/tune/crane-dsp/input0.csv", "--horizon", "1h", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Series        string             `json:"series"`
		Horizon       string             `json:"horizon"`
		Model         string             `json:"model"`
		WAPE          float64            `json:"wape"`
		MAPE          float64            `json:"mape"`
		Baselines     map[string]float64 `json:"baselines"`
		Ratio         float64            `json:"ratio"`
		Shares        map[string]float64 `json:"shares"`
		RatioInterval struct {
			Low, High float64
		} `json:"ratioInterval"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if strings.Contains(out, `"experts"`) {
		t.Errorf("the experts were scored alone without --experts:\n%s", out)
	}
	if strings.Contains(out, `"days"`) {
		t.Errorf("the days were scored without --days:\n%s", out)
	}
	if got.Series != "tune/crane-dsp/input0.csv" || got.Shares[got.Model] <= 0 || got.WAPE <= 0 || got.Baselines["seasonalNaiveDay"] <= 0 ||
		!(got.RatioInterval.Low <= got.Ratio && got.Ratio <= got.RatioInterval.High) || got.Verdict == "" {
		t.Errorf("unexpected result %+v", got)
	}
}

// TestForecastBacktestSaysWhenItLoses: on a series where the forecaster loses to a baseline
// (the eval set's autoscaling-group series, whose load drops for good on day 13 of 16: the
// forecast follows twelve hours after same time yesterday), the text output says so in words,
// names the baseline and shows the experts' shares, and with --days the days it lost (a ratio
// above 1.0 over the whole backtest is one on some day at least). (The EC2 series that lost clearly, 1.578×,
// no longer does since the weekly baselines skip its one-off outage; the clear-loss wording is
// TestVerdict's.)
func TestForecastBacktestSaysWhenItLoses(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through a whole trace")
	}
	out, err := runTiler(t, "backtest", "--csv", "../../testdata/traces/eval/nab/grok_asg_anomaly.csv", "--horizon", "1d", "--step", "1h", "--experts", "--days")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"loses to its best baseline", "the same time yesterday", "expert shares", "interval", "experts alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Same time yesterday is the best baseline there and forecasts every target: alone, it is
	// exactly its own baseline. And it is no better than the best expert listed first.
	if !regexp.MustCompile(`(?m)^  baseline/seasonalNaiveDay +100 % +[0-9.]+ % +1\.000$`).MatchString(out) {
		t.Errorf("output lacks same time yesterday alone at ratio 1.000 on every target:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^experts alone.*\n  \S+ +[0-9]+ % +[0-9.]+ % +(0\.\d+|1\.000)$`).MatchString(out) {
		t.Errorf("the first expert alone is not the best (at or below 1.000):\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^by day +targets +WAPE +seasonalNaiveDay +/ baseline +lead +fell back$`).MatchString(out) {
		t.Errorf("output lacks the day-by-day table against same time yesterday:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  20\d\d-\d\d-\d\d [A-Z][a-z]{2} +\d+ +[0-9.]+ % +[0-9.]+ % +[0-9.]+ lost +\S+ +\d+ %$`).MatchString(out) {
		t.Errorf("no day is marked lost:\n%s", out)
	}
}

func TestForecastReplayText(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a whole trace")
	}
	out, err := runTiler(t, "replay", "--csv", "../../testdata/traces/tune/crane-dsp/input0.csv", "--per-gpu", "6", "--boot", "5m")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"under-provisioned GPU-minutes", "GPU-hours", "lead", "15m0s", "forecast+queue", "mean wait in queue", "queue removes", "clairvoyant bound", "the forecast pays"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestForecastBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no csv", []string{"backtest", "--horizon", "1h"}, "--csv"},
		{"non-numeric", []string{"backtest", "--csv", write("a.csv", "ts,value\n60,1\n120,x\n")}, "line 3"},
		{"backwards", []string{"backtest", "--csv", write("b.csv", "ts,value\n120,1\n60,2\n")}, "line 3"},
		{"bad horizon", []string{"backtest", "--csv", write("c.csv", "ts,value\n60,1\n"), "--horizon", "soon"}, "soon"},
		{"bad output", []string{"backtest", "--csv", write("d.csv", "ts,value\n60,1\n"), "-o", "yaml"}, "--output"},
		{"no per-gpu", []string{"replay", "--csv", write("e.csv", "ts,value\n60,1\n120,2\n")}, "perGPU"},
		{"bad time zone", []string{"replay", "--csv", write("g.csv", "ts,value\n60,1\n120,2\n"), "--per-gpu", "1", "--time-zone", "Mars/Olympus"}, `--time-zone "Mars/Olympus"`},
		{"env twin", []string{"replay", "--csv", write("f.csv", "ts,value\n60,1\n120,2\n"), "--per-gpu", "1"}, "TILER_FORECAST_BOOT"},
	}
	t.Setenv("TILER_FORECAST_BOOT", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "env twin" {
				t.Setenv("TILER_FORECAST_BOOT", "later")
			}
			_, err := runTiler(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
