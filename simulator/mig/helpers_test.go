package mig

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// loadOnce shares one Table between tests; the Table is read-only.
var loadOnce = sync.OnceValues(Load)

// table returns the embedded table or stops the test.
func table(t testing.TB) *Table {
	t.Helper()
	tab, err := loadOnce()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tab
}

// model returns the table model for a catalog name or stops the test.
func model(t testing.TB, name string) *GPUModel {
	t.Helper()
	m, ok := table(t).Model(name)
	if !ok {
		t.Fatalf("no MIG model for %q", name)
	}
	return m
}

// ps builds a profile list: ps("3g.20gb", "1g.5gb").
func ps(names ...string) []MIGProfile {
	out := make([]MIGProfile, len(names))
	for i, n := range names {
		out[i] = MIGProfile(n)
	}
	return out
}

// rep repeats one profile n times.
func rep(name string, n int) []MIGProfile {
	out := make([]MIGProfile, n)
	for i := range out {
		out[i] = MIGProfile(name)
	}
	return out
}

// cat concatenates profile lists.
func cat(lists ...[]MIGProfile) []MIGProfile {
	var out []MIGProfile
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// key renders a profile multiset as "1g.5gb×2+3g.20gb×1" in sorted order, to compare layouts
// from different sources.
func key(profiles []MIGProfile) string {
	n := map[MIGProfile]int{}
	for _, p := range profiles {
		n[p]++
	}
	parts := make([]string, 0, len(n))
	for p, c := range n {
		parts = append(parts, fmt.Sprintf("%s×%d", p, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, "+")
}

// keys renders layouts with key, sorted.
func keys(layouts []Layout) []string {
	out := make([]string, len(layouts))
	for i, l := range layouts {
		out[i] = key(l.Profiles)
	}
	sort.Strings(out)
	return out
}

// checkPlacement verifies a layout's placement independently of the search: every instance
// starts at an allowed slot and no two instances share a memory slot.
func checkPlacement(t testing.TB, m *GPUModel, l Layout) {
	t.Helper()
	if len(l.Profiles) != len(l.Placements) {
		t.Fatalf("%s: %d profiles, %d placements", m.Model, len(l.Profiles), len(l.Placements))
	}
	used := make([]MIGProfile, m.TotalMemorySlots)
	for i, name := range l.Profiles {
		p, ok := m.Profile(name)
		if !ok {
			t.Fatalf("%s: unknown profile %s", m.Model, name)
		}
		start := l.Placements[i]
		if !containsInt(p.Starts, start) {
			t.Errorf("%s %v: %s starts at %d, allowed %v", m.Model, l.Profiles, name, start, p.Starts)
			continue
		}
		for s := start; s < start+p.Size; s++ {
			if used[s] != "" {
				t.Errorf("%s %v: slot %d used by %s and %s", m.Model, l.Profiles, s, used[s], name)
			}
			used[s] = name
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
