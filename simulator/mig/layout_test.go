package mig

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestValid(t *testing.T) {
	cases := []struct {
		name     string
		model    string
		profiles []MIGProfile
		want     Layout // when reason is 0
		reason   Reason
		blame    MIGProfile
	}{
		// Seed: 7 × 1g.5gb = 7 compute slices on slots 0..6 (1g.5gb may not start at slot 7).
		{"seven 1g.5gb", "A100-40GB", rep("1g.5gb", 7),
			Layout{Profiles: rep("1g.5gb", 7), Placements: []int{0, 1, 2, 3, 4, 5, 6}}, 0, ""},
		{"eight 1g.5gb", "A100-40GB", rep("1g.5gb", 8), Layout{}, TooMany, "1g.5gb"},
		// 3g.20gb takes 4 of 8 slots: two fill the GPU (6 of 7 compute slices).
		{"3g+3g", "A100-40GB", rep("3g.20gb", 2), Layout{Profiles: rep("3g.20gb", 2), Placements: []int{0, 4}}, 0, ""},
		// 3 + 3 + 1 = 7 compute slices fit, but 4 + 4 + 1 = 9 memory slots do not.
		{"3g+3g+1g", "A100-40GB", cat(rep("3g.20gb", 2), ps("1g.5gb")), Layout{}, NoPlacement, ""},
		// 4g.20gb may only start at 0, so 3g.20gb must take 4.
		{"4g+3g", "A100-40GB", ps("4g.20gb", "3g.20gb"), Layout{Profiles: ps("3g.20gb", "4g.20gb"), Placements: []int{4, 0}}, 0, ""},
		{"4g+4g", "A100-40GB", rep("4g.20gb", 2), Layout{}, TooMany, "4g.20gb"},
		// 3g@0 leaves 2g@4 + 1g@6 and slot 7, which 1g.5gb cannot use: 3g must move to 4.
		{"3-2-1-1", "A100-40GB", ps("1g.5gb", "3g.20gb", "1g.5gb", "2g.10gb"),
			Layout{Profiles: ps("1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"), Placements: []int{2, 3, 0, 4}}, 0, ""},
		// 1g.10gb is 2 slots on A100-40GB; 2g.10gb cannot start at 6, 1g.10gb can.
		{"2g×3+1g.10gb", "A100-40GB", cat(rep("2g.10gb", 3), ps("1g.10gb")),
			Layout{Profiles: cat(ps("1g.10gb"), rep("2g.10gb", 3)), Placements: []int{6, 0, 2, 4}}, 0, ""},
		// 4 × 1g.10gb = 8 slots; one more 1g.5gb has no slot (compute 5 of 7).
		{"1g.10gb×4+1g.5gb", "A100-40GB", cat(rep("1g.10gb", 4), ps("1g.5gb")), Layout{}, NoPlacement, ""},
		// 3 × 2 + 2 × 1 = 8 compute slices > 7.
		{"2g×3+1g×2", "A100-40GB", cat(rep("2g.10gb", 3), rep("1g.5gb", 2)), Layout{}, ComputeExceeded, ""},
		{"7g+1g", "A100-40GB", ps("7g.40gb", "1g.5gb"), Layout{}, ComputeExceeded, ""},
		{"+me alone", "A100-40GB", ps("1g.5gb+me"), Layout{Profiles: ps("1g.5gb+me"), Placements: []int{0}}, 0, ""},
		{"two +me", "A100-40GB", rep("1g.5gb+me", 2), Layout{}, TooMany, "1g.5gb+me"},
		// A30 has two +me profiles; one +me instance per GPU in total.
		{"two +me profiles", "A30", ps("1g.6gb+me", "2g.12gb+me"), Layout{}, MediaExtensionConflict, "2g.12gb+me"},
		// mig-parted rejects a 1g +me instance next to another 1g instance.
		{"+me with 1g", "A100-40GB", ps("1g.5gb+me", "1g.5gb"), Layout{}, MediaExtensionConflict, "1g.5gb+me"},
		{"+me with 1g.10gb", "A100-40GB", ps("1g.10gb", "1g.5gb+me"), Layout{}, MediaExtensionConflict, "1g.5gb+me"},
		{"+me with 2g and 4g", "A100-40GB", ps("4g.20gb", "2g.10gb", "1g.5gb+me"),
			Layout{Profiles: ps("1g.5gb+me", "2g.10gb", "4g.20gb"), Placements: []int{6, 4, 0}}, 0, ""},
		{"2g +me with 1g", "A30", ps("2g.12gb+me", "1g.6gb", "1g.6gb"),
			Layout{Profiles: ps("1g.6gb", "1g.6gb", "2g.12gb+me"), Placements: []int{2, 3, 0}}, 0, ""},
		{"1g.5gb on H100", "H100", ps("1g.10gb", "1g.5gb"), Layout{}, UnknownProfile, "1g.5gb"},
		{"empty", "H100", nil, Layout{}, 0, ""},
		// H100: 1g.10gb is one slot; 7 of them fill slots 0..6.
		{"all-1g.10gb on H100", "H100", rep("1g.10gb", 7), Layout{Profiles: rep("1g.10gb", 7), Placements: []int{0, 1, 2, 3, 4, 5, 6}}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := model(t, tc.model)
			got, err := m.Valid(tc.profiles)
			if tc.reason == 0 {
				if err != nil {
					t.Fatalf("Valid: %v", err)
				}
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("layout (-want +got):\n%s", diff)
				}
				checkPlacement(t, m, got)
				return
			}
			var le *LayoutError
			if !errors.As(err, &le) {
				t.Fatalf("Valid = %v, %v; want a *LayoutError", got, err)
			}
			if le.Reason != tc.reason || le.Profile != tc.blame || le.Model != m.Model {
				t.Errorf("error %+v, want reason %v profile %q model %s", le, tc.reason, tc.blame, m.Model)
			}
		})
	}
}

