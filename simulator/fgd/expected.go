package fgd

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Published is one row of the paper's released results as summarised in
// testdata/alibaba-gpu-v2023/fgd-expected-results/summary_by_workload_policy.csv.
type Published struct {
	// Workload is the pod list, e.g. "openb_pod_list_default".
	Workload string `json:"workload"`
	// Policy is the paper's policy directory, e.g. "05-BestFit", "06-FGD".
	Policy string `json:"policy"`
	// AllocAt90, AllocAt100 and AllocAt130 are mean allocation % at 90/100/130 % arrived;
	// Std100 and Std130 their standard deviations over seeds.
	AllocAt90  float64 `json:"allocAt90"`
	AllocAt100 float64 `json:"allocAt100"`
	AllocAt130 float64 `json:"allocAt130"`
	Std100     float64 `json:"std100"`
	Std130     float64 `json:"std130"`
	// FragAt100 and FragAt130 are mean fragmentation % of capacity.
	FragAt100 float64 `json:"fragAt100"`
	FragAt130 float64 `json:"fragAt130"`
}

// PaperPolicy maps a Tiler policy to the paper's policy directory; TilerPack has none.
func PaperPolicy(p Policy) (string, bool) {
	switch p {
	case PolicyBestFit:
		return "05-BestFit", true
	case PolicyFGD:
		return "06-FGD", true
	}
	return "", false
}

// ParsePublished reads summary_by_workload_policy.csv.
func ParsePublished(src io.Reader) ([]Published, error) {
	cols := []string{"workload", "sc_policy", "alloc_pct_at_arrived_090", "alloc_pct_at_arrived_100",
		"alloc_pct_at_arrived_100_std", "alloc_pct_at_arrived_130", "alloc_pct_at_arrived_130_std",
		"frag_pct_at_arrived_100", "frag_pct_at_arrived_130"}
	t, err := newTable(src, cols, nil)
	if err != nil {
		return nil, err
	}
	var out []Published
	for {
		if err := t.next(); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, readErr("published results", err)
		}
		p := Published{Workload: t.str("workload"), Policy: t.str("sc_policy")}
		for i, dst := range []*float64{&p.AllocAt90, &p.AllocAt100, &p.Std100, &p.AllocAt130, &p.Std130, &p.FragAt100, &p.FragAt130} {
			if *dst, err = t.float(cols[i+2]); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
}

// FindPublished returns the row for a workload and Tiler policy.
func FindPublished(rows []Published, workload string, p Policy) (Published, bool) {
	name, ok := PaperPolicy(p)
	if !ok {
		return Published{}, false
	}
	for _, r := range rows {
		if r.Workload == workload && r.Policy == name {
			return r, true
		}
	}
	return Published{}, false
}

func (t *table) float(field string) (float64, error) {
	s := t.str(field)
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		// NaN would reach the JSON of tiler bench fgd, which cannot carry it.
		return 0, t.errAt(field, fmt.Errorf("%q is not a finite number", s))
	}
	return v, nil
}
