package backtest

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Baseline names used as keys of Result.Baselines.
const (
	// SeasonalNaiveDay repeats the value one day (or the first whole number of days ≥ the horizon)
	// before the target.
	SeasonalNaiveDay = "seasonalNaiveDay"
	// SeasonalNaiveWeek repeats the value one week before the target.
	SeasonalNaiveWeek = "seasonalNaiveWeek"
	// SeasonalMeanWeeks averages the same time of week 1–4 weeks before the target (as many as exist).
	SeasonalMeanWeeks = "seasonalMean1to4Weeks"
)

// Config says what to score.
type Config struct {
	// Horizon is how far ahead each forecast is made; every target is forecast exactly this far
	// ahead of its origin.
	Horizon time.Duration
	// Step is the resolution scored: the series is averaged to it and origins advance by it.
	// Zero picks DefaultStep(Horizon, series step).
	Step time.Duration
	// Options configures the model; its Horizon is overwritten.
	Options forecast.Options
}

// Result holds the scores of a backtest. Errors are fractions (0.081 is 8.1 %).
type Result struct {
	// Series names the input.
	Series string `json:"series"`
	// Horizon and Step echo the configuration.
	Horizon string `json:"horizon"`
	Step    string `json:"step"`
	// Model names the model used for most targets.
	Model string `json:"model"`
	// Models counts targets by model.
	Models map[string]int `json:"models"`
	// WAPE is Σ|y−ŷ| / Σ|y| over the scored targets.
	WAPE float64 `json:"wape"`
	// MAPE is the mean of |y−ŷ|/|y| over scored targets whose actual exceeds 1 % of the mean
	// actual (near-zero actuals would make it meaningless).
	MAPE float64 `json:"mape"`
	// Coverage is the fraction of targets at or below the upper forecast.
	Coverage float64 `json:"coverage"`
	// Baselines maps a baseline name to its WAPE on the same targets.
	Baselines map[string]float64 `json:"baselines"`
	// BestBaseline is the lowest baseline WAPE, and Ratio = WAPE / BestBaseline.
	BestBaseline float64 `json:"bestBaseline"`
	Ratio        float64 `json:"ratio"`
	// Targets is the number of scored targets; From is the first.
	Targets int       `json:"targets"`
	From    time.Time `json:"from"`
}

// DefaultStep is the scoring resolution for a horizon: a twelfth of it, at least the series step
// and at most an hour (so a one-day horizon is scored hourly, one hour every five minutes).
func DefaultStep(horizon, seriesStep time.Duration) time.Duration {
	step := min(time.Hour, horizon/12)
	step = max(seriesStep, step.Truncate(seriesStep))
	return step
}

// Run scores the forecaster and the baselines on s.
func Run(name string, s forecast.Series, cfg Config) (Result, error) {
	if cfg.Horizon < s.Step {
		return Result{}, fmt.Errorf("horizon %s is shorter than the series step %s", cfg.Horizon, s.Step)
	}
	if cfg.Step == 0 {
		cfg.Step = DefaultStep(cfg.Horizon, s.Step)
	}
	rs, err := s.Resample(cfg.Step)
	if err != nil {
		return Result{}, fmt.Errorf("scoring at step %s: %w", cfg.Step, err)
	}
	opts := cfg.Options
	opts.Horizon = cfg.Horizon
	w, err := forecast.NewWalker(rs, opts)
	if err != nil {
		return Result{}, fmt.Errorf("building the forecaster: %w", err)
	}
	res := Result{Series: name, Horizon: cfg.Horizon.String(), Step: cfg.Step.String(), Models: map[string]int{}}
	sc, err := score(rs, w, res.Models)
	if err != nil {
		return Result{}, err
	}
	sc.fill(&res, rs)
	return res, nil
}

// warmUp is the first target index scored: four weeks when the series has eight or more (so the
// four-week baseline is complete), one week when it has a week and a day, half the series
// otherwise. Everything before it is history only.
func warmUp(s forecast.Series) int {
	n := s.Len()
	switch {
	case n >= s.Steps(8*forecast.Week):
		return s.Steps(4 * forecast.Week)
	case n >= s.Steps(forecast.Week+forecast.Day):
		return s.Steps(forecast.Week)
	default:
		return n / 2
	}
}

type scores struct {
	from                 int
	n                    int
	absErr, absY, apeSum float64
	apeN, covered        int
	base                 map[string]float64
	baseOK               map[string]bool
}

