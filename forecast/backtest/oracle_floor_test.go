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

// rivalScores scores a rival forecast (rival[T] for target T, NaN for none) beside the
// forecaster's (w's) on the targets a backtest of s at horizon h scores — from the warm-up on,
// observed, every applicable baseline with a value — and returns the three WAPEs (the best
// baseline's the least of theirs), and the scores of the forecaster against the rival, whose
// bootstrap is the interval of the ratio of their WAPEs.
func rivalScores(s forecast.Series, h int, rival []float64, w *forecast.Walker) (model, rivalWAPE, best float64, vs *scores) {
	from := max(warmUp(s), h)
	var applicable []func(int) (float64, bool)
	for _, f := range baselineFuncs(s, h) {
		if _, ok := f(from); ok {
			applicable = append(applicable, f)
		}
	}
	errs := make([]float64, len(applicable))
	vs = &scores{baseNames: []string{"oracle"}, baseErr: make([][]float64, 1)}
	var modelErr, rivalErr, sumY float64
targets:
	for T := from; T < s.Len(); T++ {
		y := s.Values[T]
		if math.IsNaN(y) || T >= len(rival) || math.IsNaN(rival[T]) {
			continue
		}
		fc, err := w.At(T - h)
		if err != nil {
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
		modelErr += math.Abs(y - fc.Point)
		rivalErr += math.Abs(y - rival[T])
		sumY += math.Abs(y)
		vs.modelErr = append(vs.modelErr, math.Abs(y-fc.Point))
		vs.baseErr[0] = append(vs.baseErr[0], math.Abs(y-rival[T]))
	}
	best = math.Inf(1)
	for _, e := range errs {
		best = math.Min(best, e/sumY)
	}
	return modelErr / sumY, rivalErr / sumY, best, vs
}

// TestOracleFloor scores, on every synthetic trace of the tune and eval sets whose family has
// no one-off events, the oracle that knows the generator (synth.Oracle: the series without its
// noise and the noise's state at the origin) in the 1-day hourly backtest of TestGeneralisation,
// against the same best baseline, and the filter oracle (synth.FilterOracle: the same, but the
// noise's state estimated from the values seen, as well as they tell it). The filter oracle's
// ratio estimates the floor of what a forecaster that sees only the series can reach, so the
// forecaster's ratio minus it is what is left to gain there. The
// test checks the oracle is scored on the backtest's own targets (the same WAPE and best baseline
// as the backtest's) and that the forecaster beats neither oracle beyond chance — the bootstrap
// interval of the ratio of their WAPEs (days resampled, as the backtest's interval) lies below
// 1 — which would say the oracle, not the forecaster, is wrong. Chance is not small: four weeks
// of scored days, and the noise of a day's level is most of the error (on gaps-101 the
// forecaster's WAPE is 0.98 of the oracle's, interval 0.90–1.07). It logs, over every trace of
// each set, the median ratio the forecaster would reach if it matched the filter oracle wherever
// that is lower and kept its own ratio on the rest (the real traces and the families with
// events): how far the median target is within reach of the synthetic series alone.
func TestOracleFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through every synthetic trace")
	}
	for _, set := range []string{"tune", "eval"} {
		t.Run(set, func(t *testing.T) {
			var models, oracles, filtered, reach []float64
			for _, name := range traceSet(t, set) {
				r, err := Run(name, loadTrace(t, name), Config{Horizon: forecast.Day, Step: time.Hour})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				family, seed, ok := synthTrace(name)
				if !ok {
					reach = append(reach, r.Ratio)
					continue
				}
				oracle, err := synth.Oracle(family, seed, forecast.Day, time.Hour)
				if err != nil {
					t.Logf("%-28s no oracle: %v", name, err)
					reach = append(reach, r.Ratio)
					continue
				}
				filter, err := synth.FilterOracle(family, seed, forecast.Day, time.Hour)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				s, err := loadTrace(t, name).Resample(time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				w, err := forecast.NewWalker(s, forecast.Options{Horizon: forecast.Day})
				if err != nil {
					t.Fatal(err)
				}
				h := s.Steps(forecast.Day)
				model, wape, best, vs := rivalScores(s, h, oracle.Values, w)
				if math.Abs(best-r.BestBaseline) > 1e-9*r.BestBaseline || math.Abs(model-r.WAPE) > 1e-9*r.WAPE {
					t.Errorf("%s: WAPE %.6f and best baseline %.6f differ from the backtest's %.6f and %.6f: not the same targets", name, model, best, r.WAPE, r.BestBaseline)
				}
				_, fwape, _, fvs := rivalScores(s, h, filter.Values, w)
				floor, in := wape/best, vs.bootstrap(s)
				ffloor, fin := fwape/best, fvs.bootstrap(s)
				t.Logf("%-28s forecaster %.3f, oracle %.3f, filter oracle %.3f, left to gain %.3f; forecaster/oracle %.3f [%.3f, %.3f], /filter oracle %.3f [%.3f, %.3f]", name, r.Ratio, floor, ffloor, r.Ratio-ffloor, model/wape, in.Low, in.High, model/fwape, fin.Low, fin.High)
				if in.High < 1 || fin.High < 1 {
					t.Errorf("%s: the forecaster beats an oracle: its WAPE is %.3f of the oracle's, interval [%.3f, %.3f], and %.3f of the filter oracle's, [%.3f, %.3f]", name, model/wape, in.Low, in.High, model/fwape, fin.Low, fin.High)
				}
				models, oracles, filtered = append(models, r.Ratio), append(oracles, floor), append(filtered, ffloor)
				reach = append(reach, min(r.Ratio, ffloor))
			}
			t.Logf("%s: %d series, median ratio: forecaster %.3f, oracle %.3f, filter oracle %.3f; above the %.2f target: oracle on %d, filter oracle on %d", set, len(models), medianRatio(models), medianRatio(oracles), medianRatio(filtered), targetMedian, countAbove(oracles, targetMedian), countAbove(filtered, targetMedian))
			t.Logf("%s: %d series, median ratio %.3f if the forecaster reached the filter oracle wherever that is lower and kept its own ratio elsewhere (%d above the %.2f target)", set, len(reach), medianRatio(reach), countAbove(reach, targetMedian), targetMedian)
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
