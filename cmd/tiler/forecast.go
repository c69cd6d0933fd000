package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/forecast/backtest"
)

func init() { register(newForecastCmd) }

// newForecastCmd is `tiler forecast`: offline evaluation of the forecaster on CSV traces.
func newForecastCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forecast",
		Short: "Evaluate the capacity forecaster on recorded traces (backtest, replay)",
	}
	cmd.AddCommand(newBacktestCmd(), newReplayCmd())
	return cmd
}

// traceFlags are the flags shared by the subcommands that read a CSV trace.
type traceFlags struct {
	csv, timeCol, valueCol, output string
	repair                         bool
	margin                         float64
	timeZone                       string
}

func (f *traceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.csv, "csv", "", "CSV trace with a header line (required)")
	fs.StringVar(&f.timeCol, "time-col", "", "time column (default: timestamp, ts or time, else the first)")
	fs.StringVar(&f.valueCol, "value-col", "", "value column (default: value, else the second)")
	fs.BoolVar(&f.repair, "repair", false, "sort rows by time and average duplicate timestamps instead of failing")
	fs.Float64Var(&f.margin, "margin", forecast.DefaultMargin, "quantile of past relative errors the upper forecast covers")
	fs.StringVar(&f.timeZone, "time-zone", "UTC", "IANA time zone of the workload's week (the weekday/weekend model's weekend, until the load's weeks show another)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

// options are the forecaster options of the flags.
func (f *traceFlags) options() (forecast.Options, error) {
	if !(f.margin >= 0.5 && f.margin < 1) { // NaN fails both comparisons
		return forecast.Options{}, fmt.Errorf("--margin %g: must be a quantile in [0.5, 1)", f.margin)
	}
	loc, err := time.LoadLocation(f.timeZone)
	if err != nil {
		return forecast.Options{}, fmt.Errorf("--time-zone %q: not an IANA time zone name (e.g. Europe/Berlin)", f.timeZone)
	}
	return forecast.Options{Margin: f.margin, Location: loc}, nil
}

// load reads the trace onto its natural grid.
func (f *traceFlags) load() (string, forecast.Series, error) {
	if f.csv == "" {
		return "", forecast.Series{}, fmt.Errorf("--csv: must name a trace file")
	}
	if f.output != "text" && f.output != "json" {
		return "", forecast.Series{}, fmt.Errorf("--output %q: must be text or json", f.output)
	}
	file, err := os.Open(f.csv)
	if err != nil {
		return "", forecast.Series{}, fmt.Errorf("opening the trace: %w", err)
	}
	defer file.Close()
	samples, err := forecast.ReadCSV(file, forecast.CSVOptions{TimeCol: f.timeCol, ValueCol: f.valueCol, Repair: f.repair})
	if err != nil {
		return "", forecast.Series{}, fmt.Errorf("%s: %w", f.csv, err)
	}
	s, err := forecast.NewSeries(samples, forecast.InferStep(samples))
	if err != nil {
		return "", forecast.Series{}, fmt.Errorf("%s: %w", f.csv, err)
	}
	return seriesName(f.csv), s, nil
}

// seriesName is the trace's path relative to its traces directory when it has one, e.g.
// "tune/nab/nyc_taxi.csv", else the base name.
func seriesName(path string) string {
	p := filepath.ToSlash(path)
	if i := strings.LastIndex(p, "traces/"); i >= 0 {
		return p[i+len("traces/"):]
	}
	return filepath.Base(path)
}

func newBacktestCmd() *cobra.Command {
	var tf traceFlags
	var horizon, step time.Duration
	var experts, days bool
	cmd := &cobra.Command{
		Use:   "backtest --csv FILE --horizon 1h|15m|1d [--step S] [--experts] [--days] [-o json]",
		Short: "Walk forward through a trace and score the forecaster against seasonal-naive baselines",
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, s, err := tf.load()
			if err != nil {
				return err
			}
			opts, err := tf.options()
			if err != nil {
				return err
			}
			if horizon <= 0 || step < 0 {
				return fmt.Errorf("--horizon %s, --step %s: the horizon must be positive and the step not negative", horizon, step)
			}
			if span := time.Duration(s.Len()) * s.Step; span <= horizon {
				return fmt.Errorf("%s: the trace spans %s (%d points of %s), not more than --horizon %s: nothing can be forecast and scored",
					tf.csv, span, s.Len(), s.Step, horizon)
			}
			res, err := backtest.Run(name, s, backtest.Config{Horizon: horizon, Step: step, Options: opts, Experts: experts, Days: days})
			if err != nil {
				return fmt.Errorf("backtesting %s: %w", name, err)
			}
			return render(cmd.OutOrStdout(), tf.output, res, backtestTable)
		},
	}
	tf.register(cmd.Flags())
	horizon = 24 * time.Hour
	cmd.Flags().Var((*durationFlag)(&horizon), "horizon", "how far ahead each forecast is made (15m, 1h, 1d, …)")
	cmd.Flags().Var((*durationFlag)(&step), "step", "scoring resolution (default: horizon/12 within [series step, 1h])")
	cmd.Flags().BoolVar(&experts, "experts", false, "also score every expert alone on the targets it forecast (which one would have served the series best, in hindsight)")
	cmd.Flags().BoolVar(&days, "days", false, "also score the forecaster against the best baseline day by day (which days it lost, and which expert carried each)")
	bindEnv(cmd, "TILER_FORECAST_")
	return cmd
}