func TestLayoutErrorMessage(t *testing.T) {
	_, err := model(t, "H100").Valid(ps("1g.5gb"))
	const want = `mig H100-80GB: unknown profile "1g.5gb": the model's profiles are 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if !IsUnknownProfile(err) || ReasonOf(err) != UnknownProfile {
		t.Errorf("IsUnknownProfile/ReasonOf do not see %v", err)
	}
	if ReasonOf(errors.New("other")) != 0 || IsUnknownProfile(nil) {
		t.Errorf("ReasonOf of a foreign error must be 0")
	}
	_, err = model(t, "A100-40GB").Valid(cat(rep("3g.20gb", 2), ps("1g.5gb")))
	if err == nil || !strings.Contains(err.Error(), "no placement: [1g.5gb 3g.20gb 3g.20gb] does not fit the 8 memory slots") {
		t.Errorf("error = %v", err)
	}
}

func TestReasonString(t *testing.T) {
	for r := UnknownProfile; r <= EmptySpec; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "Reason(") {
			t.Errorf("Reason %d has no name", int(r))
		}
	}
	if got := Reason(99).String(); got != "Reason(99)" {
		t.Errorf("Reason(99).String() = %s", got)
	}
}

// TestValidOrderIndependent: any permutation of the input gives the same canonical layout.
func TestValidOrderIndependent(t *testing.T) {
	m := model(t, "A100-40GB")
	inputs := [][]MIGProfile{
		ps("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"),
		ps("1g.5gb", "2g.10gb", "1g.5gb", "3g.20gb"),
		ps("2g.10gb", "1g.5gb", "3g.20gb", "1g.5gb"),
	}
	first, err := m.Valid(inputs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs[1:] {
		got, err := m.Valid(in)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("Valid(%v) (-first +got):\n%s", in, diff)
		}
	}
}