func score(s forecast.Series, w *forecast.Walker, models map[string]int) (*scores, error) {
	h := w.HorizonSteps()
	sc := &scores{from: max(warmUp(s), h), base: map[string]float64{}, baseOK: map[string]bool{}}
	baselines := baselineFuncs(s, h)
	for name, f := range baselines {
		_, ok := f(sc.from)
		sc.baseOK[name] = ok
	}
	mean := meanAbs(s.Values[min(sc.from, s.Len()):]) // a series shorter than the horizon scores nothing
	for T := sc.from; T < s.Len(); T++ {
		y := s.Values[T]
		if math.IsNaN(y) {
			continue
		}
		fc, err := w.At(T - h)
		if err != nil {
			continue
		}
		if !sc.baselinesAt(baselines, T, y) {
			continue
		}
		models[fc.Model]++
		sc.add(y, fc, mean)
	}
	if sc.n == 0 {
		return nil, fmt.Errorf("no target could be scored: the series is too short or too sparse for a %d-step horizon", h)
	}
	return sc, nil
}

// baselinesAt adds every applicable baseline's error at T; it skips the target (for all methods)
// when one of them has no value there, so all figures share the same targets.
func (sc *scores) baselinesAt(baselines map[string]func(int) (float64, bool), T int, y float64) bool {
	vals := map[string]float64{}
	for name, f := range baselines {
		if !sc.baseOK[name] {
			continue
		}
		v, ok := f(T)
		if !ok {
			return false
		}
		vals[name] = v
	}
	for name, v := range vals {
		sc.base[name] += math.Abs(y - v)
	}
	return true
}

func (sc *scores) add(y float64, fc forecast.Forecast, mean float64) {
	e := math.Abs(y - fc.Point)
	sc.absErr += e
	sc.absY += math.Abs(y)
	if math.Abs(y) > 0.01*mean {
		sc.apeSum += e / math.Abs(y)
		sc.apeN++
	}
	if y <= fc.Upper {
		sc.covered++
	}
	sc.n++
}

func (sc *scores) fill(res *Result, s forecast.Series) {
	res.Targets = sc.n
	res.From = s.TimeAt(sc.from)
	res.WAPE = sc.absErr / sc.absY
	if sc.apeN > 0 {
		res.MAPE = sc.apeSum / float64(sc.apeN)
	}
	res.Coverage = float64(sc.covered) / float64(sc.n)
	res.Baselines = map[string]float64{}
	res.BestBaseline = math.Inf(1)
	for name, e := range sc.base {
		if sc.baseOK[name] {
			res.Baselines[name] = e / sc.absY
			res.BestBaseline = math.Min(res.BestBaseline, res.Baselines[name])
		}
	}
	if len(res.Baselines) > 0 {
		res.Ratio = res.WAPE / res.BestBaseline
	} else {
		res.BestBaseline = 0
	}
	names := make([]string, 0, len(res.Models))
	for m := range res.Models {
		names = append(names, m)
	}
	sort.Slice(names, func(i, j int) bool { return res.Models[names[i]] > res.Models[names[j]] })
	if len(names) > 0 {
		res.Model = names[0]
	}
}

// baselineFuncs returns the baselines for a horizon of h steps; each returns the baseline value
// for target T and whether it has one, reading only values at indices ≤ T−h.
func baselineFuncs(s forecast.Series, h int) map[string]func(int) (float64, bool) {
	day, week := s.Steps(forecast.Day), s.Steps(forecast.Week)
	dayShift := day * max(1, (h+day-1)/day)
	weekShift := week * max(1, (h+week-1)/week)
	at := func(i int) (float64, bool) {
		if i < 0 || i >= s.Len() || math.IsNaN(s.Values[i]) {
			return 0, false
		}
		return s.Values[i], true
	}
	return map[string]func(int) (float64, bool){
		SeasonalNaiveDay:  func(T int) (float64, bool) { return at(T - dayShift) },
		SeasonalNaiveWeek: func(T int) (float64, bool) { return at(T - weekShift) },
		SeasonalMeanWeeks: func(T int) (float64, bool) {
			sum, n := 0.0, 0
			for k := 0; k < 4; k++ {
				if v, ok := at(T - weekShift - k*week); ok {
					sum += v
					n++
				}
			}
			return sum / float64(max(n, 1)), n > 0
		},
	}
}

func meanAbs(v []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += math.Abs(x)
			n++
		}
	}
	return sum / float64(max(n, 1))
}
