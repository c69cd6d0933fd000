package fidelity

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/internal/golden"
)

// Scenario is one differential test case: the cluster objects (existing nodes, the pods bound to
// them, the pending pods, DaemonSets and DRA objects), the cost policy and the catalog to buy from.
type Scenario struct {
	// Name identifies the scenario in reports, e.g. "seed-17".
	Name string
	// Seed is the generator seed the scenario came from (0 for a hand-written one).
	Seed uint64
	// Catalog names the embedded catalog (catalog.Embedded).
	Catalog string
	// Policy is the CostPolicy YAML document; empty means the default policy.
	Policy string
	// Snapshot holds the objects. Pods with spec.nodeName are bound to an existing node; the
	// others are the pending pods. Namespaced objects use Namespace; the harness moves them to a
	// namespace of its own per run.
	Snapshot *snapshot.Snapshot
	// Description says what the scenario shows (free text, kept in regression files).
	Description string
	// Skip, when set, names the known bug that keeps this regression case from passing; the
	// regression test skips the scenario with it.
	Skip string
	// Accept lists the verdicts (VerdictMoved, VerdictNotBound, VerdictPessimistic) a regression
	// case documents as a deliberate difference between the simulation and the scheduler; the
	// regression test does not fail on them.
	Accept []Verdict
	// Modes lists the modes (ModeOn, ModeNominations, ModeOff) a regression case runs in; empty
	// means ModeOn and ModeOff.
	Modes []string
}

// Mode is how the controller tells the scheduler what it planned: ModeOn (the production
// default: nominations and node reservations), ModeNominations (nominations only) or ModeOff
// (neither), so that the effect of each can be measured.
type Mode string

const (
	ModeOn          Mode = "on"
	ModeNominations Mode = "nominations"
	ModeOff         Mode = "off"
)

// AllModes lists the modes in report order.
var AllModes = []Mode{ModeOn, ModeNominations, ModeOff}

// Nominate reports whether the mode sets nominations (provisioner.Config.Nominate).
func (m Mode) Nominate() bool { return m == ModeOn || m == ModeNominations }

// Reserve reports whether the mode reserves bought nodes (provisioner.Config.Reserve).
func (m Mode) Reserve() bool { return m == ModeOn }

// Describe says what the mode turns on.
func (m Mode) Describe() string {
	switch m {
	case ModeOn:
		return "nominations and reservations"
	case ModeNominations:
		return "nominations only"
	}
	return "neither nominations nor reservations"
}

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range AllModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("mode %q is not one of on, nominations, off", s)
}

// RunModes returns the modes the scenario runs in, from Modes.
func (s *Scenario) RunModes() []Mode {
	if len(s.Modes) == 0 {
		return []Mode{ModeOn, ModeOff}
	}
	var out []Mode
	for _, m := range s.Modes {
		out = append(out, Mode(m))
	}
	return out
}

// Namespace is the namespace generated and regression scenarios put their objects in.
const Namespace = "fidelity"

// Pending returns the pending pods of the scenario, in order.
func (s *Scenario) Pending() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range s.Snapshot.Pods {
		if p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// ParsedPolicy returns the scenario's cost policy, or nil for the default one.
func (s *Scenario) ParsedPolicy() (*policy.CostPolicy, error) {
	if strings.TrimSpace(s.Policy) == "" {
		return nil, nil
	}
	p, err := policy.Parse([]byte(s.Policy))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return p, nil
}

// LoadCatalog returns the scenario's embedded catalog.
func (s *Scenario) LoadCatalog() (*catalog.Catalog, error) {
	cat, err := catalog.Embedded(s.Catalog)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: catalog: %w", s.Name, err)
	}
	return cat, nil
}

// meta is the "-- meta --" section of a scenario file.
type meta struct {
	Name    string    `json:"name"`
	Seed    uint64    `json:"seed,omitempty"`
	Catalog string    `json:"catalog"`
	Skip    string    `json:"skip,omitempty"`
	Accept  []Verdict `json:"accept,omitempty"`
	Modes   []string  `json:"modes,omitempty"`
}

