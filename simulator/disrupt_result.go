package simulator

import (
	"fmt"
	"sort"

	"github.com/tiler-dev/tiler/api"
)

// result builds the plan from the pass whose actions are emitted (last) and the pass that found
// the candidates (first; the same pass when no node had to wait).
func (d *disruptor) result(first, last *pass) *api.DisruptionPlan {
	plan := &api.DisruptionPlan{Actions: last.actions, Kept: []api.KeptNode{}, Candidates: []string{}}
	if plan.Actions == nil {
		plan.Actions = []api.DisruptionAction{}
	}
	candidates := map[string]bool{}
	for _, p := range []*pass{first, last} {
		for _, a := range p.actions {
			for _, n := range a.Nodes {
				candidates[n] = true
			}
		}
	}
	for n := range candidates {
		plan.Candidates = append(plan.Candidates, n)
	}
	sort.Strings(plan.Candidates)
	unpriced := 0
	for _, f := range d.facts {
		if f.pol != nil {
			plan.CostPerHourBefore += f.price
			if f.price <= 0 {
				unpriced++
			}
		}
		if last.removed[f.node.Name] {
			continue
		}
		switch k := last.reasons[f.node.Name]; {
		case f.keep != nil:
			plan.Kept = append(plan.Kept, *f.keep)
		case k != nil:
			plan.Kept = append(plan.Kept, *k)
		default:
			// Only a node that no method could try (no pool in the simulation) gets here.
			plan.Kept = append(plan.Kept, api.KeptNode{Name: f.node.Name, Pool: f.pol.Name, Reason: api.KeepNoCheaperFit, Message: "not tried"})
		}
	}
	for _, f := range d.in.Options.InFlight {
		if d.byName[f.Name] == nil || d.byName[f.Name].price <= 0 {
			plan.CostPerHourBefore += f.PricePerHour
		}
	}
	for _, a := range plan.Actions {
		plan.SavingsPerHour += a.SavingsPerHour
	}
	plan.CostPerHourBefore = round6(plan.CostPerHourBefore)
	plan.SavingsPerHour = round6(plan.SavingsPerHour)
	plan.CostPerHourAfter = round6(plan.CostPerHourBefore - plan.SavingsPerHour)
	if unpriced > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%d managed nodes have no catalog price; the fleet's cost leaves them out", unpriced))
	}
	plan.Warnings = append(append([]string(nil), d.s.warnings...), d.warnings...)
	return plan
}
