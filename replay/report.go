package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a workload replayed under several policies, with the clairvoyant bound.
type Report struct {
	Workload string        `json:"workload"`
	Window   time.Duration `json:"window"`
	Pods     int           `json:"pods"`
	Catalog  string        `json:"catalog"`
	Results  []*Result     `json:"results"`
	Bound    *Bound        `json:"bound"`
	// SpotInterruptionRate and InterruptionSeed are the Config's: how spot instances were
	// interrupted.
	SpotInterruptionRate float64 `json:"spotInterruptionRate"`
	InterruptionSeed     uint64  `json:"interruptionSeed"`
}

// Compare replays the workload under each policy and computes the clairvoyant bound.
func Compare(wl *Workload, pols []Policy, cfg Config) (*Report, error) {
	rep := &Report{Workload: wl.Name, Window: wl.Length, Pods: len(wl.Pods), SpotInterruptionRate: cfg.SpotInterruptionRate,
		InterruptionSeed: cfg.InterruptionSeed}
	if cfg.Catalog != nil {
		rep.Catalog = cfg.Catalog.Name
	}
	for _, p := range pols {
		r, err := Run(wl, p, cfg)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		rep.Results = append(rep.Results, r)
	}
	b, err := ClairvoyantBound(wl, cfg)
	if err != nil {
		return nil, fmt.Errorf("clairvoyant bound: %w", err)
	}
	rep.Bound = b
	return rep, nil
}

// Result returns the named policy's result, or nil.
func (r *Report) Result(policy string) *Result {
	for _, x := range r.Results {
		if x.Policy == policy {
			return x
		}
	}
	return nil
}

// WriteTable renders the summary table: per policy $, ratio to the bound, GPU and CPU allocation,
// pending times, nodes, evictions, spot interruptions; then the savings of tiler against each baseline.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workload %s: %d pods over %s, catalog %s\n", r.Workload, r.Pods, r.Window, r.Catalog)
	for _, x := range r.Results {
		if x.SpotHours > 0 {
			fmt.Fprintf(w, "spot interruptions: %.3g per spot instance-hour, seed %d\n", r.SpotInterruptionRate, r.InterruptionSeed)
			break
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\t$\t×bound\tGPU-h bought\tGPU-h req\tGPU alloc\tCPU alloc\tpending p50\tp95\tp99\tmax\tunbound\tlaunched\tremoved\tevictions\tinterrupted\t")
	for _, x := range r.Results {
		ratio := "-"
		if r.Bound != nil && r.Bound.Cost > 0 {
			ratio = fmt.Sprintf("%.2f", x.Cost/r.Bound.Cost)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.1f\t%.1f\t%.0f%%\t%.0f%%\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", x.Policy, x.Cost, ratio,
			x.GPUHoursBought, x.GPUHoursRequested, 100*x.GPUAllocation(), 100*x.CPUAllocation(),
			dur(x.PendingP50), dur(x.PendingP95), dur(x.PendingP99), dur(x.PendingMax), x.NeverBound, x.NodesLaunched, x.NodesRemoved, x.Evictions, x.Interruptions)
	}
	if r.Bound != nil {
		fmt.Fprintf(tw, "%s\t%.2f\t1.00\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", PolicyClairvoyant, r.Bound.Cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t := r.Result(PolicyTiler); t != nil {
		var lines []string
		for _, x := range r.Results {
			if x.Policy != PolicyTiler && x.Cost > 0 {
				lines = append(lines, fmt.Sprintf("  vs %s: $%.2f saved (%.0f%%), tiler at %.2f× its cost", x.Policy, x.Cost-t.Cost, 100*(1-t.Cost/x.Cost), t.Cost/x.Cost))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\ntiler's savings:\n%s\n", strings.Join(lines, "\n"))
		}
	}
	return nil
}

// dur renders a duration rounded to the second.
func dur(d time.Duration) string { return d.Round(time.Second).String() }

// WriteJSON writes the report, time series included, as indented JSON (durations in
// nanoseconds, as encoding/json writes time.Duration).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
