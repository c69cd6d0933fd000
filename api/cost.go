package api

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// CostReport attributes the price per hour of a fleet's priced nodes to what holds them: each
// node's price is shared among its pods in proportion to what they take of the node's scarcest
// resource (GPUs on GPU nodes, see simulator.Chargeback), and what no pod takes is an idle line of
// the node's pool. The lines add up to CostPerHour.
type CostReport struct {
	// CostPerHour is the $/h of the priced nodes; Nodes counts them.
	CostPerHour float64 `json:"costPerHour"`
	Nodes       int     `json:"nodes"`
	// IdlePerHour is the part of CostPerHour no pod takes.
	IdlePerHour float64 `json:"idlePerHour"`
	// Lines are ordered by namespace (idle lines last), pool and capacity type.
	Lines []CostLine `json:"lines"`
	// Teams sums the namespace lines per team when the report was made with a policy that has
	// teams (the lines of namespaces in no team under Team ""); omitted otherwise.
	Teams []TeamCost `json:"teams,omitempty"`
	// Unpriced names the nodes without a catalog price (unknown instance type or offering),
	// which the report leaves out.
	Unpriced []string `json:"unpriced"`
}

// CostLine is the $/h one namespace's pods take of one pool's nodes of one capacity type, or, with
// Idle set and no namespace, what no pod takes of them.
type CostLine struct {
	Namespace string `json:"namespace,omitempty"`
	// Team is the namespace's cost-policy team ("" for none, and for idle lines).
	Team         string       `json:"team,omitempty"`
	Idle         bool         `json:"idle,omitempty"`
	Pool         string       `json:"pool"`
	CapacityType CapacityType `json:"capacityType"`
	CostPerHour  float64      `json:"costPerHour"`
	// Pods counts the pods of the line; GPUs the GPUs they take (a 1g MIG slice of seven is 1/7).
	Pods int     `json:"pods"`
	GPUs float64 `json:"gpus"`
}

// TeamCost is the $/h, pods and GPUs of one team's namespace lines.
type TeamCost struct {
	Team        string  `json:"team"`
	CostPerHour float64 `json:"costPerHour"`
	Pods        int     `json:"pods"`
	GPUs        float64 `json:"gpus"`
}

// NoTeam is how tables and CSV name the team of a namespace in no team.
const NoTeam = "-"

func teamName(t string) string {
	if t == "" {
		return NoTeam
	}
	return t
}

// IdleNamespace is how tables and CSV name the idle lines.
const IdleNamespace = "(idle)"

func (l CostLine) namespace() string {
	if l.Idle {
		return IdleNamespace
	}
	return l.Namespace
}

// WriteJSON writes the report's JSON, indented, with a trailing newline.
func (r *CostReport) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the report for people: the total, the idle share and one row per line.
func (r *CostReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	idle := 0.0
	if r.CostPerHour > 0 {
		idle = 100 * r.IdlePerHour / r.CostPerHour
	}
	fmt.Fprintf(tw, "Fleet: %d priced nodes, $%.4f/h, idle $%.4f/h (%.1f%%)\n", r.Nodes, r.CostPerHour, r.IdlePerHour, idle)
	if len(r.Unpriced) > 0 {
		fmt.Fprintf(tw, "Not priced (left out): %d nodes\n", len(r.Unpriced))
	}
	pct := func(c float64) float64 {
		if r.CostPerHour > 0 {
			return 100 * c / r.CostPerHour
		}
		return 0
	}
	teams := r.Teams != nil
	if teams {
		fmt.Fprintln(tw, "\nTEAM\t$/H\tSHARE\tPODS\tGPUS")
		for _, t := range r.Teams {
			fmt.Fprintf(tw, "%s\t%.4f\t%.1f%%\t%d\t%.2f\n", teamName(t.Team), t.CostPerHour, pct(t.CostPerHour), t.Pods, t.GPUs)
		}
		fmt.Fprintln(tw, "\nNAMESPACE\tTEAM\tPOOL\tCAPACITY\t$/H\tSHARE\tPODS\tGPUS")
	} else {
		fmt.Fprintln(tw, "\nNAMESPACE\tPOOL\tCAPACITY\t$/H\tSHARE\tPODS\tGPUS")
	}
	for _, l := range r.Lines {
		team := ""
		if teams {
			team = teamName(l.Team) + "\t"
			if l.Idle {
				team = "\t"
			}
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%.4f\t%.1f%%\t%d\t%.2f\n", l.namespace(), team, l.Pool, l.CapacityType, l.CostPerHour, pct(l.CostPerHour), l.Pods, l.GPUs)
	}
	return tw.Flush()
}

// WriteCSV writes one header row and one row per line: namespace (IdleNamespace for idle lines),
// pool, capacity type, $/h, pods, GPUs; with teams (Teams set) a team column (NoTeam for a
// namespace in none, empty for idle lines) follows the namespace.
func (r *CostReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	teams := r.Teams != nil
	header := []string{"namespace", "pool", "capacity_type", "cost_per_hour", "pods", "gpus"}
	if teams {
		header = append([]string{"namespace", "team"}, header[1:]...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, l := range r.Lines {
		row := []string{l.namespace(), l.Pool, string(l.CapacityType), strconv.FormatFloat(l.CostPerHour, 'f', 6, 64),
			strconv.Itoa(l.Pods), strconv.FormatFloat(l.GPUs, 'f', 4, 64)}
		if teams {
			team := teamName(l.Team)
			if l.Idle {
				team = ""
			}
			row = append([]string{row[0], team}, row[1:]...)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
