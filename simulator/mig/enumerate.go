package mig

import (
	"slices"
)

// candidate is a layout and its count vector, as Plan uses them.
type candidate struct {
	layout Layout
	c      counts
}

// derive enumerates the model's valid layouts once, at load: the maximal ones without +me, the
// maximal ones with exactly one +me instance, and the Plan candidates.
func (m *GPUModel) derive() {
	var plain, media []int
	for i := range m.Profiles {
		if m.Profiles[i].MediaExtensions {
			media = append(media, i)
		} else {
			plain = append(plain, i)
		}
	}
	valid := map[counts]bool{}
	m.enumerate(plain, 0, counts{}, valid)
	m.maximal = m.toLayouts(maximalOf(valid, plain))
	withMedia := map[counts]bool{}
	for c := range valid {
		for _, e := range media {
			c2 := c
			c2[e]++
			if m.fits(c2) {
				withMedia[c2] = true
			}
		}
	}
	m.media = m.toLayouts(maximalOf(withMedia, plain))
	m.layouts = m.withNamed(m.maximal)
	m.planCands = m.candidates(m.layouts)
	m.mediaCand = m.candidates(m.media)
}

// enumerate adds to valid every valid vector that extends c with profiles plain[k:]. Validity is
// closed under removing an instance, so the count of one profile stops at the first failure.
func (m *GPUModel) enumerate(plain []int, k int, c counts, valid map[counts]bool) {
	if k == len(plain) {
		valid[c] = true
		return
	}
	i := plain[k]
	for {
		m.enumerate(plain, k+1, c, valid)
		c[i]++
		if !m.fits(c) {
			return
		}
	}
}

// maximalOf returns the non-empty vectors of set to which no profile of plain can be added
// without leaving the set.
func maximalOf(set map[counts]bool, plain []int) []counts {
	var out []counts
	for c := range set {
		if c == (counts{}) {
			continue
		}
		maximal := true
		for _, i := range plain {
			c2 := c
			c2[i]++
			if set[c2] {
				maximal = false
				break
			}
		}
		if maximal {
			out = append(out, c)
		}
	}
	return out
}

// compareCounts is the layout order of Layouts: more instances of the largest profile first,
// then of the next largest, and so on (7g first, all-1g last), as in the table's listing.
func compareCounts(a, b counts) int {
	for i := maxProfiles - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return int(b[i]) - int(a[i])
		}
	}
	return 0
}

// toLayouts sorts vectors and places each; every vector must be valid.
func (m *GPUModel) toLayouts(cs []counts) []Layout {
	slices.SortFunc(cs, compareCounts)
	out := make([]Layout, 0, len(cs))
	for _, c := range cs {
		l, ok := m.place(c)
		if !ok {
			panic("mig: enumerated layout has no placement: " + m.Model)
		}
		out = append(out, l)
	}
	return out
}

// withNamed returns layouts plus the named layouts they lack, in layout order.
func (m *GPUModel) withNamed(layouts []Layout) []Layout {
	have := map[counts]bool{}
	cs := make([]counts, 0, len(layouts)+len(m.namedLay))
	for _, l := range layouts {
		c, _ := m.countsOf(l.Profiles)
		have[c] = true
		cs = append(cs, c)
	}
	for c := range m.named {
		if !have[c] {
			cs = append(cs, c)
		}
	}
	return m.toLayouts(cs)
}

// candidates converts layouts of the model to Plan candidates.
func (m *GPUModel) candidates(layouts []Layout) []candidate {
	out := make([]candidate, 0, len(layouts))
	for _, l := range layouts {
		c, _ := m.countsOf(l.Profiles)
		out = append(out, candidate{layout: l, c: c})
	}
	return out
}

// Layouts returns every maximal valid layout of non +me profiles plus the mig-parted named
// layouts that are not maximal (all-2g.10gb, all-4g.20gb, all-1g.5gb.me on A100-40GB), in a
// deterministic order: more of the largest profile first. The slice is shared; do not modify.
func (m *GPUModel) Layouts() []Layout { return m.layouts }

// MaximalLayouts returns only the maximal valid layouts of non +me profiles (no named extras).
func (m *GPUModel) MaximalLayouts() []Layout { return m.maximal }

// MediaLayouts returns the maximal valid layouts that hold exactly one +me instance; Plan uses
// them when the demand asks for a +me profile.
func (m *GPUModel) MediaLayouts() []Layout { return m.media }

// NamedLayout returns the mig-parted named layout of the model, e.g. "all-balanced".
func (m *GPUModel) NamedLayout(name string) (Layout, bool) {
	l, ok := m.namedLay[name]
	return l, ok
}
