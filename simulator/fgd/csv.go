package fgd

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

// Node is one row of a trace node list (openb_node_list_*.csv).
type Node struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	Model     string
}

// Pod is one row of a trace pod list (openb_pod_list_*.csv). The packing experiment ignores the
// times, QoS and phase; a replay over time (package replay) reads the times.
type Pod struct {
	Name string
	gpushare.Request
	// Times are the pod's creation and deletion, in seconds from the trace's origin; nil when the
	// list has no creation_time and deletion_time columns.
	Times *PodTimes
}

// PodTimes are a trace pod's lifetime, in seconds from the trace's own origin (not Unix time).
type PodTimes struct {
	Created, Deleted int64
}

// ParseError is bad input in a CSV file: Line and Column are 1-based, Column counts bytes
// (encoding/csv's convention), Field names the column when known.
type ParseError struct {
	Line, Column int
	Field        string
	Err          error
}

// Error renders "line 12, column 9 (cpu_milli): ...".
func (e *ParseError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("line %d, column %d (%s): %v", e.Line, e.Column, e.Field, e.Err)
	}
	return fmt.Sprintf("line %d, column %d: %v", e.Line, e.Column, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// The columns of the trace's node and pod lists. The experiment needs the required ones; the
// others default as the upstream simulator's converter (data/pod_csv_to_yaml.py of
// hkust-adsl/kubernetes-scheduler-simulator) defaults them: no memory_mib means no memory
// request, no gpu_milli a whole GPU per GPU asked for, no gpu_spec any model, no model a node
// without GPUs. Published variants of the trace drop them (name,cpu_milli,memory_mib,num_gpu,
// gpu_milli; name,cpu_milli,num_gpu,gpu_milli,...), and the times, QoS and phase are never read.
var (
	nodeColumns         = []string{"sn", "cpu_milli", "memory_mib", "gpu"}
	nodeOptionalColumns = []string{"model"}
	podColumns          = []string{"name", "cpu_milli", "num_gpu"}
	podOptionalColumns  = []string{"memory_mib", "gpu_milli", "gpu_spec"}
)

// MaxCell bounds the CPU (milli-cores) and memory (MiB) of one row: 2^40 is a billion cores or an
// exbibyte, beyond any machine, and a million rows of it still sum within an int64.
const MaxCell = 1 << 40

// table reads a CSV with a header row and hands each record to row with a field accessor.
type table struct {
	r   *csv.Reader
	col map[string]int
	rec []string
}

func newTable(src io.Reader, required, optional []string) (*table, error) {
	r := csv.NewReader(src)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{Line: 1, Column: 1, Err: errors.New("empty file: want a header row")}
		}
		return nil, fmt.Errorf("reading header: %w", err)
	}
	t := &table{r: r, col: map[string]int{}}
	for i, h := range header {
		name := strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[name]; dup && name != "" {
			return nil, &ParseError{Line: 1, Column: 1, Err: fmt.Errorf("header names column %q twice", name)}
		}
		t.col[name] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			want := strings.Join(required, ",")
			if len(optional) > 0 {
				want += " and optionally " + strings.Join(optional, ",")
			}
			return nil, &ParseError{Line: 1, Column: 1, Err: fmt.Errorf("header lacks column %q (want %s)", c, want)}
		}
	}
	return t, nil
}

// next reads one record; it returns io.EOF at the end.
func (t *table) next() error {
	rec, err := t.r.Read()
	if err != nil {
		return err
	}
	t.rec = rec
	return nil
}

func (t *table) errAt(field string, err error) error {
	line, col := t.r.FieldPos(t.col[field])
	return &ParseError{Line: line, Column: col, Field: field, Err: err}
}

// has reports whether the header has the column.
func (t *table) has(field string) bool {
	_, ok := t.col[field]
	return ok
}

// str returns the cell of the column, "" when the header lacks it.
func (t *table) str(field string) string {
	i, ok := t.col[field]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

func (t *table) int(field string) (int64, error) {
	s := t.str(field)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, t.errAt(field, fmt.Errorf("%q is not an integer", s))
	}
	if v < 0 {
		return 0, t.errAt(field, fmt.Errorf("%d must not be negative", v))
	}
	if v > MaxCell {
		return 0, t.errAt(field, fmt.Errorf("%d is too large: at most %d", v, int64(MaxCell)))
	}
	return v, nil
}

// readErr wraps an error of the csv reader; it names the line (and byte) already.
func readErr(what string, err error) error {
	return fmt.Errorf("reading %s: %w", what, err)
}

