package api

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the disruption plan's JSON contract, indented, with a trailing newline.
func (p *DisruptionPlan) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the disruption plan: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the disruption plan for people: the fleet's price before and after, the
// actions with their savings and where their pods go, the kept nodes with their reasons and the
// candidates.
func (p *DisruptionPlan) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pct := 0.0
	if p.CostPerHourBefore > 0 {
		pct = 100 * p.SavingsPerHour / p.CostPerHourBefore
	}
	removed := 0
	for _, a := range p.Actions {
		removed += len(a.Nodes)
	}
	fmt.Fprintf(tw, "Managed fleet: $%.4f/h → $%.4f/h (saves $%.4f/h, %.1f%%)\n", p.CostPerHourBefore, p.CostPerHourAfter, p.SavingsPerHour, pct)
	fmt.Fprintf(tw, "Actions: %d, nodes removed: %d, kept: %d\n", len(p.Actions), removed, len(p.Kept))
	if len(p.Actions) > 0 {
		fmt.Fprintln(tw, "\nACTION\tKIND\tREASON\tPOOL\tNODES\tREPLACEMENT\t$/H BEFORE\t$/H AFTER\tSAVES\tMOVES")
		for _, a := range p.Actions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.4f\t%s\n", a.ID, a.Kind, a.Reason, a.Pool,
				strings.Join(a.Nodes, ", "), replacementString(a.Replacement), a.CostPerHourBefore, a.CostPerHourAfter,
				a.SavingsPerHour, movesSummary(a.Moves))
		}
	}
	if len(p.Kept) > 0 {
		fmt.Fprintln(tw, "\nKEPT NODE\tPOOL\tREASON\tMESSAGE")
		for _, k := range p.Kept {
			pool := k.Pool
			if pool == "" {
				pool = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, pool, k.Reason, k.Message)
		}
	}
	if len(p.Candidates) > 0 {
		fmt.Fprintf(tw, "\nCandidates (%s): %s\n", AnnotationCandidateSince, strings.Join(p.Candidates, ", "))
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", warn)
	}
	return tw.Flush()
}

// replacementString renders a replacement as name (type/zone/capacity type), or "-".
func replacementString(n *NewNode) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", n.Name, n.Offering)
}

// movesSummary counts the moves per destination: "5 pods: 3 → node-a, 2 → node-b", "1 pod: 1 →
// node-a".
func movesSummary(moves []PodMove) string {
	if len(moves) == 0 {
		return "-"
	}
	count := map[string]int{}
	var dests []string
	for _, m := range moves {
		if count[m.To] == 0 {
			dests = append(dests, m.To)
		}
		count[m.To]++
	}
	sort.Strings(dests)
	parts := make([]string, len(dests))
	for i, d := range dests {
		parts[i] = fmt.Sprintf("%d → %s", count[d], d)
	}
	noun := "pods"
	if len(moves) == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("%d %s: %s", len(moves), noun, strings.Join(parts, ", "))
}
