package backtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// Baseline names used as keys of Result.Baselines: the forecaster's baseline experts are the
// same forecasts under the same names, computed by it independently of the scoring here.
const (
	// SeasonalNaiveDay repeats the value one day (or the first whole number of days ≥ the horizon)
	// before the target.
	SeasonalNaiveDay = forecast.BaselineNaiveDay
	// SeasonalNaiveWeek repeats the value one week before the target.
	SeasonalNaiveWeek = forecast.BaselineNaiveWeek
	// SeasonalMeanWeeks averages the same time of week 1–4 weeks before the target (as many as exist).
	SeasonalMeanWeeks = forecast.BaselineMeanWeeks
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
	// Experts also scores every expert alone on the targets it forecast (Result.Experts).
	Experts bool
	// Days also scores the forecaster against the best baseline day by day (Result.Days).
	Days bool
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
	// Shares is the mean weight each expert carried in the scored forecasts (forecast.Share),
	// summing to 1: how much of the forecast each one made.
	Shares map[string]float64 `json:"shares"`
	// SharesOverTime splits Shares by period of the scored span (weeks, grouped into at most
	// maxSharePeriods), so a user sees which expert carried the forecast when.
	SharesOverTime []SharePeriod `json:"sharesOverTime"`
	// FellBack is the fraction of scored forecasts that were one forecast alone instead of the
	// mix: a baseline (or, on a load at its floor, the week's median: forecast.FloorMedian) the
	// mix had not beaten, or the forecast a level break is followed with — same time yesterday,
	// re-shaped by the weekday/weekend profile on a load with a cycle (forecast.Forecast.Fallback
	// says which).
	FellBack float64 `json:"fellBack"`
	// RatioInterval is the bootstrap interval of Ratio.
	RatioInterval Interval `json:"ratioInterval"`
	// BestBaselineName names the baseline of BestBaseline.
	BestBaselineName string `json:"bestBaselineName"`
	// Verdict says in one sentence whether the forecaster earns its keep on this series.
	Verdict string `json:"verdict"`
	// Experts scores each expert alone (Config.Experts; nil unless asked), best ratio first.
	Experts []ExpertScore `json:"experts,omitempty"`
	// Days scores the forecaster against the best baseline on each day of the scored span
	// (Config.Days; nil unless asked): which days it lost, and which expert carried each.
	Days []DayScore `json:"days,omitempty"`
}

// ExpertScore is one expert scored alone: its forecasts as the mix read them
// (forecast.Walker.Experts), on the scored targets it forecast.
type ExpertScore struct {
	// Model names the expert as forecast.Forecast.Model does.
	Model string `json:"model"`
	// Targets is how many scored targets it forecast, Share their fraction of all.
	Targets int     `json:"targets"`
	Share   float64 `json:"share"`
	// WAPE is its Σ|y−ŷ| / Σ|y| over those targets, and Ratio its Σ|y−ŷ| over the best
	// baseline's (BestBaselineName) on the same targets: what the forecast would have been, had
	// this expert alone made it where it could.
	WAPE  float64 `json:"wape"`
	Ratio float64 `json:"ratio"`
}

// SharePeriod is the experts' shares of the forecasts for the targets in [From, To).
type SharePeriod struct {
	From   time.Time          `json:"from"`
	To     time.Time          `json:"to"`
	Shares map[string]float64 `json:"shares"`
}

// Interval is a bootstrap confidence interval.
type Interval struct {
	// Low and High bound the interval at the given Level (0.95).
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
	// Resamples is the number of bootstrap resamples, BlockTargets the targets per block.
	Resamples    int `json:"resamples"`
	BlockTargets int `json:"blockTargets"`
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
	var ex *expertSums
	if cfg.Experts {
		ex = &expertSums{}
	}
	sc, err := score(rs, w, res.Models, ex)
	if err != nil {
		return Result{}, err
	}
	sc.fill(&res, rs)
	if cfg.Days {
		res.Days = sc.days(rs, res.BestBaselineName, opts.Location)
	}
	if ex != nil {
		res.Experts = ex.scores(sc, res.BestBaselineName)
	}
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
	// The baselines scored (those with a value at the first target), in name order, with their
	// summed absolute errors.
	baseNames []string
	baseSum   []float64
	// Per scored target, in order: its index, the forecaster's and each baseline's absolute
	// error (for the bootstrap; baseErr[i] is baseNames[i]'s), and the experts' shares.
	targets  []int
	modelErr []float64
	baseErr  [][]float64
	shares   [][]forecast.Share
	fellBack int
	// fell says, per scored target, whether its forecast was a fallback alone (fellBack counts
	// them).
	fell []bool
}

