package mig

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMaximalLayoutCounts pins the number of maximal layouts per model; every 8-slot model
// shares the A100 placement table and so has the same 28.
func TestMaximalLayoutCounts(t *testing.T) {
	want := map[string][3]int{ // maximal, Layouts() (maximal + non-maximal named), with one +me
		"A100-SXM4-40GB": {28, 31, 3}, "A100-80GB": {28, 31, 3}, "A30-24GB": {4, 6, 3},
		"H100-80GB": {28, 31, 3}, "H100-94GB": {28, 31, 3}, "GH200-96GB": {28, 31, 3},
		"GH200-144GB": {28, 31, 3}, "H200-141GB": {28, 31, 3}, "B200-180GB": {28, 31, 3},
	}
	got := map[string][3]int{}
	for _, m := range table(t).Models() {
		got[m.Model] = [3]int{len(m.MaximalLayouts()), len(m.Layouts()), len(m.MediaLayouts())}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layout counts (-want +got):\n%s", diff)
	}
}

// TestMaximalLayoutsMatchTable compares the enumeration with the table's derivedMaximalLayouts.
func TestMaximalLayoutsMatchTable(t *testing.T) {
	for _, m := range table(t).Models() {
		if len(m.derived) == 0 {
			continue
		}
		want := make([]string, len(m.derived))
		for i, d := range m.derived {
			want[i] = key(d)
		}
		want = sortedCopy(want)
		if diff := cmp.Diff(want, keys(m.MaximalLayouts())); diff != "" {
			t.Errorf("%s maximal layouts (-table +enumerated):\n%s", m.Model, diff)
		}
	}
}

// TestMaximalLayoutsOracle checks the enumeration against a naive one that tries every set of
// (profile, start slot) pairs with disjoint slots, then keeps the multisets within the compute
// and count limits that no profile can extend.
func TestMaximalLayoutsOracle(t *testing.T) {
	for _, m := range table(t).Models() {
		valid := naiveValid(m)
		var want []string
		for k, profiles := range valid {
			maximal := true
			for i := range m.Profiles {
				if !m.Profiles[i].MediaExtensions && valid[key(append(cloneProfiles(profiles), m.Profiles[i].Name))] != nil {
					maximal = false
				}
			}
			if maximal && k != "" {
				want = append(want, k)
			}
		}
		if diff := cmp.Diff(sortedCopy(want), keys(m.MaximalLayouts())); diff != "" {
			t.Errorf("%s (-oracle +enumerated):\n%s", m.Model, diff)
		}
	}
}

// naiveValid enumerates placements slot by slot: each slot is left empty or starts an
// instance of a non +me profile allowed there. Multisets are keyed with key.
func naiveValid(m *GPUModel) map[string][]MIGProfile {
	out := map[string][]MIGProfile{}
	var walk func(slot int, cur []MIGProfile)
	walk = func(slot int, cur []MIGProfile) {
		if slot >= m.TotalMemorySlots {
			if withinLimits(m, cur) {
				out[key(cur)] = cloneProfiles(cur)
			}
			return
		}
		walk(slot+1, cur)
		for _, p := range m.Profiles {
			if !p.MediaExtensions && containsInt(p.Starts, slot) {
				walk(slot+p.Size, append(cur, p.Name))
			}
		}
	}
	walk(0, nil)
	return out
}

func withinLimits(m *GPUModel, profiles []MIGProfile) bool {
	compute := 0
	n := map[MIGProfile]int{}
	for _, name := range profiles {
		p, _ := m.Profile(name)
		compute += p.ComputeSlices
		n[name]++
		if n[name] > p.MaxCount {
			return false
		}
	}
	return compute <= m.TotalComputeSlices
}

func cloneProfiles(p []MIGProfile) []MIGProfile { return append([]MIGProfile(nil), p...) }

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestLayoutsValidAndPlaced: every layout Layouts and MediaLayouts return passes Valid with the
// same placement, and its placement checks out independently.
func TestLayoutsValidAndPlaced(t *testing.T) {
	for _, m := range table(t).Models() {
		all := append(append([]Layout(nil), m.Layouts()...), m.MediaLayouts()...)
		for _, l := range all {
			got, err := m.Valid(l.Profiles)
			if err != nil {
				t.Errorf("%s %v: %v", m.Model, l.Profiles, err)
				continue
			}
			if diff := cmp.Diff(l, got); diff != "" {
				t.Errorf("%s: Valid changes the layout (-listed +valid):\n%s", m.Model, diff)
			}
			checkPlacement(t, m, l)
		}
	}
}

// TestLayoutsIncludeNamed: Layouts holds every named layout, maximal or not.
func TestLayoutsIncludeNamed(t *testing.T) {
	for _, m := range table(t).Models() {
		have := map[string]bool{}
		for _, k := range keys(m.Layouts()) {
			have[k] = true
		}
		for name, profiles := range m.NamedLayouts {
			if !have[key(profiles)] {
				t.Errorf("%s: Layouts lacks %s", m.Model, name)
			}
		}
	}
}

// TestLayoutsOrder pins the head and tail of the A100-40GB order: more of the largest profile
// first, and a fresh Load gives the same order.
func TestLayoutsOrder(t *testing.T) {
	m := model(t, "A100-40GB")
	l := m.Layouts()
	head := []string{key(l[0].Profiles), key(l[1].Profiles), key(l[2].Profiles)}
	want := []string{"7g.40gb×1", "3g.20gb×1+4g.20gb×1", "1g.10gb×1+2g.10gb×1+4g.20gb×1"}
	if diff := cmp.Diff(want, head); diff != "" {
		t.Errorf("head (-want +got):\n%s", diff)
	}
	if got := key(l[len(l)-1].Profiles); got != "1g.5gb×7" {
		t.Errorf("last layout %s, want all-1g.5gb", got)
	}
	fresh, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := fresh.Model("A100-40GB")
	if diff := cmp.Diff(m.Layouts(), m2.Layouts()); diff != "" {
		t.Errorf("Layouts differ between loads:\n%s", diff)
	}
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}
