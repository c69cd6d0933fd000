package backtest

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// hindsightCover is the share of the scored targets an expert must have forecast to count as
// the best expert of a series in hindsight: one that joined late is scored on its best days.
const hindsightCover = 0.9

// TestExpertsInHindsight scores every expert alone (Config.Experts) in TestGeneralisation's
// backtest (one day ahead, hourly) on every series of the tune and eval sets, and logs the best
// of them on each series in hindsight — a choice no forecaster can make, since it looks at the
// targets — and the median over each set of the lesser of the forecaster's ratio and that
// expert's: how far better weights for the same experts could take the median at most, had they
// picked each series' best expert from its first target on.
//
// It checks the experts are scored on the backtest's own targets: same time yesterday, read by
// the mix from the series as the backtest's baseline reads it, scores the same WAPE as that
// baseline wherever it forecast every target.
func TestExpertsInHindsight(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through every trace")
	}
	for _, set := range []string{"tune", "eval"} {
		t.Run(set, func(t *testing.T) {
			var mix, hindsight []float64
			checked := 0
			for _, name := range traceSet(t, set) {
				r, err := Run(name, loadTrace(t, name), Config{Horizon: forecast.Day, Step: time.Hour, Experts: true})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				best := ExpertScore{Ratio: math.Inf(1)}
				for _, e := range r.Experts {
					if e.Share >= hindsightCover && e.Ratio < best.Ratio {
						best = e
					}
					if e.Model == "baseline/"+SeasonalNaiveDay && e.Targets == r.Targets {
						checked++
						if want := r.Baselines[SeasonalNaiveDay]; math.Abs(e.WAPE-want) > 1e-9*want {
							t.Errorf("%s: same time yesterday alone scores WAPE %.6f, the backtest's baseline %.6f", name, e.WAPE, want)
						}
					}
				}
				if len(r.Experts) == 0 {
					t.Fatalf("%s: no expert scored", name)
				}
				mix = append(mix, r.Ratio)
				hindsight = append(hindsight, math.Min(r.Ratio, best.Ratio))
				t.Logf("%-50s forecaster %.3f, best expert %-30s %.3f (%.0f %% of targets)", name, r.Ratio, best.Model, best.Ratio, 100*best.Share)
			}
			if checked == 0 {
				t.Error("same time yesterday forecast every target of no series: nothing checked the targets")
			}
			t.Logf("%s: %d series, median ratio: forecaster %.3f, the better of it and the best expert in hindsight %.3f (target ≤ %.2f)", set, len(mix), median(mix), median(hindsight), targetMedian)
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
