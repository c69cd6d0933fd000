package policy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api"
)

// Team is a set of namespaces sharing limits on what Tiler buys for their pending pods, and
// optionally the pools it may buy from. A team names its namespaces, selects them by label (which
// needs the Namespace objects in the snapshot or cluster), or both; a namespace belongs to at most
// one team.
type Team struct {
	Name       string   `json:"name"`
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceSelector selects namespaces by their labels.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Limits            TeamLimits            `json:"limits,omitempty"`
	// Pools are the pools Tiler may buy from for the team's pods; empty means all.
	Pools []string `json:"pools,omitempty"`
}

// TeamLimits bound a team. A zero or absent value means no limit, except GPUs where nil means no
// limit and 0 means no GPU at all. See the simulator's team accounting (simulator/teams.go) for
// how each is counted.
type TeamLimits struct {
	// GPUs caps the nvidia.com/gpu requested by the team's running and planned pods.
	GPUs *int `json:"gpus,omitempty"`
	// MIGProfiles caps, per MIG profile (e.g. "1g.10gb"), the nvidia.com/mig-<profile> requested by
	// the team's running and planned pods.
	MIGProfiles map[string]int `json:"migProfiles,omitempty"`
	// GPUsByModel caps, per GPU model (the tiler.dev/gpu-model label's value, e.g. "H100"), the
	// whole GPUs the team's running and planned pods take on nodes of that model: nvidia.com/gpu
	// requested, and GPUs held through DRA claims. It is checked on the plan, since a pod's model
	// is its node's: pods over it are planned on other models, or reported.
	GPUsByModel map[string]int `json:"gpusByModel,omitempty"`
	// MaxPricePerHour caps the team's chargeback share of the fleet's $/h after the plan.
	MaxPricePerHour float64 `json:"maxPricePerHour,omitempty"`
	// MaxNodes caps the number of nodes holding at least one of the team's pods after the plan.
	MaxNodes int `json:"maxNodes,omitempty"`
}

// migProfileRE matches MIG profile names: 1g.10gb, 1g.10gb+me, 7g.80gb, 1c.3g.40gb.
var migProfileRE = regexp.MustCompile(`^(\d+c\.)?\d+g\.\d+gb(\+me)?$`)

func (p *CostPolicy) validateTeams() error {
	names := map[string]int{}
	owner := map[string]int{}
	pools := map[string]bool{}
	for _, pl := range p.Pools {
		pools[pl.Name] = true
	}
	for i := range p.Teams {
		t := &p.Teams[i]
		if err := t.validate(pools); err != nil {
			return fmt.Errorf("policy: teams[%d].%w", i, err)
		}
		if j, dup := names[t.Name]; dup {
			return fmt.Errorf("policy: teams[%d].name %q is already used by teams[%d]", i, t.Name, j)
		}
		names[t.Name] = i
		for k, ns := range t.Namespaces {
			if j, dup := owner[ns]; dup {
				return fmt.Errorf("policy: teams[%d].namespaces[%d] %q already belongs to team %q (teams[%d])", i, k, ns, p.Teams[j].Name, j)
			}
			owner[ns] = i
		}
	}
	return nil
}

func (t *Team) validate(pools map[string]bool) error {
	if errs := validation.IsDNS1123Label(t.Name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", t.Name, errs[0])
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		return fmt.Errorf("namespaces: team %q needs namespaces or a namespaceSelector", t.Name)
	}
	seen := map[string]bool{}
	for k, ns := range t.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("namespaces[%d] %q: %s", k, ns, errs[0])
		}
		if seen[ns] {
			return fmt.Errorf("namespaces[%d] %q is listed twice", k, ns)
		}
		seen[ns] = true
	}
	if t.NamespaceSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
			return fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	for k, name := range t.Pools {
		if !pools[name] {
			return fmt.Errorf("pools[%d] %q is not a pool of the policy", k, name)
		}
	}
	l := t.Limits
	switch {
	case l.GPUs != nil && *l.GPUs < 0:
		return fmt.Errorf("limits.gpus must not be negative")
	case l.MaxPricePerHour < 0:
		return fmt.Errorf("limits.maxPricePerHour must not be negative")
	case !(l.MaxPricePerHour <= maxPrice): // also NaN
		return fmt.Errorf("limits.maxPricePerHour %g must be at most %g", l.MaxPricePerHour, float64(maxPrice))
	case l.MaxNodes < 0:
		return fmt.Errorf("limits.maxNodes must not be negative")
	}
	models := make([]string, 0, len(l.GPUsByModel))
	for m := range l.GPUsByModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		if errs := validation.IsValidLabelValue(m); m == "" || len(errs) > 0 {
			return fmt.Errorf("limits.gpusByModel: %q is not a GPU model as the label %s carries it (e.g. H100, L4)", m, api.LabelGPUModel)
		}
		if l.GPUsByModel[m] < 0 {
			return fmt.Errorf("limits.gpusByModel[%s] must not be negative", m)
		}
	}
	profiles := make([]string, 0, len(l.MIGProfiles))
	for prof := range l.MIGProfiles {
		profiles = append(profiles, prof)
	}
	sort.Strings(profiles)
	for _, prof := range profiles {
		if !migProfileRE.MatchString(prof) {
			return fmt.Errorf("limits.migProfiles: %q is not a MIG profile (e.g. 1g.10gb, 3g.40gb)", prof)
		}
		if l.MIGProfiles[prof] < 0 {
			return fmt.Errorf("limits.migProfiles[%s] must not be negative", prof)
		}
	}
	return nil
}

// TeamResolver tells the team of a namespace.
type TeamResolver struct {
	teams     []Team
	selectors []labels.Selector
	byName    map[string]int
}

// NewTeamResolver prepares the policy's teams for lookups. The policy must be valid.
func (p *CostPolicy) NewTeamResolver() *TeamResolver {
	r := &TeamResolver{teams: p.Teams, selectors: make([]labels.Selector, len(p.Teams)), byName: map[string]int{}}
	for i, t := range p.Teams {
		for _, ns := range t.Namespaces {
			r.byName[ns] = i
		}
		if t.NamespaceSelector != nil {
			r.selectors[i], _ = metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		}
	}
	return r
}

// TeamOf returns the team of the namespace (nil when it has none) given the namespace's labels
// (nil when its Namespace object is unknown: only the named namespaces then match). A namespace
// that two teams claim (one by name and another by selector, or two selectors) is an error naming
// both.
func (r *TeamResolver) TeamOf(ns string, nsLabels map[string]string) (*Team, error) {
	var found []int
	if i, ok := r.byName[ns]; ok {
		found = append(found, i)
	}
	if nsLabels != nil {
		for i, sel := range r.selectors {
			if sel != nil && sel.Matches(labels.Set(nsLabels)) && (len(found) == 0 || found[0] != i) {
				found = append(found, i)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &r.teams[found[0]], nil
	}
	names := make([]string, len(found))
	for k, i := range found {
		names[k] = fmt.Sprintf("%q (teams[%d])", r.teams[i].Name, i)
	}
	return nil, fmt.Errorf("policy: namespace %q belongs to several teams: %s", ns, strings.Join(names, ", "))
}

// AllowsPool reports whether the team may buy from the pool.
func (t *Team) AllowsPool(pool string) bool {
	if len(t.Pools) == 0 {
		return true
	}
	for _, p := range t.Pools {
		if p == pool {
			return true
		}
	}
	return false
}