func newReplayCmd() *cobra.Command {
	var tf traceFlags
	var cfg backtest.ReplayConfig
	cmd := &cobra.Command{
		Use:   "replay --csv FILE --per-gpu N --boot 5m [--lead 15m] [-o json]",
		Short: "Replay a trace as request rate through a booting node pool: reactive versus forecast-driven scaling",
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, s, err := tf.load()
			if err != nil {
				return err
			}
			if cfg.Options, err = tf.options(); err != nil {
				return err
			}
			if !(cfg.PerGPU > 0) || math.IsInf(cfg.PerGPU, 0) {
				return fmt.Errorf("--per-gpu %g: must be a positive number, the load one GPU serves (perGPU)", cfg.PerGPU)
			}
			res, err := backtest.Replay(name, s, cfg)
			if err != nil {
				return fmt.Errorf("replaying %s: %w", name, err)
			}
			return render(cmd.OutOrStdout(), tf.output, res, replayTable)
		},
	}
	tf.register(cmd.Flags())
	cmd.Flags().Float64Var(&cfg.PerGPU, "per-gpu", 0, "load one GPU serves, in the trace's units (required)")
	cfg.Boot, cfg.ScaleDownDelay, cfg.QueueTarget = 5*time.Minute, backtest.DefaultScaleDownDelay, backtest.DefaultQueueTarget
	cmd.Flags().Var((*durationFlag)(&cfg.Boot), "boot", "time from ordering a node to its GPU serving")
	cmd.Flags().Var((*durationFlag)(&cfg.Lead), "lead", "how far ahead the forecast-driven policy looks (default: boot + 10m)")
	cmd.Flags().Var((*durationFlag)(&cfg.ScaleDownDelay), "scale-down-delay", "how long unneeded capacity stays")
	cmd.Flags().Var((*durationFlag)(&cfg.QueueTarget), "queue-target", "work each GPU's queue may hold, in seconds of its service, before the queue signal asks for capacity")
	cmd.Flags().BoolVar(&cfg.Clairvoyant, "clairvoyant", true, "also compute the clairvoyant bound (36 more replays)")
	bindEnv(cmd, "TILER_FORECAST_")
	return cmd
}

// durationFlag is a duration flag that also takes days and weeks (forecast.ParseDuration).
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := forecast.ParseDuration(s)
	*d = durationFlag(v)
	return err
}

func (d *durationFlag) Type() string { return "duration" }

// bindEnv gives every flag of cmd an environment-variable twin, PREFIX + the flag name in upper
// case with dashes as underscores (TILER_FORECAST_PER_GPU); a flag on the command line wins and
// an empty variable counts as unset.
func bindEnv(cmd *cobra.Command, prefix string) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		var err error
		c.Flags().VisitAll(func(f *pflag.Flag) {
			env := prefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			if v := os.Getenv(env); v != "" && !f.Changed && err == nil {
				if e := f.Value.Set(v); e != nil {
					err = fmt.Errorf("%s=%q: %w", env, v, e)
				}
			}
		})
		if err == nil && prev != nil {
			err = prev(c, args)
		}
		return err
	}
}