// ParseNodes reads a node list with the columns sn,cpu_milli,memory_mib,gpu and optionally model
// (extra columns are ignored). A node without GPUs has an empty model. A node name must be
// unique: two rows of one name are two nodes of the trace merged or a copy-paste error.
func ParseNodes(src io.Reader) ([]Node, error) {
	t, err := newTable(src, nodeColumns, nodeOptionalColumns)
	if err != nil {
		return nil, err
	}
	var out []Node
	seen := map[string]int{}
	for {
		if err := t.next(); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, readErr("node list", err)
		}
		n, err := t.node()
		if err != nil {
			return nil, err
		}
		line, _ := t.r.FieldPos(0)
		if first, dup := seen[n.Name]; dup {
			return nil, t.errAt("sn", fmt.Errorf("node %q is listed twice (also on line %d)", n.Name, first))
		}
		seen[n.Name] = line
		out = append(out, n)
	}
}

func (t *table) node() (Node, error) {
	n := Node{Name: t.str("sn"), Model: t.str("model")}
	var err error
	if n.Name == "" {
		return Node{}, t.errAt("sn", errors.New("empty node name"))
	}
	if n.CPUMilli, err = t.int("cpu_milli"); err != nil {
		return Node{}, err
	}
	if n.MemoryMiB, err = t.int("memory_mib"); err != nil {
		return Node{}, err
	}
	gpus, err := t.int("gpu")
	if err != nil {
		return Node{}, err
	}
	if gpus > gpushare.MaxGPUsPerNode {
		return Node{}, t.errAt("gpu", fmt.Errorf("%d GPUs exceed %d per node", gpus, gpushare.MaxGPUsPerNode))
	}
	n.GPUs = int(gpus)
	if n.GPUs > 0 && n.Model == "" {
		return Node{}, t.errAt("model", fmt.Errorf("node with %d GPUs has no GPU model", n.GPUs))
	}
	return n, nil
}

// ParsePods reads a pod list with at least the columns name,cpu_milli,num_gpu and optionally
// memory_mib, gpu_milli and gpu_spec (defaults: no memory, a whole GPU per GPU asked for, any
// model). gpu_milli of a CPU-only pod must be 0; gpu_spec lists allowed GPU models separated by
// "|".
func ParsePods(src io.Reader) ([]Pod, error) {
	t, err := newTable(src, podColumns, podOptionalColumns)
	if err != nil {
		return nil, err
	}
	var out []Pod
	for {
		if err := t.next(); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, readErr("pod list", err)
		}
		p, err := t.pod()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
}

func (t *table) pod() (Pod, error) {
	p := Pod{Name: t.str("name")}
	if p.Name == "" {
		return Pod{}, t.errAt("name", errors.New("empty pod name"))
	}
	var err error
	if p.CPUMilli, err = t.int("cpu_milli"); err != nil {
		return Pod{}, err
	}
	if t.has("memory_mib") {
		if p.MemoryMiB, err = t.int("memory_mib"); err != nil {
			return Pod{}, err
		}
	}
	num, err := t.int("num_gpu")
	if err != nil {
		return Pod{}, err
	}
	switch {
	case t.has("gpu_milli"):
		if p.GPUMilli, err = t.int("gpu_milli"); err != nil {
			return Pod{}, err
		}
	case num > 0:
		p.GPUMilli = gpushare.MilliPerGPU
	}
	p.NumGPUs = int(min(num, gpushare.MaxGPUsPerNode+1))
	p.GPUModels = gpushare.ParseGPUModels(t.str("gpu_spec"))
	if _, ok := t.col["creation_time"]; ok {
		if _, ok := t.col["deletion_time"]; ok {
			var tm PodTimes
			if tm.Created, err = t.int("creation_time"); err != nil {
				return Pod{}, err
			}
			if tm.Deleted, err = t.int("deletion_time"); err != nil {
				return Pod{}, err
			}
			if tm.Deleted < tm.Created {
				return Pod{}, t.errAt("deletion_time", fmt.Errorf("%d is before creation_time %d", tm.Deleted, tm.Created))
			}
			p.Times = &tm
		}
	}
	if err := p.Validate(); err != nil {
		field := "gpu_milli"
		if p.NumGPUs > gpushare.MaxGPUsPerNode {
			field = "num_gpu"
		}
		return Pod{}, t.errAt(field, err)
	}
	return p, nil
}
