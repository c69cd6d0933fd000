package synth

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tiler-dev/tiler/forecast"
)

var update = flag.Bool("update", false, "rewrite the synthetic traces of testdata/traces/{tune,eval}/synth")

// seeds are the seeds of each set: the forecaster's constants are fitted on tune only, and eval
// holds series of the same families it has never been run on while they were chosen.
var seeds = []struct {
	set   string
	seeds []uint64
}{
	{"tune", []uint64{1, 2, 3}},
	{"eval", []uint64{101, 102}},
}

// TestTraces checks that the committed synthetic traces are what the generator writes, so they
// can be regenerated and are not edited by hand; with -update (go generate) it rewrites them.
func TestTraces(t *testing.T) {
	for _, set := range seeds {
		dir := filepath.Join("..", "..", "testdata", "traces", set.set, "synth")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range Families {
			for _, seed := range set.seeds {
				path := filepath.Join(dir, fmt.Sprintf("%s-%d.csv", f, seed))
				s, err := Generate(f, seed)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := WriteCSV(&buf, s); err != nil {
					t.Fatal(err)
				}
				if *update {
					if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go generate ./forecast/synth writes it)", err)
				}
				if !bytes.Equal(got, buf.Bytes()) {
					t.Errorf("%s differs from what Generate(%s, %d) writes: regenerate with go generate ./forecast/synth", path, f, seed)
				}
			}
		}
	}
}

// TestRoundTrip reads a written series back through the forecaster's CSV reader: the same grid,
// the gaps where they were, the values to five significant digits.
func TestRoundTrip(t *testing.T) {
	for _, f := range Families {
		s, err := Generate(f, 7)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, s); err != nil {
			t.Fatal(err)
		}
		samples, err := forecast.ReadCSV(&buf, forecast.CSVOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, err := forecast.NewSeries(samples, forecast.InferStep(samples))
		if err != nil {
			t.Fatal(err)
		}
		// A trailing gap is not written, so the read series may be shorter.
		if !got.Start.Equal(s.Start) || got.Step != s.Step || got.Len() > s.Len() || got.Len() < s.Len()-s.Len()/10 {
			t.Fatalf("%s: read %s+%s×%d, wrote %s+%s×%d", f, got.Start, got.Step, got.Len(), s.Start, s.Step, s.Len())
		}
		for i, v := range got.Values {
			w := s.Values[i]
			if math.IsNaN(v) != math.IsNaN(w) || math.Abs(v-w) > 1e-4*math.Abs(w) {
				t.Fatalf("%s: point %d read %g, wrote %g", f, i, v, w)
			}
		}
	}
}

// TestFamilies checks that each family has the structure its doc promises, on several seeds.
func TestFamilies(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		for _, f := range Families {
			s, err := Generate(f, seed)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Generate(f, seed)
			for i := range s.Values {
				if v, w := s.Values[i], again.Values[i]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
					t.Fatalf("%s seed %d: point %d is %g then %g", f, seed, i, v, w)
				}
			}
			day := s.Steps(forecast.Day)
			acf := lagCorrelation(s.Values, day)
			switch f {
			case Drift:
				if s.Missing() != 0 {
					t.Errorf("%s seed %d: %d missing points, want none", f, seed, s.Missing())
				}
			case Gaps:
				if s.Missing() < 2*day {
					t.Errorf("%s seed %d: %d missing points, want at least two days (%d)", f, seed, s.Missing(), 2*day)
				}
			default:
				if s.Missing() != 0 {
					t.Errorf("%s seed %d: %d missing points, want none", f, seed, s.Missing())
				}
			}
			switch f {
			case Noisy:
				if acf > 0.8 {
					t.Errorf("%s seed %d: day-lag correlation %.2f, want the cycle buried in noise (≤ 0.8)", f, seed, acf)
				}
			case Drift:
			default:
				if acf < 0.5 {
					t.Errorf("%s seed %d: day-lag correlation %.2f, want a daily cycle (≥ 0.5)", f, seed, acf)
				}
			}
			for i, v := range s.Values {
				if v < 0 {
					t.Fatalf("%s seed %d: point %d is negative (%g)", f, seed, i, v)
				}
			}
		}
	}
	if _, err := Generate("sine", 1); err == nil {
		t.Error("Generate accepted an unknown family")
	}
}

// TestShiftShifts: in the Shift family, the mean of some week differs from the week before by
// at least 30 % after the first four weeks; in the Web family (noise and trend only) never by 20 %.
func TestShiftShifts(t *testing.T) {
	jump := func(s forecast.Series) float64 {
		day, week := s.Steps(forecast.Day), s.Steps(forecast.Week)
		best := 0.0
		for at := 28 * day; at+week <= s.Len(); at += day {
			a, b := mean(s.Values[at-week:at]), mean(s.Values[at:at+week])
			best = math.Max(best, math.Abs(math.Log(b/a)))
		}
		return best
	}
	for seed := uint64(1); seed <= 5; seed++ {
		sh, _ := Generate(Shift, seed)
		w, _ := Generate(Web, seed)
		if j := jump(sh); j < math.Log(1.3) {
			t.Errorf("Shift seed %d: largest change of a week's mean ×%.2f, want a level shift (≥ ×1.3)", seed, math.Exp(j))
		}
		if j := jump(w); j > math.Log(1.2) {
			t.Errorf("Web seed %d: largest change of a week's mean ×%.2f, want none (≤ ×1.2)", seed, math.Exp(j))
		}
	}
}

func mean(v []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	return sum / float64(n)
}

// lagCorrelation is the correlation of v with itself lag points later, over pairs observed in both.
func lagCorrelation(v []float64, lag int) float64 {
	var a, b []float64
	for i := 0; i+lag < len(v); i++ {
		if !math.IsNaN(v[i]) && !math.IsNaN(v[i+lag]) {
			a, b = append(a, v[i]), append(b, v[i+lag])
		}
	}
	ma, mb := mean(a), mean(b)
	var num, da, db float64
	for i := range a {
		num += (a[i] - ma) * (b[i] - mb)
		da += (a[i] - ma) * (a[i] - ma)
		db += (b[i] - mb) * (b[i] - mb)
	}
	return num / math.Sqrt(da*db)
}