func render[T any](w io.Writer, format string, v T, table func(io.Writer, T)) error {
	if format == "json" {
		// JSON has no NaN or infinity: name the figure rather than fail in the encoder with
		// "unsupported value".
		if path, x, ok := nonFinite(reflect.ValueOf(v), ""); ok {
			return fmt.Errorf("the result's %s is %v, which JSON cannot carry (a trace of zeros has no relative error); use -o text", path, x)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw, v)
	return tw.Flush()
}

func backtestTable(w io.Writer, r backtest.Result) {
	fmt.Fprintf(w, "series\t%s\nhorizon\t%s\nstep\t%s\nmodel\t%s\ntargets\t%d from %s\n", r.Series, r.Horizon, r.Step, r.Model, r.Targets, r.From.Format(time.RFC3339))
	fmt.Fprintf(w, "WAPE\t%.2f %%\nMAPE\t%.2f %%\nupper coverage\t%.1f %%\n", 100*r.WAPE, 100*r.MAPE, 100*r.Coverage)
	for _, name := range []string{backtest.SeasonalNaiveDay, backtest.SeasonalNaiveWeek, backtest.SeasonalMeanWeeks} {
		if v, ok := r.Baselines[name]; ok {
			fmt.Fprintf(w, "baseline %s\t%.2f %%\n", name, 100*v)
		}
	}
	if len(r.Baselines) == 0 {
		// A ratio of 0.000 would read as a perfect forecaster.
		fmt.Fprintf(w, "WAPE / best baseline\tn/a (no baseline: the series is too short for a seasonal-naive forecast)\n")
	} else {
		fmt.Fprintf(w, "WAPE / best baseline\t%.3f (%.0f %% interval %.3f–%.3f: bootstrap, %d resamples of %d-target blocks)\n",
			r.Ratio, 100*r.RatioInterval.Level, r.RatioInterval.Low, r.RatioInterval.High, r.RatioInterval.Resamples, r.RatioInterval.BlockTargets)
	}
	fmt.Fprintf(w, "fell back\t%.1f %% of forecasts (to a baseline or the week's median the mix did not beat, or to same time yesterday after a level break)\n", 100*r.FellBack)
	shareTable(w, r)
	expertTable(w, r)
	dayTable(w, r)
	fmt.Fprintf(w, "verdict\t%s\n", r.Verdict)
}

// dayTable prints the forecaster against the best baseline day by day (backtest --days), the
// days it lost marked.
func dayTable(w io.Writer, r backtest.Result) {
	if len(r.Days) == 0 {
		return
	}
	fmt.Fprintf(w, "by day\ttargets\tWAPE\t%s\t/ baseline\tlead\tfell back\n", r.BestBaselineName)
	for _, d := range r.Days {
		ratio := "n/a"
		if d.Ratio != nil {
			ratio = fmt.Sprintf("%.3f", *d.Ratio)
			if *d.Ratio > 1 {
				ratio += " lost"
			}
		}
		fmt.Fprintf(w, "  %s\t%d\t%.2f %%\t%.2f %%\t%s\t%s\t%.0f %%\n", d.Day.Format("2006-01-02 Mon"), d.Targets, 100*d.WAPE, 100*d.Baseline, ratio, d.Lead, 100*d.FellBack)
	}
}

// expertTable prints every expert scored alone (backtest --experts), best first: what the
// forecast would have been had that expert made it wherever it could.
func expertTable(w io.Writer, r backtest.Result) {
	if len(r.Experts) == 0 {
		return
	}
	fmt.Fprintf(w, "experts alone\ttargets\tWAPE\t/ best baseline\n")
	for _, e := range r.Experts {
		ratio := "n/a"
		if len(r.Baselines) > 0 {
			ratio = fmt.Sprintf("%.3f", e.Ratio)
		}
		fmt.Fprintf(w, "  %s\t%.0f %%\t%.2f %%\t%s\n", e.Model, 100*e.Share, 100*e.WAPE, ratio)
	}
}

// minShownShare is the smallest overall share an expert needs to get a row in the text table.
const minShownShare = 0.005

// shareTable prints which expert carried the forecast: one row per expert with its overall
// share, then its share in each period of SharesOverTime.
func shareTable(w io.Writer, r backtest.Result) {
	names := make([]string, 0, len(r.Shares))
	for m, v := range r.Shares {
		if v >= minShownShare {
			names = append(names, m)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if r.Shares[names[i]] != r.Shares[names[j]] {
			return r.Shares[names[i]] > r.Shares[names[j]]
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(w, "expert shares\tall")
	for _, p := range r.SharesOverTime {
		fmt.Fprintf(w, "\tfrom %s", p.From.Format("01-02"))
	}
	fmt.Fprintln(w)
	for _, m := range names {
		fmt.Fprintf(w, "  %s\t%.0f %%", m, 100*r.Shares[m])
		for _, p := range r.SharesOverTime {
			fmt.Fprintf(w, "\t%.0f %%", 100*p.Shares[m])
		}
		fmt.Fprintln(w)
	}
}

// nonFinite returns the JSON path and value of the first NaN or infinite float in v (struct
// fields by their json names, map values by key, slice elements by index).
func nonFinite(v reflect.Value, path string) (string, float64, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
			return path, x, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if p, x, ok := nonFinite(v.Field(i), strings.TrimPrefix(path+"."+name, ".")); ok {
				return p, x, true
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if p, x, ok := nonFinite(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); ok {
				return p, x, true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if p, x, ok := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, x, true
			}
		}
	}
	return "", 0, false
}

func replayTable(w io.Writer, r backtest.ReplayResult) {
	fmt.Fprintf(w, "series\t%s\nper GPU\t%g\nboot\t%s\nlead\t%s\n", r.Series, r.PerGPU, r.Boot, r.Lead)
	fmt.Fprintf(w, "\treactive\tforecast\tforecast+queue\n")
	a, b, c := r.Reactive, r.Forecast, r.ForecastQueue
	fmt.Fprintf(w, "under-provisioned GPU-minutes\t%.0f\t%.0f\t%.0f\n", a.UnderGPUMinutes, b.UnderGPUMinutes, c.UnderGPUMinutes)
	fmt.Fprintf(w, "GPU-hours\t%.1f\t%.1f\t%.1f\n", a.GPUHours, b.GPUHours, c.GPUHours)
	fmt.Fprintf(w, "idle GPU-hours\t%.1f\t%.1f\t%.1f\n", a.IdleGPUHours, b.IdleGPUHours, c.IdleGPUHours)
	fmt.Fprintf(w, "peak GPUs\t%d\t%d\t%d\n", a.PeakGPUs, b.PeakGPUs, c.PeakGPUs)
	fmt.Fprintf(w, "mean wait in queue\t%.1f s\t%.1f s\t%.1f s\n", a.MeanWaitSeconds, b.MeanWaitSeconds, c.MeanWaitSeconds)
	fmt.Fprintf(w, "under-provisioning reduction\t\t%.1f %%\t%.1f %%\n", 100*r.UnderReduction, 100*r.QueueUnderReduction)
	fmt.Fprintf(w, "GPU-hours increase\t\t%+.1f %%\t%+.1f %%\n", 100*r.GPUHoursIncrease, 100*r.QueueGPUHoursIncrease)
	fmt.Fprintf(w, "queue removes\t%.1f %% of the forecast's under-provisioned GPU-minutes\n", 100*r.QueueRemoves)
	if cb := r.Clairvoyant; cb != nil {
		if cb.TargetReached {
			fmt.Fprintf(w, "clairvoyant bound\t%+.1f %% GPU-hours cut the shortfall by %.0f %% (the target restated for this trace)\n", 100*cb.TargetIncrease, 100*cb.TargetReduction)
		} else {
			fmt.Fprintf(w, "clairvoyant bound\tno clairvoyant policy cuts the shortfall by %.0f %%: the target is beyond this trace\n", 100*cb.TargetReduction)
		}
		if cb.Reached {
			fmt.Fprintf(w, "\t%+.1f %% GPU-hours cut it by %.1f %% as the forecast does: the forecast pays %.3f× those GPU-hours\n", 100*cb.Increase, 100*cb.Reduction, cb.Ratio)
		}
	}
}