func score(s forecast.Series, w *forecast.Walker, models map[string]int, ex *expertSums) (*scores, error) {
	h := w.HorizonSteps()
	sc := &scores{from: max(warmUp(s), h)}
	var applicable []baseline // the baselines with a value at the first target, in name order
	for name, f := range baselineFuncs(s, h) {
		if _, ok := f(sc.from); ok {
			applicable = append(applicable, baseline{name, f})
		}
	}
	slices.SortFunc(applicable, func(a, b baseline) int { return strings.Compare(a.name, b.name) })
	for _, b := range applicable {
		sc.baseNames = append(sc.baseNames, b.name)
	}
	sc.baseSum, sc.baseErr = make([]float64, len(applicable)), make([][]float64, len(applicable))
	vals := make([]float64, len(applicable))
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
		if !sc.baselinesAt(applicable, vals, T, y) {
			continue
		}
		models[fc.Model]++
		sc.add(y, fc, mean)
		sc.targets = append(sc.targets, T)
		sc.shares = append(sc.shares, fc.Shares)
		if ex != nil {
			if err := ex.add(w, T-h, y, sc); err != nil {
				return nil, err
			}
		}
		fell := len(fc.Shares) == 1 && (strings.HasPrefix(fc.Model, "baseline/") || strings.HasPrefix(fc.Model, "reshaped/") || fc.Model == forecast.FloorMedian) && fc.Fallback != ""
		if fell {
			sc.fellBack++
		}
		sc.fell = append(sc.fell, fell)
	}
	if sc.n == 0 {
		return nil, fmt.Errorf("no target could be scored: the series is too short or too sparse for a %d-step horizon", h)
	}
	return sc, nil
}

// baselinesAt adds every applicable baseline's error at T (vals holds their values meanwhile);
// it skips the target (for all methods) when one of them has no value there, so all figures
// share the same targets.
func (sc *scores) baselinesAt(baselines []baseline, vals []float64, T int, y float64) bool {
	for i, b := range baselines {
		v, ok := b.f(T)
		if !ok {
			return false
		}
		vals[i] = v
	}
	for i := range baselines {
		sc.baseSum[i] += math.Abs(y - vals[i])
		sc.baseErr[i] = append(sc.baseErr[i], math.Abs(y-vals[i]))
	}
	return true
}

// baseline is a named baseline forecast (baselineFuncs).
type baseline struct {
	name string
	f    func(int) (float64, bool)
}

