package fidelity

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tiler-dev/tiler/api"
)

// Verdict is how the real scheduler's binding of one pod compares with the plan.
type Verdict string

// The verdicts. VerdictNotBound, VerdictMoved and VerdictPessimistic are disagreements.
const (
	// VerdictAgree: the scheduler bound the pod to the node the plan put it on.
	VerdictAgree Verdict = "agree"
	// VerdictNotBound: the plan placed the pod but the scheduler did not bind it in time.
	VerdictNotBound Verdict = "not-bound"
	// VerdictMoved: the scheduler bound the pod to another node than the planned one.
	VerdictMoved Verdict = "moved"
	// VerdictUnschedulable: the plan had no place for the pod and the scheduler bound it to no
	// bought node either.
	VerdictUnschedulable Verdict = "unschedulable"
	// VerdictPessimistic: the plan had no place for the pod but the scheduler bound it to a node
	// the controller bought.
	VerdictPessimistic Verdict = "pessimistic"
	// VerdictPreBound: the scheduler bound the pod to an existing node before the plan was made;
	// it is not compared.
	VerdictPreBound Verdict = "pre-bound"
)

// PodOutcome is what happened to one pending pod of a run.
type PodOutcome struct {
	// Pod is the pod's name in the scenario.
	Pod   string
	Kinds []Kind
	// Planned is the node the plan put the pod on ("" when it had no place); PlannedType its
	// instance type for a new node.
	Planned     string
	PlannedType string
	// Reason is the plan's reason when it had no place for the pod.
	Reason string
	// Nominated is the pod's status.nominatedNodeName just before the nodes turned Ready.
	Nominated string
	// Bound is the node the scheduler bound the pod to ("" when unbound); BoundNew says whether
	// the controller bought that node.
	Bound    string
	BoundNew bool
	// SameShape says, for a moved pod, that the node it was bound to has the planned node's
	// instance type and zone: the scheduler permuted equivalent nodes.
	SameShape bool
	// Message is the scheduler's last PodScheduled message for a pod it did not bind.
	Message string
	Verdict Verdict
}

// Outcome is the result of one run of one scenario.
type Outcome struct {
	Scenario string
	Mode     Mode
	Pods     []PodOutcome
	// Plan is the plan of the first Reconcile (nil when no pod was pending).
	Plan *api.Plan
	// Launches counts the cloud's launches after the first Reconcile; Extra those that a later
	// Reconcile added (which the harness reports as a finding).
	Launches int
	Extra    int
	// Notes are anomalies of the run: failed launches, an extra launch, missing nominations,
	// preemptions other than planned.
	Notes []string
	// Preemptions compares the planned and the real preemptions of a preemption scenario
	// (GeneratePreemption); nil for the others.
	Preemptions *PreemptionOutcome
}

// Disagreements returns the pods whose verdict is a disagreement.
func (o *Outcome) Disagreements() []PodOutcome {
	var out []PodOutcome
	for _, p := range o.Pods {
		if isDisagreement(p.Verdict) {
			out = append(out, p)
		}
	}
	return out
}

func isDisagreement(v Verdict) bool {
	return v == VerdictNotBound || v == VerdictMoved || v == VerdictPessimistic
}

// verdict classifies one pod from the plan and the final binding.
func verdict(planned, bound string, boundNew, preBound bool) Verdict {
	switch {
	case preBound:
		return VerdictPreBound
	case planned != "" && bound == "":
		return VerdictNotBound
	case planned != "" && bound != planned:
		return VerdictMoved
	case planned != "":
		return VerdictAgree
	case bound != "" && boundNew:
		return VerdictPessimistic
	}
	return VerdictUnschedulable
}

// Tally counts the verdicts of the pods of one constraint kind.
type Tally struct {
	// Placed counts pods the plan placed; NotBound and Moved are among them, and SameShape
	// among the moved.
	Placed, NotBound, Moved, SameShape int
	// Unplaced counts pods the plan had no place for; Pessimistic is among them.
	Unplaced, Pessimistic int
	// PreBound counts pods the scheduler bound before the plan.
	PreBound int
}

func (t *Tally) add(p PodOutcome) {
	switch p.Verdict {
	case VerdictAgree:
		t.Placed++
	case VerdictNotBound:
		t.Placed++
		t.NotBound++
	case VerdictMoved:
		t.Placed++
		t.Moved++
		if p.SameShape {
			t.SameShape++
		}
	case VerdictUnschedulable:
		t.Unplaced++
	case VerdictPessimistic:
		t.Unplaced++
		t.Pessimistic++
	case VerdictPreBound:
		t.PreBound++
	}
}

