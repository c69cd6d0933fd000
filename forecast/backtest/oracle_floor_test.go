package backtest

import (
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/forecast/synth"
)

// synthTrace parses a trace of forecast/synth's (tune/synth/web-1.csv) into its family and
// seed; ok is false for the other traces.
func synthTrace(name string) (synth.Family, uint64, bool) {
	if path.Base(path.Dir(name)) != "synth" {
		return "", 0, false
	}
	base := strings.TrimSuffix(path.Base(name), ".csv")
	i := strings.LastIndexByte(base, '-')
	if i < 0 {
		return "", 0, false
	}
	seed, err := strconv.ParseUint(base[i+1:], 10, 64)
	return synth.Family(base[:i]), seed, err == nil
}

// rivalWAPE scores a rival forecast (rival[T] for target T, NaN for none) on the targets a
// backtest of s at horizon h scores — from the warm-up on, observed, every applicable baseline
// with a value — and returns its WAPE and the best baseline's on the same targets.
func rivalWAPE(s forecast.Series, h int, rival []float64) (wape, best float64) {
	from := max(warmUp(s), h)
	var applicable []func(int) (float64, bool)
	for _, f := range baselineFuncs(s, h) {
		if _, ok := f(from); ok {
			applicable = append(applicable, f)
		}
	}
	errs := make([]float64, len(applicable))
	var rivalErr, sumY float64
targets:
	for T := from; T < s.Len(); T++ {
		y := s.Values[T]
		if math.IsNaN(y) || T >= len(rival) || math.IsNaN(rival[T]) {
			continue
		}
		vals := make([]float64, len(applicable))
		for i, f := range applicable {
			v, ok := f(T)
			if !ok {
				continue targets
			}
			vals[i] = v
		}
		for i, v := range vals {
			errs[i] += math.Abs(y - v)
		}
		rivalErr += math.Abs(y - rival[T])
		sumY += math.Abs(y)
	}
	best = math.Inf(1)
	for _, e := range errs {
		best = math.Min(best, e/sumY)
	}
	return rivalErr / sumY, best
}

// TestOracleFloor scores, on every synthetic trace of the tune and eval sets whose family has
// no one-off events, the oracle that knows the generator (synth.Oracle: the series without its
// noise and the noise's state at the origin) in the 1-day hourly backtest of TestGeneralisation,
// against the same best baseline. Its ratio estimates the floor of what any forecaster can
// reach on the series, so the forecaster's ratio minus it is what is left to gain there. The
// test checks the oracle is scored on the backtest's own targets (the same best baseline) and
// that the forecaster does not beat it by more than 2 %: one that did would say the oracle, not
// the forecaster, is wrong.
func TestOracleFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through every synthetic trace")
	}
	for _, set := range []string{"tune", "eval"} {
		t.Run(set, func(t *testing.T) {
			var models, oracles []float64
			for _, name := range traceSet(t, set) {
				family, seed, ok := synthTrace(name)
				if !ok {
					continue
				}
				oracle, err := synth.Oracle(family, seed, forecast.Day, time.Hour)
				if err != nil {
					t.Logf("%-28s no oracle: %v", name, err)
					continue
				}
				r, err := Run(name, loadTrace(t, name), Config{Horizon: forecast.Day, Step: time.Hour})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				s, err := loadTrace(t, name).Resample(time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				wape, best := rivalWAPE(s, s.Steps(forecast.Day), oracle.Values)
				if math.Abs(best-r.BestBaseline) > 1e-9*r.BestBaseline {
					t.Errorf("%s: the oracle's best baseline WAPE %.6f differs from the backtest's %.6f: not the same targets", name, best, r.BestBaseline)
				}
				floor := wape / best
				t.Logf("%-28s forecaster %.3f, oracle %.3f, left to gain %.3f", name, r.Ratio, floor, r.Ratio-floor)
				if r.Ratio < 0.98*floor {
					t.Errorf("%s: the forecaster's ratio %.3f beats the oracle's %.3f by more than 2 %%", name, r.Ratio, floor)
				}
				models, oracles = append(models, r.Ratio), append(oracles, floor)
			}
			t.Logf("%s: %d series, median ratio: forecaster %.3f, oracle %.3f; oracle above the %.2f target on %d", set, len(models), medianRatio(models), medianRatio(oracles), targetMedian, countAbove(oracles, targetMedian))
		})
	}
}

func medianRatio(x []float64) float64 {
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	return (y[(len(y)-1)/2] + y[len(y)/2]) / 2
}

func countAbove(x []float64, v float64) int {
	n := 0
	for _, r := range x {
		if r > v {
			n++
		}
	}
	return n
}
