package backtest

import (
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// traceSet lists the CSV traces of a set of testdata/traces (tune or eval), as loadTrace names.
func traceSet(tb testing.TB, set string) []string {
	tb.Helper()
	root := filepath.Join("..", "..", "testdata", "traces")
	var names []string
	err := filepath.WalkDir(filepath.Join(root, set), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".csv") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("listing the %s set: %v", set, err)
	}
	sort.Strings(names)
	if len(names) == 0 {
		tb.Fatalf("the %s set of testdata/traces is empty", set)
	}
	return names
}

// The targets for series the forecaster was not tuned on: a one-day-ahead hourly WAPE
// never above the best seasonal-naive baseline's, and at most 0.85 of it as the median over
// series.
const (
	targetNeverWorse = 1.0
	targetMedian     = 0.85
)

// generalisationMisses are the series of each set where the forecaster does not reach
// targetNeverWorse, with the ratio reached: the test asserts it plus 3 % of slack, so a
// regression still fails, and says why it is missed.
var generalisationMisses = map[string]struct {
	reached float64
	why     string
}{
	// Eval series, never tuned on. The two-week CloudWatch series are scored on their second
	// week with one week of history. The datacenter series joined eval in session 23, scored
	// once with the forecaster as it was (testdata/traces/README.md).
	"eval/datacenter/alibaba2018_cpu_util_percent.csv": {1.129, "eight days long, its last four scored on three to seven days of history, where only daily models apply: the mix is weighed on a few days of evidence and falls back to same time yesterday, the best baseline, for 60 % of the forecasts (interval 0.983–1.395; 1.092 before session 30's smoothed expert, which led its first Monday)"},
	"eval/nab/grok_asg_anomaly.csv":                    {1.205, "the load drops to 1 % for good on day 13 of 16: the forecast follows twelve hours after same time yesterday"},
	"eval/nab/rds_cpu_utilization_cc0c53.csv":          {1.007, "the load jumps 2.4× for good on 25 February, its twelfth day of fourteen: the forecasts made in the jump's first twelve hours stay on the old level, and the forecast follows same time yesterday only once the rise is taken for a break (forecast/break.go); interval 0.993–1.142 (1.108 before session 30's smoothed expert)"},
	// Tune series: zoned joined tune in session 23 (forecast/synth).
	"tune/synth/zoned-1.csv": {1.027, "batch load four hours ahead of UTC: in the first days of its first scored week, with one week of history, before its weekend is read (kinds.go), the weekday/weekend model pools the wrong days and the forecast falls back to same time yesterday for a third of the week (WAPE 1.48× the best baseline's that week); on its own clock 0.873"},
}

// generalisationMedians are the medians reached over the sets that miss targetMedian, asserted
// with 1 % of slack (see the README's forecaster section for why); a set not listed is held to
// the target itself. Tune, at 0.872 over its 39 series after NAB's ec2_network_in_257a54 and
// ec2_disk_write_bytes_c0d644 joined it, met the target again (0.844) with the soft level
// shift (forecast/break.go's softBreakBand), and keeps it over 41 since NAB's
// ec2_disk_write_bytes_1ef3de and ec2_network_in_5abac7 joined it with the floor fallback
// (forecast/floor.go), and over 44 (0.843) since the zoned family joined both sets in session 23;
// 0.830 since session 26's re-shaped fallback (forecast.reshapedFallback) took migration-2 and
// migration-3 below it, and 0.825 with the larger level-shift share (softBreakShare); 0.838 over
// 54 since the ten tweet series joined it in session 27, where two of them, AAPL and CRM, were
// above 1.0 (1.145, 1.127) until the level-break rule learned to leave a noisy load's surges
// alone and to stop following breaks that have not paid (forecast.breakNoise, followsBreaks).
// Eval was at 0.870 over its 35 series before the three public datacenter CPU series joined it in
// session 23 (0.873 over 38), and 0.873 over 40 with the zoned family and the weekend read from
// the load; 0.874 since session 29's median day level (forecast's dayLevel), 0.871 since session
// 30's smoothed profile (forecast's smoothed expert); 0.884 over 42 since two public web-server
// request logs, NASA 1995 and WorldCup 1998 (eval/web), joined it in session 31, scored once
// with the forecaster as it was: 0.947 and 1.000, both above the median before.
var generalisationMedians = map[string]float64{"eval": 0.884}

// TestGeneralisation scores the forecaster one day ahead, hourly, on every series of the tune
// set and of the eval set (testdata/traces/README.md), against the best seasonal-naive baseline
// of each.
func TestGeneralisation(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through every trace")
	}
	seen := map[string]float64{}
	for _, set := range []string{"tune", "eval"} {
		t.Run(set, func(t *testing.T) {
			var ratios []float64
			for _, name := range traceSet(t, set) {
				r, err := Run(name, loadTrace(t, name), Config{Horizon: forecast.Day, Step: time.Hour})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				ratios = append(ratios, r.Ratio)
				seen[name] = r.Ratio
				t.Logf("%-50s WAPE %.4f, best baseline %.4f (%s), ratio %.3f [%.3f, %.3f], fell back %.0f %%",
					name, r.WAPE, r.BestBaseline, r.BestBaselineName, r.Ratio, r.RatioInterval.Low, r.RatioInterval.High, 100*r.FellBack)
				limit := targetNeverWorse
				if miss, ok := generalisationMisses[name]; ok {
					limit = 1.03 * miss.reached
					t.Logf("  known miss of the %.1f× target: %s", targetNeverWorse, miss.why)
				}
				if r.Ratio > limit {
					t.Errorf("%s: WAPE %.4f is %.3f× the best baseline's %.4f, want ≤ %.3f×", name, r.WAPE, r.Ratio, r.BestBaseline, limit)
				}
			}
			sort.Float64s(ratios)
			med := (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
			t.Logf("%s: %d series, median ratio %.3f, worst %.3f (target median ≤ %.2f)", set, len(ratios), med, ratios[len(ratios)-1], targetMedian)
			if limit := 1.01 * generalisationMedians[set]; med > max(targetMedian, limit) {
				t.Errorf("median ratio %.3f over the %s set, want ≤ %.3f", med, set, max(targetMedian, limit))
			}
		})
	}
	// A known miss that is no longer one (or no longer a trace) is a stale explanation.
	for name := range generalisationMisses {
		if r, ok := seen[name]; !ok {
			t.Errorf("known miss %s: not a trace of the tune or eval set", name)
		} else if r <= targetNeverWorse {
			t.Errorf("known miss %s reaches %.3f ≤ %.1f: drop it from generalisationMisses", name, r, targetNeverWorse)
		}
	}
}
