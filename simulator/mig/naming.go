package mig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// customPrefix starts the name of a layout that mig-parted's defaults do not name.
const customPrefix = "custom-"

// enabledName is mig-parted's name for MIG enabled without instances (the empty layout).
const enabledName = "all-enabled"

// LayoutName returns the mig-parted style name of a layout: the named layout with the same
// profiles if there is one ("all-1g.10gb", "all-balanced", "all-1g.5gb.me"), "all-enabled" for
// the empty layout, else a custom name listing each profile in canonical order with its count,
// "+me" written ".me" so that the name is a valid label value:
// "custom-1g.10gb-x2-2g.20gb-x1-3g.40gb-x1". ParseLayoutSpec accepts every name it returns
// except all-enabled, which is no layout a pool can ask for.
func (m *GPUModel) LayoutName(l Layout) string {
	if len(l.Profiles) == 0 {
		return enabledName
	}
	if c, err := m.countsOf(l.Profiles); err == nil {
		if name, ok := m.named[c]; ok {
			return name
		}
	}
	ps := slices.Clone(l.Profiles)
	m.sortProfiles(ps)
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(customPrefix, "-"))
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j] == ps[i] {
			j++
		}
		fmt.Fprintf(&b, "-%s-x%d", labelSafe(ps[i]), j-i)
		i = j
	}
	return b.String()
}

// ParseLayoutSpec parses one entry of a pool's migLayouts: a mig-parted name of the model
// ("all-1g.10gb", "all-balanced"), a custom name as LayoutName writes it, or an explicit profile
// list ("1g.10gb,1g.10gb,2g.20gb", spaces allowed, ".me" accepted for "+me"). The layout is
// checked with Valid. It returns one layout; errors wrap a *LayoutError naming the bad profile
// or name.
func ParseLayoutSpec(m *GPUModel, spec string) ([]Layout, error) {
	spec = strings.TrimSpace(spec)
	profiles, err := specProfiles(m, spec)
	if err == nil {
		var l Layout
		l, err = m.Valid(profiles)
		if err == nil {
			return []Layout{l}, nil
		}
	}
	return nil, fmt.Errorf("migLayouts entry %q: %w", spec, err)
}

// specProfiles resolves a spec to a profile list without validating the layout.
func specProfiles(m *GPUModel, spec string) ([]MIGProfile, error) {
	if spec == "" {
		return nil, &LayoutError{Model: m.Model, Reason: EmptySpec}
	}
	if l, ok := m.namedLay[spec]; ok {
		return l.Profiles, nil
	}
	if rest, ok := strings.CutPrefix(spec, customPrefix); ok {
		return parseCustom(m, spec, rest)
	}
	var out []MIGProfile
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, &LayoutError{Model: m.Model, Reason: EmptySpec, Detail: "empty profile in the list"}
		}
		p := fromLabelSafe(f)
		if _, ok := m.index[p]; !ok {
			return nil, m.unknownInSpec(p)
		}
		out = append(out, p)
	}
	return out, nil
}

// unknownInSpec reports a spec word that is no profile; a word that looks like a layout name
// is reported as an unknown name.
func (m *GPUModel) unknownInSpec(p MIGProfile) error {
	if _, _, _, ok := parseProfileName(p); !ok && strings.HasPrefix(string(p), "all-") {
		return &LayoutError{Model: m.Model, Reason: UnknownLayoutName, Name: string(p),
			Detail: "the model's named layouts are " + strings.Join(m.namedLayoutNames(), ", ")}
	}
	return &LayoutError{Model: m.Model, Reason: UnknownProfile, Profile: p,
		Detail: "the model's profiles are " + m.profileNames()}
}

// parseCustom reads "<profile>-x<n>" pairs after the "custom-" prefix.
func parseCustom(m *GPUModel, spec, rest string) ([]MIGProfile, error) {
	parts := strings.Split(rest, "-")
	bad := &LayoutError{Model: m.Model, Reason: UnknownLayoutName, Name: spec,
		Detail: "a custom name is custom-<profile>-x<count>-..."}
	if len(parts)%2 != 0 {
		return nil, bad
	}
	var out []MIGProfile
	for i := 0; i < len(parts); i += 2 {
		p := fromLabelSafe(parts[i])
		if _, ok := m.index[p]; !ok {
			return nil, m.unknownInSpec(p)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(parts[i+1], "x"))
		if err != nil || n <= 0 || n > 255 || !strings.HasPrefix(parts[i+1], "x") {
			return nil, bad
		}
		for range n {
			out = append(out, p)
		}
	}
	return out, nil
}

// namedLayoutNames lists the model's named layouts in sorted order.
func (m *GPUModel) namedLayoutNames() []string {
	names := make([]string, 0, len(m.NamedLayouts))
	for n := range m.NamedLayouts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
