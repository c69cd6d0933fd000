package forecast

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestReadCSVBadInput(t *testing.T) {
	tests := []struct {
		name     string
		csv      string
		opts     CSVOptions
		wantLine int
		wantErr  error
	}{
		{"non-numeric value", "ts,value\n60,1\n120,abc\n", CSVOptions{}, 3, ErrNotNumber},
		{"bad timestamp", "ts,value\n60,1\nyesterday,2\n", CSVOptions{}, 3, ErrBadTime},
		{"backwards", "ts,value\n60,1\n180,2\n120,3\n", CSVOptions{}, 4, ErrNotMonotonic},
		{"duplicate", "ts,value\n60,1\n60,2\n", CSVOptions{}, 3, ErrDuplicate},
		{"missing column", "ts,value\n60,1\n", CSVOptions{ValueCol: "load"}, 1, ErrNoColumn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tt.csv), tt.opts)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tt.wantLine || !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadCSV error = %v, want line %d and %v", err, tt.wantLine, tt.wantErr)
			}
		})
	}
}

func TestReadCSVRepairAndGaps(t *testing.T) {
	t0 := time.Unix(60, 0).UTC()
	tests := []struct {
		name string
		csv  string
		opts CSVOptions
		want []float64 // on a one-minute grid from t0
	}{
		// 180 is missing: a gap (NaN), not a zero. An empty cell is a gap too.
		{"gap", "ts,value\n60,1\n120,\n240,4\n", CSVOptions{}, []float64{1, math.NaN(), math.NaN(), 4}},
		// Repair sorts and averages the duplicate 120s: (2+4)/2 = 3.
		{"repair", "ts,value\n120,2\n60,1\n120,4\n180,5\n", CSVOptions{Repair: true}, []float64{1, 3, 5}},
		{"named columns and layout", "when,load,x\n1970-01-01 00:01:00,1,9\n1970-01-01 00:02:00,2,9\n", CSVOptions{TimeCol: "when", ValueCol: "load"}, []float64{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, err := ReadCSV(strings.NewReader(tt.csv), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSeries(samples, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Start.Equal(t0) {
				t.Errorf("start = %s, want %s", s.Start, t0)
			}
			if diff := cmp.Diff(tt.want, s.Values, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"15m", 15 * time.Minute, false},
		{"1d", Day, false},
		{"1d12h", 36 * time.Hour, false},
		{"2w", 2 * Week, false},
		{"xd", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s, error %t", tt.in, got, err, tt.want, tt.err)
		}
	}
}
