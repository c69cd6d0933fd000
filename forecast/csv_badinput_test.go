package forecast

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestReadCSVBadInputNamesColumn: errors name the line and the column by its header (the header
// record was reused by the csv reader, so errors named the cell of the failing row instead), and a
// broken quote that runs to the end of the file is an error, not a panic.
func TestReadCSVBadInputNamesColumn(t *testing.T) {
	cases := []struct{ name, csv, want string }{
		{"header named, not the cell", "ts,value\n60,1\n120,abc\n", `line 3: column "value": "abc": not a number`},
		{"time column named", "time,load\n60,1\nyesterday,2\n", `line 3: column "time": "yesterday"`},
		{"short row names the missing column", "ts,value\n60,1\n120\n", `line 3: column "value": the row has 1 fields`},
		{"stray quote to the end", "ts,value\n60,1\n\"120,2\n180,3\n", "line 3: the record starting here breaks on line 4"},
		{"bare quote", "ts,value\n60,1\n120,2\"\n", `line 3: byte 6: bare " in non-quoted-field`},
		{"Unix seconds beyond year 9999", "ts,value\n1e300,1\n", "1e300 Unix seconds is outside years 1..9999"},
		{"NaN time", "ts,value\nNaN,1\n", "outside years 1..9999"},
		{"infinite value", "ts,value\n60,Inf\n", "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.csv), CSVOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestReadCSVStripsBOM(t *testing.T) {
	s, err := ReadCSV(strings.NewReader("\ufefftimestamp,value\n60,1\n"), CSVOptions{TimeCol: "timestamp"})
	if err != nil || len(s) != 1 {
		t.Fatalf("%v %v", s, err)
	}
}

// TestNewSeriesBoundsGrid: samples far apart at the step of two close ones would ask for billions
// of grid points (gigabytes); that is an error naming the span.
func TestNewSeriesBoundsGrid(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, last := range []time.Time{t0.Add(MaxPoints * time.Second), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, err := NewSeries([]Sample{{t0, 1}, {t0.Add(time.Second), 2}, {last, 3}}, time.Second)
		if err == nil || !strings.Contains(err.Error(), "grid points") {
			t.Errorf("last sample %s: error %v", last, err)
		}
	}
	var weeks []Sample
	for i := 0; i < 28*24*60; i++ {
		weeks = append(weeks, Sample{t0.Add(time.Duration(i) * time.Minute), 1})
	}
	if _, err := NewSeries(weeks, time.Minute); err != nil {
		t.Errorf("four weeks at one point a minute refused: %v", err)
	}
	// One sample every 50 grid points, as a series at a step finer than its scrape: kept.
	var coarse []Sample
	for i := 0; i < 1000; i++ {
		coarse = append(coarse, Sample{t0.Add(time.Duration(50*i) * time.Second), 1})
	}
	if _, err := NewSeries(coarse, time.Second); err != nil {
		t.Errorf("a sample every 50 points refused: %v", err)
	}
}

// TestNewSeriesRefusesMostlyGap: a timestamp with a digit lost (fuzzing found it: 628641020
// among 1628641080, 1628641140, …) put 28 samples on a grid of 16.7 million points, 256 MiB
// of gap; it is an error naming the gap.
func TestNewSeriesRefusesMostlyGap(t *testing.T) {
	samples, err := ReadCSV(strings.NewReader("value,\n628641020,61.1\n1628641080,61.0\n1628641140,62.0\n1628641200,61.2\n"), CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewSeries(samples, InferStep(samples))
	if err == nil || !strings.Contains(err.Error(), "grid points") {
		t.Errorf("error %v, want the grid bound", err)
	}
	t0 := time.Unix(1628641080, 0)
	samples = []Sample{{t0.Add(-24 * time.Hour), 1}}
	for i := 0; i < 100; i++ {
		samples = append(samples, Sample{t0.Add(time.Duration(i) * time.Minute), 1})
	}
	_, err = NewSeries(samples, time.Second)
	if err == nil || !strings.Contains(err.Error(), "the largest gap, 24h0m0s, is between sample 0 at 2021-08-10T00:18:00Z and sample 1") {
		t.Errorf("error %v, want the gap named", err)
	}
}

func TestOptionsRejectNaNMargin(t *testing.T) {
	if _, err := (Options{Margin: math.NaN()}).withDefaults(); err == nil {
		t.Error("margin NaN accepted")
	}
}

// FuzzReadCSV checks that reading a trace and placing it on its grid never panics or allocates
// without bound, and that an accepted trace is ordered, has no infinite values and builds a
// series no larger than MaxPoints.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("ts,value\n60,1\n120,\n240,4\n"), false)
	f.Add([]byte("ts,value\n120,2\n60,1\n120,4\n180,5\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, repair bool) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		samples, err := ReadCSV(strings.NewReader(string(data)), CSVOptions{Repair: repair})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) && !strings.HasPrefix(err.Error(), "reading the header") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for i, s := range samples {
			if math.IsInf(s.Value, 0) {
				t.Fatalf("sample %d: infinite value accepted", i)
			}
			if i > 0 && !s.Time.After(samples[i-1].Time) {
				t.Fatalf("sample %d at %s is not after %s", i, s.Time, samples[i-1].Time)
			}
		}
		if len(samples) == 0 {
			return
		}
		series, err := NewSeries(samples, InferStep(samples))
		if err != nil {
			return
		}
		if series.Len() > MaxPoints || series.Len() < 1 {
			t.Fatalf("series of %d points", series.Len())
		}
	})
}