// Report aggregates outcomes: verdict tallies per nomination mode and constraint kind, and every
// disagreement.
type Report struct {
	// Runs counts the outcomes added; Scenarios the distinct scenarios; Pods the pending pods.
	Runs, Pods int
	scenarios  map[string]bool
	tallies    map[Mode]map[Kind]*Tally
	// Findings lists each disagreement and run note as one line.
	Findings []string
}

// Add adds an outcome.
func (r *Report) Add(o *Outcome) {
	if r.tallies == nil {
		r.tallies = map[Mode]map[Kind]*Tally{}
		r.scenarios = map[string]bool{}
	}
	r.Runs++
	r.scenarios[o.Scenario] = true
	byKind := r.tallies[o.Mode]
	if byKind == nil {
		byKind = map[Kind]*Tally{}
		r.tallies[o.Mode] = byKind
	}
	mode := o.Mode
	for _, p := range o.Pods {
		r.Pods++
		for _, k := range append([]Kind{KindAll}, p.Kinds...) {
			t := byKind[k]
			if t == nil {
				t = &Tally{}
				byKind[k] = t
			}
			t.add(p)
		}
		if isDisagreement(p.Verdict) {
			if p.SameShape {
				continue // a permutation of equivalent nodes: counted, not listed
			}
			r.Findings = append(r.Findings, fmt.Sprintf("%s [%s] %s %s %v: planned %s, bound %s%s",
				o.Scenario, mode, p.Verdict, p.Pod, p.Kinds, orNone(p.Planned+typeSuffix(p.PlannedType), p.Reason),
				orNone(p.Bound, p.Message), nominatedSuffix(p)))
		}
	}
	for _, n := range o.Notes {
		r.Findings = append(r.Findings, fmt.Sprintf("%s [%s] note: %s", o.Scenario, mode, n))
	}
}

// Scenarios returns the number of distinct scenarios added.
func (r *Report) Scenarios() int { return len(r.scenarios) }

// Tally returns the tally of a kind in a mode (zero when none).
func (r *Report) Tally(mode Mode, k Kind) Tally {
	if t := r.tallies[mode][k]; t != nil {
		return *t
	}
	return Tally{}
}

// Write prints, per nomination mode, one row per constraint kind with the three rates — not bound
// and moved over the pods the plan placed (with how many moves were to a node of the planned
// node's type and zone), pessimistic over the pods it did not — and then the findings.
func (r *Report) Write(w io.Writer) error {
	fmt.Fprintf(w, "%d scenarios, %d runs, %d pending pods over all runs\n", r.Scenarios(), r.Runs, r.Pods)
	for _, mode := range AllModes {
		byKind := r.tallies[mode]
		if byKind == nil {
			continue
		}
		fmt.Fprintf(w, "\nmode %s (%s)\n", mode, mode.Describe())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "kind\tplaced\tnot bound\tmoved\t(same shape)\tunplaced\tpessimistic\tpre-bound\t")
		kinds := make([]Kind, 0, len(byKind))
		for k := range byKind {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool {
			if (kinds[i] == KindAll) != (kinds[j] == KindAll) {
				return kinds[i] == KindAll
			}
			return kinds[i] < kinds[j]
		})
		for _, k := range kinds {
			t := byKind[k]
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%d\t\n", k, t.Placed, rate(t.NotBound, t.Placed),
				rate(t.Moved, t.Placed), t.SameShape, t.Unplaced, rate(t.Pessimistic, t.Unplaced), t.PreBound)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(w, "\nfindings (%d):\n", len(r.Findings))
		for _, f := range r.Findings {
			fmt.Fprintln(w, "  "+f)
		}
	}
	return nil
}

func rate(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(of))
}

func orNone(s, why string) string {
	switch {
	case s != "":
		return s
	case why != "":
		return "nowhere (" + strings.TrimSpace(why) + ")"
	}
	return "nowhere"
}

func typeSuffix(t string) string {
	if t == "" {
		return ""
	}
	return " (" + t + ")"
}

func nominatedSuffix(p PodOutcome) string {
	if p.Nominated == "" {
		return ""
	}
	return ", nominated " + p.Nominated
}
