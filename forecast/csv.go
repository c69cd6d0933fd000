package forecast

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CSVOptions says which columns of a trace hold the time and the value, and whether to repair
// ordering problems instead of rejecting them.
type CSVOptions struct {
	// TimeCol names the time column; empty picks the first of "timestamp", "ts", "time", else
	// column 0.
	TimeCol string
	// ValueCol names the value column; empty picks "value", else column 1.
	ValueCol string
	// Repair sorts rows by time and averages rows with the same timestamp instead of failing on
	// them. Non-numeric values are never repaired.
	Repair bool
}

// Errors a CSV trace can fail with; ParseError wraps them with the line number.
var (
	// ErrNotNumber means a value cell is not a number.
	ErrNotNumber = errors.New("not a number")
	// ErrBadTime means a time cell is in none of the accepted formats.
	ErrBadTime = errors.New("not a timestamp (want Unix seconds, RFC 3339 or YYYY-MM-DD HH:MM:SS)")
	// ErrNotMonotonic means a row's time is before the previous row's.
	ErrNotMonotonic = errors.New("timestamp goes backwards")
	// ErrDuplicate means a row repeats the previous row's timestamp.
	ErrDuplicate = errors.New("duplicate timestamp")
	// ErrNoColumn means a named column is not in the header.
	ErrNoColumn = errors.New("no such column")
)

// ParseError reports a bad line of a CSV trace; Line counts from 1 and includes the header.
type ParseError struct {
	// Line is the 1-based line number in the file.
	Line int
	// Column is the header name of the offending cell, if any.
	Column string
	// Value is the offending cell.
	Value string
	// Err is the cause, one of the Err* values of this package or a csv error.
	Err error
}

// Error implements error: the line, then the column by its header name and the cell.
func (e *ParseError) Error() string {
	switch {
	case e.Line == 0:
		return e.Err.Error()
	case e.Column == "":
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	case e.Value == "":
		return fmt.Sprintf("line %d: column %q: %v", e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("line %d: column %q: %q: %v", e.Line, e.Column, e.Value, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// ReadCSV reads a trace with a header line. Times may be Unix seconds (integer or fractional),
// RFC 3339, or "YYYY-MM-DD HH:MM:SS" (read as UTC). An empty cell or "NaN" is a missing sample
// (a gap, not a zero). Without Repair, rows must be in strictly increasing time order.
func ReadCSV(r io.Reader, opts CSVOptions) ([]Sample, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	header = append([]string(nil), header...) // ReuseRecord: the next Read overwrites it
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	tc, vc, err := pickColumns(header, opts)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(cr, header, tc, vc)
	if err != nil {
		return nil, err
	}
	if opts.Repair {
		return repair(rows), nil
	}
	return checkOrder(rows)
}

type row struct {
	line int
	s    Sample
}

func readRows(cr *csv.Reader, header []string, tc, vc int) ([]row, error) {
	var rows []row
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			// A record that failed has no fields to ask FieldPos about (a stray quote that runs to
			// the end of the file panicked there); the csv error knows its line and byte.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if pe.StartLine != pe.Line {
					return nil, &ParseError{Line: pe.StartLine, Err: fmt.Errorf("the record starting here breaks on line %d, byte %d: %w", pe.Line, pe.Column, pe.Err)}
				}
				return nil, &ParseError{Line: pe.Line, Err: fmt.Errorf("byte %d: %w", pe.Column, pe.Err)}
			}
			return nil, &ParseError{Err: err}
		}
		line, _ := cr.FieldPos(0)
		if len(rec) <= max(tc, vc) {
			missing := header[max(tc, vc)]
			return nil, &ParseError{Line: line, Column: missing, Err: fmt.Errorf("the row has %d fields and no cell for this column", len(rec))}
		}
		t, err := parseTime(rec[tc])
		if err != nil {
			return nil, &ParseError{Line: line, Column: header[tc], Value: rec[tc], Err: err}
		}
		v, err := parseValue(rec[vc])
		if err != nil {
			return nil, &ParseError{Line: line, Column: header[vc], Value: rec[vc], Err: err}
		}
		rows = append(rows, row{line: line, s: Sample{Time: t, Value: v}})
	}
}

func pickColumns(header []string, opts CSVOptions) (int, int, error) {
	find := func(name string) int {
		for i, h := range header {
			if strings.EqualFold(strings.TrimSpace(h), name) {
				return i
			}
		}
		return -1
	}
	pick := func(name string, defaults []string, fallback int) (int, error) {
		if name != "" {
			if i := find(name); i >= 0 {
				return i, nil
			}
			return 0, &ParseError{Line: 1, Column: name, Err: ErrNoColumn}
		}
		for _, d := range defaults {
			if i := find(d); i >= 0 {
				return i, nil
			}
		}
		if fallback >= len(header) {
			return 0, &ParseError{Line: 1, Err: fmt.Errorf("header has %d columns, want at least 2", len(header))}
		}
		return fallback, nil
	}
	tc, err := pick(opts.TimeCol, []string{"timestamp", "ts", "time"}, 0)
	if err != nil {
		return 0, 0, err
	}
	vc, err := pick(opts.ValueCol, []string{"value"}, 1)
	return tc, vc, err
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04"}

// Unix seconds are accepted from year 1 to year 9999, the range RFC 3339 times have; beyond it
// the conversion to int64 seconds is undefined.
const (
	minUnixSeconds = -62135596800
	maxUnixSeconds = 253402300799
)

func parseTime(cell string) (time.Time, error) {
	cell = strings.TrimSpace(cell)
	if f, err := strconv.ParseFloat(cell, 64); err == nil {
		if !(f >= minUnixSeconds && f <= maxUnixSeconds) {
			return time.Time{}, fmt.Errorf("%w: %s Unix seconds is outside years 1..9999", ErrBadTime, cell)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, cell); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, ErrBadTime
}

func parseValue(cell string) (float64, error) {
	cell = strings.TrimSpace(cell)
	if cell == "" || strings.EqualFold(cell, "nan") {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, ErrNotNumber
	}
	return v, nil
}

func checkOrder(rows []row) ([]Sample, error) {
	out := make([]Sample, len(rows))
	for i, r := range rows {
		if i > 0 {
			prev := rows[i-1]
			switch {
			case r.s.Time.Equal(prev.s.Time):
				return nil, &ParseError{Line: r.line, Err: fmt.Errorf("%w %s (also on line %d)", ErrDuplicate, r.s.Time.Format(time.RFC3339), prev.line)}
			case r.s.Time.Before(prev.s.Time):
				return nil, &ParseError{Line: r.line, Err: fmt.Errorf("%w: %s is before %s on line %d", ErrNotMonotonic, r.s.Time.Format(time.RFC3339), prev.s.Time.Format(time.RFC3339), prev.line)}
			}
		}
		out[i] = r.s
	}
	return out, nil
}

// repair sorts rows by time (stable, so file order breaks ties) and averages the non-NaN values
// of rows that share a timestamp.
func repair(rows []row) []Sample {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].s.Time.Before(rows[j].s.Time) })
	var out []Sample
	for i := 0; i < len(rows); {
		j := i
		vals := []float64{}
		for ; j < len(rows) && rows[j].s.Time.Equal(rows[i].s.Time); j++ {
			vals = append(vals, rows[j].s.Value)
		}
		out = append(out, Sample{Time: rows[i].s.Time, Value: nanMean(vals)})
		i = j
	}
	return out
}
