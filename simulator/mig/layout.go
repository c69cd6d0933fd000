package mig

import (
	"fmt"
	"slices"
)

// Layout is the MIG partitioning of one GPU: its instances' profiles in canonical order (see
// compareProfiles) and, at the same index, the memory slot each instance starts at.
type Layout struct {
	// Profiles are sorted canonically: smaller profiles first, +me after its plain twin.
	Profiles []MIGProfile
	// Placements[i] is the start memory slot of Profiles[i]; creating the instances at these
	// slots (largest first, as the MIG User Guide advises) reproduces the layout.
	Placements []int
}

// counts is a layout or a demand as a count per profile index of one model.
type counts [maxProfiles]uint8

// countsOf counts profiles by model index; an unknown profile is an UnknownProfile error.
func (m *GPUModel) countsOf(profiles []MIGProfile) (counts, error) {
	var c counts
	for _, p := range profiles {
		i, ok := m.index[p]
		if !ok {
			return c, &LayoutError{Model: m.Model, Reason: UnknownProfile, Profile: p,
				Detail: "the model's profiles are " + m.profileNames()}
		}
		if c[i] == 255 {
			return c, m.tooMany(i)
		}
		c[i]++
	}
	return c, nil
}

// sortProfiles sorts profiles of the model in canonical order (unknown names last, by name).
func (m *GPUModel) sortProfiles(ps []MIGProfile) {
	slices.SortFunc(ps, func(a, b MIGProfile) int {
		ia, oka := m.index[a]
		ib, okb := m.index[b]
		switch {
		case oka && okb:
			return ia - ib
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return compareProfileNames(a, b)
	})
}

// Valid checks that the profiles can be created together on one GPU of the model and returns
// the layout with a concrete placement. The checks, in order: every profile exists on the model
// (UnknownProfile), no profile exceeds its MaxCount (TooMany), at most one +me instance and no
// 1g +me next to another 1g instance (MediaExtensionConflict), compute slices within the GPU
// (ComputeExceeded), and a placement at allowed start slots with disjoint memory slots
// (NoPlacement). The error is a *LayoutError. An empty list is valid (MIG enabled, no instance).
func (m *GPUModel) Valid(profiles []MIGProfile) (Layout, error) {
	c, err := m.countsOf(profiles)
	if err != nil {
		return Layout{}, err
	}
	if err := m.checkRules(c); err != nil {
		return Layout{}, err
	}
	l, ok := m.place(c)
	if !ok {
		return Layout{}, &LayoutError{Model: m.Model, Reason: NoPlacement,
			Detail: fmt.Sprintf("%v does not fit the %d memory slots at the allowed start slots", m.expandCounts(c), m.TotalMemorySlots)}
	}
	return l, nil
}

// checkRules applies every rule except placement to a count vector.
func (m *GPUModel) checkRules(c counts) error {
	compute, media, media1g, plain1g := 0, 0, 0, 0
	for i := range m.Profiles {
		p := &m.Profiles[i]
		n := int(c[i])
		if n > p.MaxCount {
			return m.tooMany(i)
		}
		compute += n * p.ComputeSlices
		switch {
		case p.MediaExtensions && p.ComputeSlices == 1:
			media, media1g = media+n, media1g+n
		case p.MediaExtensions:
			media += n
		case p.ComputeSlices == 1:
			plain1g += n
		}
		if media > 1 {
			return &LayoutError{Model: m.Model, Reason: MediaExtensionConflict, Profile: p.Name,
				Detail: "at most one +me instance per GPU"}
		}
	}
	if media1g > 0 && plain1g > 0 {
		return &LayoutError{Model: m.Model, Reason: MediaExtensionConflict, Profile: m.mediaProfile(c),
			Detail: "a 1g +me instance cannot share the GPU with another 1g instance (mig-parted)"}
	}
	if compute > m.TotalComputeSlices {
		return &LayoutError{Model: m.Model, Reason: ComputeExceeded,
			Detail: fmt.Sprintf("%d compute slices, the GPU has %d", compute, m.TotalComputeSlices)}
	}
	return nil
}

func (m *GPUModel) tooMany(i int) error {
	p := &m.Profiles[i]
	return &LayoutError{Model: m.Model, Reason: TooMany, Profile: p.Name,
		Detail: fmt.Sprintf("at most %d per GPU", p.MaxCount)}
}

// mediaProfile returns the +me profile present in c.
func (m *GPUModel) mediaProfile(c counts) MIGProfile {
	for i := range m.Profiles {
		if c[i] > 0 && m.Profiles[i].MediaExtensions {
			return m.Profiles[i].Name
		}
	}
	return ""
}

// expandCounts lists the profiles of c in canonical order.
func (m *GPUModel) expandCounts(c counts) []MIGProfile {
	var out []MIGProfile
	for i := range m.Profiles {
		for range c[i] {
			out = append(out, m.Profiles[i].Name)
		}
	}
	return out
}

// place searches start slots for the instances of c, largest instance first and lowest start
// first, by backtracking; instances of one profile take increasing starts so that equal
// assignments are not tried twice. It reports false when no placement keeps the slots disjoint.
func (m *GPUModel) place(c counts) (Layout, bool) {
	profiles := m.expandCounts(c)
	idx := make([]int, len(profiles))
	for k, p := range profiles {
		idx[k] = m.index[p]
	}
	order := make([]int, len(profiles)) // positions in profiles, in search order
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := &m.Profiles[idx[a]], &m.Profiles[idx[b]]
		if pa.Size != pb.Size {
			return pb.Size - pa.Size
		}
		if len(pa.Starts) != len(pb.Starts) {
			return len(pa.Starts) - len(pb.Starts)
		}
		return idx[a] - idx[b]
	})
	starts := make([]int, len(profiles))
	if !m.backtrack(order, idx, starts, 0, 0) {
		return Layout{}, false
	}
	return Layout{Profiles: profiles, Placements: starts}, true
}

// backtrack places order[k:] on the free slots of used (a bit per memory slot).
func (m *GPUModel) backtrack(order, idx, starts []int, k int, used uint64) bool {
	if k == len(order) {
		return true
	}
	pos := order[k]
	p := &m.Profiles[idx[pos]]
	mask := uint64(1)<<p.Size - 1
	minStart := -1
	if k > 0 && idx[order[k-1]] == idx[pos] {
		minStart = starts[order[k-1]]
	}
	for _, s := range p.Starts {
		if s <= minStart || used&(mask<<s) != 0 {
			continue
		}
		starts[pos] = s
		if m.backtrack(order, idx, starts, k+1, used|mask<<s) {
			return true
		}
	}
	return false
}

// fits reports whether c is a valid layout (all rules and a placement).
func (m *GPUModel) fits(c counts) bool {
	if m.checkRules(c) != nil {
		return false
	}
	_, ok := m.place(c)
	return ok
}