func (sc *scores) add(y float64, fc forecast.Forecast, mean float64) {
	e := math.Abs(y - fc.Point)
	sc.modelErr = append(sc.modelErr, e)
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
	for i, name := range sc.baseNames {
		res.Baselines[name] = sc.baseSum[i] / sc.absY
		res.BestBaseline = math.Min(res.BestBaseline, res.Baselines[name])
	}
	if len(res.Baselines) > 0 {
		res.Ratio = res.WAPE / res.BestBaseline
		for name, v := range res.Baselines {
			if v == res.BestBaseline && (res.BestBaselineName == "" || name < res.BestBaselineName) {
				res.BestBaselineName = name
			}
		}
		res.RatioInterval = sc.bootstrap(s)
	} else {
		res.BestBaseline = 0
	}
	res.FellBack = float64(sc.fellBack) / float64(sc.n)
	res.Shares, res.SharesOverTime = sc.shareSummary(s)
	res.Verdict = verdict(*res)
	names := make([]string, 0, len(res.Models))
	for m := range res.Models {
		names = append(names, m)
	}
	// The most targets first, and of two with as many the first by name: the names come from a
	// map, so without the second key a tie named either, run to run.
	sort.Slice(names, func(i, j int) bool {
		if a, b := res.Models[names[i]], res.Models[names[j]]; a != b {
			return a > b
		}
		return names[i] < names[j]
	})
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

// maxSharePeriods bounds the rows of Result.SharesOverTime: a long trace's weeks are grouped.
const maxSharePeriods = 8

// shareSummary returns the experts' mean shares over all scored targets and per period of
// whole weeks from the first (grouped so there are at most maxSharePeriods).
func (sc *scores) shareSummary(s forecast.Series) (map[string]float64, []SharePeriod) {
	mean := func(from, to int) map[string]float64 {
		// Summed by expert in a slice (a dozen experts at most, looked up by name) and in the
		// order of the targets, as a map would be, and only then put in one.
		var names []string
		var sums []float64
		for _, sh := range sc.shares[from:to] {
			for _, x := range sh {
				i := slices.Index(names, x.Model)
				if i < 0 {
					i, names, sums = len(names), append(names, x.Model), append(sums, 0)
				}
				sums[i] += x.Weight / float64(to-from)
			}
		}
		out := make(map[string]float64, len(names))
		for i, name := range names {
			out[name] = sums[i]
		}
		return out
	}
	all := mean(0, len(sc.shares))
	week := s.Steps(forecast.Week)
	span := sc.targets[len(sc.targets)-1] - sc.from + 1
	weeks := (span + week - 1) / week
	per := (weeks + maxSharePeriods - 1) / maxSharePeriods * week // targets' index span of a period
	var periods []SharePeriod
	for i := 0; i < len(sc.targets); {
		start := sc.from + (sc.targets[i]-sc.from)/per*per
		j := i
		for j < len(sc.targets) && sc.targets[j] < start+per {
			j++
		}
		periods = append(periods, SharePeriod{From: s.TimeAt(start), To: s.TimeAt(min(start+per, s.Len())), Shares: mean(i, j)})
		i = j
	}
	return all, periods
}

// Bootstrap settings: the ratio's interval is the 2.5 and 97.5 percentiles of the ratio over
// bootstrapResamples resamples of the scored targets, drawn in blocks of a day's targets (or a
// tenth of them on a short trace, so there are ten blocks at least) with replacement — errors a
// day apart are close to independent, errors an hour apart are not — from a generator with a
// fixed seed, so the same trace always gives the same interval. Each resample takes the least
// WAPE of the baselines on it, as Ratio does on the whole.
const (
	bootstrapResamples = 2000
	bootstrapLevel     = 0.95
	bootstrapSeed      = 20
)

// bootstrap returns the interval of the ratio of the forecaster's WAPE to the best baseline's.
func (sc *scores) bootstrap(s forecast.Series) Interval {
	n := len(sc.modelErr)
	block := max(1, min(s.Steps(forecast.Day), (n+9)/10))
	nb := (n + block - 1) / block
	// Per block sums: the forecaster's errors and each baseline's; the actuals cancel in the
	// ratio of WAPEs (both divide by the same Σ|y| of the resample).
	names := sc.baseNames
	model := make([]float64, nb)
	base := make([][]float64, len(names))
	for j := range base {
		base[j] = make([]float64, nb)
	}
	for i := range n {
		model[i/block] += sc.modelErr[i]
		for j := range names {
			base[j][i/block] += sc.baseErr[j][i]
		}
	}
	r := rand.New(rand.NewPCG(bootstrapSeed, uint64(n)))
	ratios := make([]float64, bootstrapResamples)
	sums := make([]float64, len(names))
	for k := range ratios {
		m := 0.0
		clear(sums)
		for range nb {
			b := r.IntN(nb)
			m += model[b]
			for j := range names {
				sums[j] += base[j][b]
			}
		}
		best := math.Inf(1)
		for _, v := range sums {
			best = math.Min(best, v)
		}
		ratios[k] = m / math.Max(best, 1e-12)
	}
	sort.Float64s(ratios)
	tail := (1 - bootstrapLevel) / 2
	return Interval{
		Low: ratios[int(tail*float64(len(ratios)-1))], High: ratios[int((1-tail)*float64(len(ratios)-1)+0.5)],
		Level: bootstrapLevel, Resamples: bootstrapResamples, BlockTargets: block,
	}
}

// baselineWords says what each baseline forecasts, for the verdict.
var baselineWords = map[string]string{
	SeasonalNaiveDay:  "the same time yesterday",
	SeasonalNaiveWeek: "the same time last week",
	SeasonalMeanWeeks: "the mean of the same time over the last 1–4 weeks",
}

// verdict is the plain sentence of a result: whether the forecaster beats its best baseline,
// and whether the bootstrap interval says so with confidence.
func verdict(r Result) string {
	if r.BestBaselineName == "" {
		return "No baseline could be scored on this series, so nothing tells whether the forecaster earns its keep."
	}
	name := baselineWords[r.BestBaselineName]
	ci := fmt.Sprintf("ratio %.3f, %.0f %% interval %.3f–%.3f", r.Ratio, 100*r.RatioInterval.Level, r.RatioInterval.Low, r.RatioInterval.High)
	switch {
	case r.Ratio > 1 && r.RatioInterval.Low > 1:
		return fmt.Sprintf("The forecaster LOSES to its best baseline on this series: its WAPE is %.0f %% higher than forecasting %s (%s). Forecasting %s would do better here.", 100*(r.Ratio-1), name, ci, name)
	case r.Ratio > 1:
		return fmt.Sprintf("The forecaster loses to its best baseline on this series, though within the noise: its WAPE is %.1f %% higher than forecasting %s (%s).", 100*(r.Ratio-1), name, ci)
	case r.RatioInterval.High >= 1:
		return fmt.Sprintf("The forecaster is not clearly better than forecasting %s on this series: its WAPE is %.1f %% lower, within the noise (%s).", name, 100*(1-r.Ratio), ci)
	default:
		return fmt.Sprintf("The forecaster beats its best baseline, %s, by %.0f %% of WAPE on this series (%s).", name, 100*(1-r.Ratio), ci)
	}
}
