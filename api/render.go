package api

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the plan's JSON contract, indented, with a trailing newline.
func (p *Plan) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the plan for people: a summary, the new nodes, placements on existing nodes
// and the pods without a place.
func (p *Plan) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Without a bound the gap is unknown: "gap ≤ 0 %" would claim an optimal plan.
	gap := "gap n/a"
	switch {
	case p.CostPerHour == 0:
		gap = "gap ≤ 0.0%"
	case p.LowerBoundPerHour > 0:
		gap = fmt.Sprintf("gap ≤ %.1f%%", 100*(p.CostPerHour/p.LowerBoundPerHour-1))
	}
	empty := 0
	for _, n := range p.NewNodes {
		if len(n.Pods) == 0 {
			empty++
		}
	}
	nodes := fmt.Sprintf("%d nodes", len(p.NewNodes))
	if empty > 0 {
		// Say which nodes no pod needs: a gap of 0 % means nothing cheaper keeps minNodes, not
		// that the nodes are needed.
		nodes += fmt.Sprintf(" (%d empty, for pools' minNodes)", empty)
	}
	fmt.Fprintf(tw, "New capacity: %s, $%.4f/h (lower bound $%.4f/h, %s)\n",
		nodes, p.CostPerHour, p.LowerBoundPerHour, gap)
	placed := 0
	for _, n := range p.NewNodes {
		placed += len(n.Pods)
	}
	for _, n := range p.ExistingNodes {
		placed += len(n.Pods)
	}
	fmt.Fprintf(tw, "Pods placed: %d, unschedulable: %d\n", placed, len(p.Unschedulable))
	if len(p.Relayouts) > 0 {
		fmt.Fprintf(tw, "MIG re-layouts: %d existing nodes (no purchase)\n", len(p.Relayouts))
	}
	if len(p.Preemptions) > 0 {
		victims := 0
		for _, pr := range p.Preemptions {
			victims += len(pr.Victims)
		}
		fmt.Fprintf(tw, "Preemptions: %d pods preempt %d lower-priority pods on existing nodes (no purchase for them)\n", len(p.Preemptions), victims)
	}
	if len(p.NewNodes) > 0 {
		fmt.Fprintln(tw, "\nNEW NODE\tPOOL\tTYPE\tZONE\tCAPACITY\t$/H\tGPUS\tPODS")
		for _, n := range p.NewNodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.4f\t%s\t%s\n", n.Name, n.Pool, n.InstanceType, n.Zone, n.CapacityType,
				n.PricePerHour, gpuSummary(n), podList(n.Pods, n.Reason))
		}
		for _, n := range p.NewNodes {
			if n.GPU != nil && len(n.GPU.MIGLayout) > 0 {
				fmt.Fprintf(tw, "  %s MIG (%s, %s strategy): %s\n", n.Name, n.GPU.MIGConfig, n.GPU.MIGStrategy, migLayoutString(n.GPU.MIGLayout))
			}
			if len(n.Claims) > 0 {
				fmt.Fprintf(tw, "  %s claims: %s\n", n.Name, claimsString(n.Claims))
			}
			if n.CapacityReservation != "" {
				fmt.Fprintf(tw, "  %s on capacity reservation %s\n", n.Name, n.CapacityReservation)
			}
		}
	}
	if len(p.ExistingNodes) > 0 {
		fmt.Fprintln(tw, "\nEXISTING NODE\tPODS")
		for _, n := range p.ExistingNodes {
			fmt.Fprintf(tw, "%s\t%s\n", n.Name, podList(n.Pods, ""))
		}
		for _, n := range p.ExistingNodes {
			if len(n.Claims) > 0 {
				fmt.Fprintf(tw, "  %s claims: %s\n", n.Name, claimsString(n.Claims))
			}
		}
	}
	if len(p.Relayouts) > 0 {
		fmt.Fprintln(tw, "\nMIG RELAYOUT\tPOOL\tGPUS\tMIG CONFIG\tPODS")
		for _, r := range p.Relayouts {
			gpus := make([]string, len(r.GPUs))
			for i, g := range r.GPUs {
				gpus[i] = fmt.Sprint(g)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Node, r.Pool, strings.Join(gpus, ","), r.MIGConfig, podList(r.Pods, ""))
		}
		for _, r := range p.Relayouts {
			fmt.Fprintf(tw, "  %s MIG after the change: %s\n", r.Node, migLayoutString(r.Layout))
		}
	}
	if len(p.Preemptions) > 0 {
		fmt.Fprintln(tw, "\nPREEMPTING POD\tPRIORITY\tNODE\tVICTIMS\tREASON")
		for _, pr := range p.Preemptions {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", pr.Pod, pr.Priority, pr.Node, podList(pr.Victims, ""), pr.Reason)
		}
	}
	if len(p.Unschedulable) > 0 {
		fmt.Fprintln(tw, "\nUNSCHEDULABLE POD\tCODE\tREASON")
		for _, u := range p.Unschedulable {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Pod, u.Code, u.Reason)
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", warn)
	}
	return tw.Flush()
}

// podList shortens long pod lists to the first three and a count.
func podList(pods []string, reason string) string {
	if len(pods) == 0 {
		return "(" + reason + ")"
	}
	if len(pods) <= 3 {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s, … (%d pods)", strings.Join(pods[:3], ", "), len(pods))
}

// maxRenderedClaims bounds the claims the table lists per node.
const maxRenderedClaims = 4

// claimsString renders a node's claim allocations briefly: "ns/a → gpu-0; ns/b → gpu-1, gpu-2",
// the first few and a count.
func claimsString(claims []ClaimAllocation) string {
	var parts []string
	for i, c := range claims {
		if i == maxRenderedClaims {
			parts = append(parts, fmt.Sprintf("… (%d claims)", len(claims)))
			break
		}
		parts = append(parts, c.Claim+" → "+strings.Join(c.Devices, ", "))
	}
	return strings.Join(parts, "; ")
}

// gpuSummary renders a node's GPUs, e.g. "4×L4 time-slicing×6", "1×A100-40GB mig",
// "1×L4 dra" (the DRA driver's whole GPUs) or "1×A100-40GB dynamic-mig consumable-memory".
func gpuSummary(n NewNode) string {
	if n.GPUs == nil {
		return "-"
	}
	s := fmt.Sprintf("%d×%s", n.GPUs.Count, n.GPUs.Model)
	if g := n.GPU; g != nil {
		switch {
		case g.Replicas > 0:
			s += fmt.Sprintf(" %s×%d", g.Sharing, g.Replicas)
		case len(g.MIGLayout) > 0:
			s += " mig"
		case g.Sharing == DynamicMIG:
			s += " dynamic-mig"
		case g.DRA:
			s += " dra"
		}
		if g.ConsumableMemory {
			s += " consumable-memory"
		}
	}
	return s
}

// migLayoutString renders per-GPU layouts, collapsing runs of identical GPUs.
func migLayoutString(layout [][]string) string {
	var parts []string
	for i := 0; i < len(layout); {
		j := i
		for j < len(layout) && strings.Join(layout[j], ",") == strings.Join(layout[i], ",") {
			j++
		}
		parts = append(parts, fmt.Sprintf("GPU %d-%d [%s]", i, j-1, strings.Join(layout[i], " ")))
		i = j
	}
	return strings.Join(parts, "; ")
}