// Encode renders the scenario as a sectioned text file: the description, then "-- meta --"
// (name, seed, catalog, skip, accept, modes), "-- policy.yaml --" (when set) and "-- objects.yaml --"
// (a v1 List of every object).
func (s *Scenario) Encode() ([]byte, error) {
	var file golden.File
	if desc := strings.TrimSpace(s.Description); desc != "" {
		file.Head = desc + "\n"
	}
	m, err := yaml.Marshal(meta{Name: s.Name, Seed: s.Seed, Catalog: s.Catalog, Skip: s.Skip, Accept: s.Accept, Modes: s.Modes})
	if err != nil {
		return nil, fmt.Errorf("encoding scenario %s meta: %w", s.Name, err)
	}
	file.Set("meta", string(m))
	if p := strings.TrimSpace(s.Policy); p != "" {
		file.Set("policy.yaml", p+"\n")
	}
	objs, err := encodeObjects(s.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("encoding scenario %s objects: %w", s.Name, err)
	}
	file.Set("objects.yaml", string(objs))
	return []byte(file.Format()), nil
}

// DecodeScenario reads a scenario written by Encode (or by hand in the same format). Errors name
// the section.
func DecodeScenario(data []byte) (*Scenario, error) {
	file := golden.Parse(string(data))
	var m meta
	if err := yaml.UnmarshalStrict([]byte(file.Text("meta")), &m); err != nil {
		return nil, fmt.Errorf("section meta: %w", err)
	}
	if m.Catalog == "" {
		m.Catalog = "aws-us-east-1"
	}
	for _, v := range m.Accept {
		if v != VerdictMoved && v != VerdictNotBound && v != VerdictPessimistic {
			return nil, fmt.Errorf("section meta: accept: %q is not %s, %s or %s", v, VerdictMoved, VerdictNotBound, VerdictPessimistic)
		}
	}
	for _, v := range m.Modes {
		if _, err := ParseMode(v); err != nil {
			return nil, fmt.Errorf("section meta: modes: %w", err)
		}
	}
	objs, ok := file.Get("objects.yaml")
	if !ok {
		return nil, fmt.Errorf("section objects.yaml is missing")
	}
	snap, err := snapshot.Decode(strings.NewReader(objs))
	if err != nil {
		return nil, fmt.Errorf("section objects.yaml: %w", err)
	}
	s := &Scenario{Name: m.Name, Seed: m.Seed, Catalog: m.Catalog, Skip: m.Skip, Accept: m.Accept, Modes: m.Modes,
		Policy: file.Text("policy.yaml"), Snapshot: snap, Description: strings.TrimSpace(file.Head)}
	if _, err := s.ParsedPolicy(); err != nil {
		return nil, fmt.Errorf("section policy.yaml: %w", err)
	}
	return s, nil
}

// encodeObjects renders the snapshot's objects as one v1 List, in a stable order: PriorityClasses,
// DeviceClasses, nodes, DaemonSets, ResourceClaimTemplates, then pods (bound first, then pending,
// by name).
func encodeObjects(s *snapshot.Snapshot) ([]byte, error) {
	var items []any
	add := func(o runtime.Object, apiVersion, kind string) {
		o.GetObjectKind().SetGroupVersionKind(gvk(apiVersion, kind))
		items = append(items, o)
	}
	for _, o := range s.PriorityClasses {
		add(o.DeepCopy(), schedulingv1.SchemeGroupVersion.String(), "PriorityClass")
	}
	for _, o := range s.DeviceClasses {
		add(o.DeepCopy(), resourcev1.SchemeGroupVersion.String(), "DeviceClass")
	}
	for _, o := range s.Nodes {
		add(o.DeepCopy(), "v1", "Node")
	}
	for _, o := range s.DaemonSets {
		add(o.DeepCopy(), appsv1.SchemeGroupVersion.String(), "DaemonSet")
	}
	for _, o := range s.ResourceClaimTemplates {
		add(o.DeepCopy(), resourcev1.SchemeGroupVersion.String(), "ResourceClaimTemplate")
	}
	pods := append([]*corev1.Pod(nil), s.Pods...)
	sort.SliceStable(pods, func(i, j int) bool {
		bi, bj := pods[i].Spec.NodeName != "", pods[j].Spec.NodeName != ""
		if bi != bj {
			return bi
		}
		return pods[i].Name < pods[j].Name
	})
	for _, o := range pods {
		p := o.DeepCopy()
		p.Status = corev1.PodStatus{}
		add(p, "v1", "Pod")
	}
	return yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}
