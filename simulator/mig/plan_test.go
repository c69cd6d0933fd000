package mig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// d builds a demand: d("1g.5gb", 7, "3g.20gb", 1).
func d(pairs ...any) map[MIGProfile]int {
	out := map[MIGProfile]int{}
	for i := 0; i < len(pairs); i += 2 {
		out[MIGProfile(pairs[i].(string))] = pairs[i+1].(int)
	}
	return out
}

// names repeats a layout name n times.
func names(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name
	}
	return out
}

// Weights (8·compute + memory slots): A100-40GB 1g.5gb 9, 1g.10gb 10, 2g.10gb 18, 3g.20gb 28,
// 4g.20gb 36, 7g.40gb 64; H100 1g.10gb 9, 1g.20gb 10, 2g.20gb 18, 3g.40gb 28, 4g.40gb 36,
// 7g.80gb 64. Spare counts double for profiles in the demand.
func TestPlan(t *testing.T) {
	cases := []struct {
		name     string
		model    string
		demand   map[MIGProfile]int
		gpus     int
		allowed  []string
		want     []string // LayoutName per GPU
		leftover map[MIGProfile]int
	}{
		// Seed: 7 × 1g.5gb = 7 of 7 compute slices, slots 0..6; only all-1g.5gb holds seven.
		{"seven 1g.5gb share one A100", "A100-40GB", d("1g.5gb", 7), 1, nil, []string{"all-1g.5gb"}, nil},
		// One GPU serves the seven; the idle seven get the layout closest to the mix (all 1g.5gb).
		{"seven 1g.5gb on p4d", "A100-40GB", d("1g.5gb", 7), 8, nil, names("all-1g.5gb", 8), nil},
		{"eighth 1g.5gb left over", "A100-40GB", d("1g.5gb", 8), 1, nil, []string{"all-1g.5gb"}, d("1g.5gb", 1)},
		// 3+3+4 = 10 compute > 7: two GPUs. Covering pairs: 4g+3g twice spares a 4g (36×2 = 72),
		// 4g+3g with 3g+3g spares a 3g (28×2 = 56), with 3g+2g+2g spares 2×2g (36): 4g+3g twice.
		{"4g+3g needs two GPUs", "A100-40GB", d("3g.20gb", 2, "4g.20gb", 1), 2, nil,
			names("custom-3g.20gb-x1-4g.20gb-x1", 2), nil},
		// 3 + 2·2 + 4·1 = 11 compute: two GPUs. 3g+2g×2 with 3g+1g.5gb×4, and all-balanced
		// twice, both hold 2×3g + 2×2g + 4×1g.5gb: one spare 3g (28×2 = 56), the best spare.
		// All-balanced twice is one layout instead of two, so it wins.
		{"3-2-2-1-1-1-1 on two GPUs", "A100-40GB", d("3g.20gb", 1, "2g.10gb", 2, "1g.5gb", 4), 2, nil,
			names("all-balanced", 2), nil},
		// H100 has no 1g.5gb. The 1g.10gb goes on all-1g.10gb: 6 spare × 9 × 2 = 108 beats
		// 1g.20gb+6×1g.10gb (10 + 5×18 = 100).
		{"unknown profile left over", "H100", d("1g.5gb", 2, "1g.10gb", 1), 1, nil, []string{"all-1g.10gb"}, d("1g.5gb", 2)},
		// No allowed layout has a 1g.5gb; the idle GPU gets the only allowed layout.
		{"restricted to migLayouts", "A100-40GB", d("1g.5gb", 2, "3g.20gb", 1), 2, []string{"all-3g.20gb"},
			names("all-3g.20gb", 2), d("1g.5gb", 2)},
		{"no demand: all-balanced", "A100-40GB", nil, 2, nil, names("all-balanced", 2), nil},
		{"non-positive counts ignored", "A100-40GB", d("1g.5gb", -3, "3g.20gb", 0), 1, nil, []string{"all-balanced"}, nil},
		// +me (1) + 3 × 2g (6) = 7 compute: 2g at 0, 2, 4 and +me at 6.
		{"+me with three 2g", "A100-40GB", d("1g.5gb+me", 1, "2g.10gb", 3), 1, nil,
			[]string{"custom-1g.5gb.me-x1-2g.10gb-x3"}, nil},
		// The +me may not share a GPU with 1g.5gb: one GPU serves the six 1g.5gb (54) and the
		// +me (9) is left; with two GPUs the +me goes on +me+2g+4g (spare 18 + 36 = 54, tied with
		// +me+3×2g, first in order).
		{"+me apart from 1g, one GPU", "A100-40GB", d("1g.5gb+me", 1, "1g.5gb", 6), 1, nil,
			[]string{"all-1g.5gb"}, d("1g.5gb+me", 1)},
		{"+me apart from 1g, two GPUs", "A100-40GB", d("1g.5gb+me", 1, "1g.5gb", 6), 2, nil,
			[]string{"all-1g.5gb", "custom-1g.5gb.me-x1-2g.10gb-x1-4g.20gb-x1"}, nil},
		{"more than the node holds", "A30", d("4g.24gb", 3), 2, nil, names("all-4g.24gb", 2), d("4g.24gb", 1)},
		// 5×3 + 10×1 + 2×2 = 29 compute → at least 5 GPUs (29/7); 5 are used: 3g 1+1+1+1+1,
		// 2g 2+1+1 ≥ 2, 1g 2+2+4+4 ≥ 10. The idle three get all-balanced, the closest mix.
		{"mixed H100 on p5", "H100", d("3g.40gb", 5, "1g.10gb", 10, "2g.20gb", 2), 8, nil,
			[]string{"custom-2g.20gb-x2-3g.40gb-x1", "all-balanced", "all-balanced", "custom-1g.10gb-x4-3g.40gb-x1",
				"custom-1g.10gb-x4-3g.40gb-x1", "all-balanced", "all-balanced", "all-balanced"}, nil},
		// Demand weight 3×64 + 2×36 + 3×28 + 5×18 + 20×9 = 618; a GPU holds at most 64 and only
		// 7g, 4g+3g, 3g+2g+2g reach it: 3 + 2 + 1 GPUs at 64, then two at 63 (1g×5+2g) = 510,
		// the maximum. What is left is the lightest demand.
		{"overflow keeps the heavy profiles", "H100", d("7g.80gb", 3, "4g.40gb", 2, "3g.40gb", 3, "2g.20gb", 5, "1g.10gb", 20), 8, nil,
			[]string{"all-7g.80gb", "all-7g.80gb", "all-7g.80gb", "custom-3g.40gb-x1-4g.40gb-x1", "custom-3g.40gb-x1-4g.40gb-x1",
				"custom-2g.20gb-x2-3g.40gb-x1", "custom-1g.10gb-x5-2g.20gb-x1", "custom-1g.10gb-x5-2g.20gb-x1"},
			d("1g.10gb", 10, "2g.20gb", 1)},
		{"no GPUs", "H100", d("1g.10gb", 1), 0, nil, nil, d("1g.10gb", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := model(t, tc.model)
			allowed := parseSpecs(t, m, tc.allowed)
			perGPU, left := m.Plan(tc.demand, tc.gpus, allowed)
			var got []string
			for _, l := range perGPU {
				got = append(got, m.LayoutName(l))
				checkPlacement(t, m, l)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("layouts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.leftover, left); diff != "" {
				t.Errorf("leftover (-want +got):\n%s", diff)
			}
		})
	}
}

// parseSpecs turns migLayouts entries into layouts; nil stays nil (no restriction).
func parseSpecs(t testing.TB, m *GPUModel, specs []string) []Layout {
	t.Helper()
	if specs == nil {
		return nil
	}
	out := []Layout{}
	for _, s := range specs {
		l, err := ParseLayoutSpec(m, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l...)
	}
	return out
}

// TestPlanEmptyAllowed: a pool that allows no layout gets empty layouts and all demand back.
func TestPlanEmptyAllowed(t *testing.T) {
	m := model(t, "H100")
	perGPU, left := m.Plan(d("1g.10gb", 2), 2, []Layout{})
	if diff := cmp.Diff([]Layout{{}, {}}, perGPU); diff != "" {
		t.Errorf("layouts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(d("1g.10gb", 2), left); diff != "" {
		t.Errorf("leftover (-want +got):\n%s", diff)
	}
}

// TestPlanDeterministic: repeated calls (map iteration order varies) give identical plans.
func TestPlanDeterministic(t *testing.T) {
	m := model(t, "A100-40GB")
	demand := d("1g.5gb", 5, "1g.10gb", 3, "2g.10gb", 4, "3g.20gb", 2, "4g.20gb", 1)
	first, firstLeft := m.Plan(demand, 8, nil)
	for range 20 {
		got, left := m.Plan(demand, 8, nil)
		if diff := cmp.Diff(first, got); diff != "" {
			t.Fatalf("plans differ (-first +got):\n%s", diff)
		}
		if diff := cmp.Diff(firstLeft, left); diff != "" {
			t.Fatalf("leftovers differ (-first +got):\n%s", diff)
		}
	}
}

// BenchmarkPlan times Plan on the node shapes the simulator asks about (p4d/p5: 8 GPUs) and
// reports ns/plan, the GPUs that serve demand and the share of the demand's weight covered.
func BenchmarkPlan(b *testing.B) {
	cases := []struct {
		name, model string
		demand      map[MIGProfile]int
		gpus        int
		allowed     []string
	}{
		{"seed-1gpu", "A100-40GB", d("1g.5gb", 7), 1, nil},
		{"seed-8gpu", "A100-40GB", d("1g.5gb", 7), 8, nil},
		{"pair-8gpu", "A100-40GB", d("3g.20gb", 1, "2g.10gb", 2, "1g.5gb", 4), 8, nil},
		{"mixed-8gpu", "H100", d("3g.40gb", 5, "1g.10gb", 10, "2g.20gb", 2), 8, nil},
		{"overflow-8gpu", "H100", d("7g.80gb", 3, "4g.40gb", 2, "3g.40gb", 3, "2g.20gb", 5, "1g.10gb", 20), 8, nil},
		{"media-8gpu", "A100-40GB", d("1g.5gb+me", 2, "2g.10gb", 5, "3g.20gb", 2), 8, nil},
		{"allowed-8gpu", "H100", d("1g.10gb", 9, "3g.40gb", 3), 8, []string{"all-1g.10gb", "all-balanced", "all-3g.40gb"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m := model(b, tc.model)
			allowed := parseSpecs(b, m, tc.allowed)
			if perGPU, _ := m.Plan(tc.demand, tc.gpus, allowed); len(perGPU) != tc.gpus {
				b.Fatalf("Plan returned %d GPUs, want %d", len(perGPU), tc.gpus)
			}
			used, covered := planStats(m, tc.demand, tc.gpus, allowed)
			for b.Loop() {
				m.Plan(tc.demand, tc.gpus, allowed)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/plan")
			b.ReportMetric(float64(used), "gpus-used")
			b.ReportMetric(covered, "covered-frac")
		})
	}
}

// planStats reruns the search to count the GPUs that serve demand and the covered weight share.
func planStats(m *GPUModel, demand map[MIGProfile]int, gpus int, allowed []Layout) (int, float64) {
	rem, _ := m.demandVector(demand)
	p := planner{m: m, cands: m.planCandidates(allowed, rem), mix: rem}
	used, rest := p.search(rem, gpus)
	if total := p.weightOf(rem); total > 0 {
		return len(used), float64(total-p.weightOf(rest)) / float64(total)
	}
	return len(used), 1
}
