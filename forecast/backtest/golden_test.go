package backtest

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// updateGolden rewrites testdata/walk.golden from the forecaster as built: only when its figures
// are meant to change.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/walk.golden")

// goldenPath holds a digest of every forecast the walks below make, bit for bit.
var goldenPath = filepath.Join("testdata", "walk.golden")

// TestWalkGolden pins the forecaster's output bit for bit on every trace of testdata/traces: every
// forecast of a walk over every origin at the backtest's horizons and steps (point, upper,
// model, period, fallback and shares, as float bits), the backtest's Result, the replay of the
// traces replayed by the benchmarks, and one controller cycle (Predict) from the last four weeks
// of each trace. Work done to make the forecaster cheaper must not move a single bit of it;
// a change meant to move the figures rewrites the golden with -update-golden.
func TestWalkGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("walks forward through every trace")
	}
	var lines []string
	for _, set := range []string{"tune", "eval"} {
		for _, name := range traceSet(t, set) {
			s := loadTrace(t, name)
			for _, h := range []time.Duration{forecast.Day, time.Hour, 15 * time.Minute} {
				if h < s.Step {
					continue
				}
				lines = append(lines, goldenWalk(t, name, s, h, forecast.Options{}))
				// Scored with the experts alone and day by day too: the run's digest is of the
				// Result as it was before Result.Experts and Result.Days (without the fields), so
				// it also pins that scoring them changes no other figure.
				r, err := Run(name, s, Config{Horizon: h, Experts: true, Days: true})
				if err != nil {
					lines = append(lines, fmt.Sprintf("run %s h=%s error %v", name, h, err))
					continue
				}
				experts := r.Experts
				r.Experts, r.Days = nil, nil
				lines = append(lines, fmt.Sprintf("run %s h=%s %s", name, h, digestString(strings.TrimSuffix(fmt.Sprintf("%+v", r), " Experts:[] Days:[]}")+"}")))
				lines = append(lines, fmt.Sprintf("experts %s h=%s %s", name, h, digestString(fmt.Sprintf("%+v", experts))))
			}
			lines = append(lines, goldenPredict(t, name, s))
		}
	}
	// Options away from the defaults: a forced period, a shorter refit, another weekend.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tune/nab/nyc_taxi.csv", "tune/crane-dsp/input2.csv"} {
		s := loadTrace(t, name)
		for _, o := range []forecast.Options{{Period: forecast.PeriodDay}, {Period: forecast.PeriodWeek}, {RefitEvery: 6 * time.Hour, Location: ny}} {
			lines = append(lines, goldenWalk(t, name, s, time.Hour, o))
		}
	}
	for _, tt := range replayTargets {
		r, err := Replay(tt.trace, loadTrace(t, tt.trace), ReplayConfig{PerGPU: tt.perGPU, Boot: 5 * time.Minute})
		if err != nil {
			t.Fatalf("replaying %s: %v", tt.trace, err)
		}
		lines = append(lines, fmt.Sprintf("replay %s %s", tt.trace, digestString(fmt.Sprintf("%+v", r))))
	}
	got := strings.Join(lines, "\n") + "\n"
	if *updateGolden {
		if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("reading the golden (go test -run TestWalkGolden -update-golden writes it): %v", err)
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(wantLines) != len(lines) {
		t.Errorf("%d golden lines, want %d", len(lines), len(wantLines))
	}
	for i := range min(len(lines), len(wantLines)) {
		if lines[i] != wantLines[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], wantLines[i])
		}
	}
}

// goldenWalk digests every forecast of a walker over s at horizon h, on the grid the backtest
// scores it at, from every origin in order.
func goldenWalk(t *testing.T, name string, s forecast.Series, h time.Duration, opts forecast.Options) string {
	t.Helper()
	step := DefaultStep(h, s.Step)
	rs, err := s.Resample(step)
	if err != nil {
		t.Fatalf("%s: resampling to %s: %v", name, step, err)
	}
	opts.Horizon = h
	w, err := forecast.NewWalker(rs, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	d, n := sha256.New(), 0
	for o := 0; o+w.HorizonSteps() < rs.Len(); o++ {
		fc, err := w.At(o)
		if err != nil {
			fmt.Fprintf(d, "%d error %v\n", o, err)
			continue
		}
		digestForecast(d, fc)
		n++
	}
	return fmt.Sprintf("walk %s h=%s step=%s opts=%s %d %x", name, h, step, optsLabel(opts), n, d.Sum(nil))
}

// goldenPredict digests one controller cycle: a forecast 15 minutes ahead from the last four
// weeks of s on a five-minute grid (its own when coarser), as BenchmarkPredict makes.
func goldenPredict(t *testing.T, name string, s forecast.Series) string {
	t.Helper()
	if s.Step < 5*time.Minute {
		var err error
		if s, err = s.Resample(5 * time.Minute); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	from := max(0, s.Len()-s.Steps(4*forecast.Week))
	hist := forecast.Series{Start: s.TimeAt(from), Step: s.Step, Values: s.Values[from:]}
	d := sha256.New()
	fc, err := forecast.Predict(hist, hist.End(), forecast.Options{Horizon: max(15*time.Minute, s.Step)})
	if err != nil {
		fmt.Fprintf(d, "error %v\n", err)
	} else {
		digestForecast(d, fc)
	}
	return fmt.Sprintf("predict %s %x", name, d.Sum(nil))
}

func optsLabel(o forecast.Options) string {
	loc := ""
	if o.Location != nil {
		loc = o.Location.String()
	}
	return fmt.Sprintf("%s/%s/%s", o.Period, o.RefitEvery, loc)
}

// digestForecast writes every field of fc to d, floats as their bits.
func digestForecast(d hash.Hash, fc forecast.Forecast) {
	w := bufio.NewWriter(d)
	defer w.Flush()
	var b [8]byte
	bits := func(x float64) {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		w.Write(b[:])
	}
	fmt.Fprintf(w, "%d %d %s %s %q", fc.Origin.UnixNano(), fc.Target.UnixNano(), fc.Model, fc.Period, fc.Fallback)
	bits(fc.Point)
	bits(fc.Upper)
	for _, sh := range fc.Shares {
		w.WriteString(sh.Model)
		bits(sh.Weight)
	}
	w.WriteByte('\n')
}

func digestString(s string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(s)))
}
