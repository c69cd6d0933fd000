package mig

import (
	"slices"
	"strings"
	"testing"
)

// TestConfigNameRoundTrip: the name of a node's layouts reads back as the same layouts, GPU by
// GPU, and stays a label value.
func TestConfigNameRoundTrip(t *testing.T) {
	m := model(t, "A100-40GB")
	l := func(profiles ...MIGProfile) Layout {
		v, err := m.Valid(profiles)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	small, big := l(rep("1g.5gb", 7)...), l(ps("3g.20gb", "3g.20gb")...)
	odd := l(ps("1g.5gb", "1g.5gb", "1g.5gb", "2g.10gb", "2g.10gb")...)
	cases := []struct {
		perGPU []Layout
		want   string
	}{
		{[]Layout{small}, "all-1g.5gb"},
		{[]Layout{small, small, small}, "all-1g.5gb"},
		{[]Layout{small, big}, "tiler-all-1g.5gb_all-3g.20gb"},
		{[]Layout{small, big, big, big, small}, "tiler-all-1g.5gb_3xall-3g.20gb_all-1g.5gb"},
		{[]Layout{odd, odd, {}}, "tiler-2xcustom-1g.5gb-x3-2g.10gb-x2_all-enabled"},
	}
	for _, tc := range cases {
		got := m.ConfigName(tc.perGPU)
		if got != tc.want {
			t.Errorf("ConfigName = %q, want %q", got, tc.want)
		}
		back, err := m.ParseConfigName(got, len(tc.perGPU))
		if err != nil {
			t.Errorf("%s: %v", got, err)
			continue
		}
		for i := range back {
			if !slices.Equal(back[i].Profiles, tc.perGPU[i].Profiles) {
				t.Errorf("%s: GPU %d reads back as %v, want %v", got, i, back[i].Profiles, tc.perGPU[i].Profiles)
			}
		}
	}
	// Eight GPUs of alternating custom layouts do not fit a label value: a hash, unreadable.
	var long []Layout
	for i := range 8 {
		long = append(long, []Layout{odd, big}[i%2])
	}
	name := m.ConfigName(long)
	if !strings.HasPrefix(name, "tiler-mixed-") || len(name) > 63 {
		t.Fatalf("long name %q", name)
	}
	if _, err := m.ParseConfigName(name, 8); ReasonOf(err) != UnknownLayoutName {
		t.Errorf("hashed name parsed: %v", err)
	}
}

func TestParseConfigNameErrors(t *testing.T) {
	m := model(t, "A100-40GB")
	for _, tc := range []struct {
		name string
		gpus int
		want string
	}{
		{"custom-1g.20gb-x1", 1, `unknown profile "1g.20gb"`},
		{"all-whatever", 2, `unknown layout name "all-whatever"`},
		{"tiler-all-1g.5gb_all-3g.20gb", 3, "lays out 2 GPUs; the node has 3"},
		{"tiler-1g.5gb-8gpu-mixed", 8, "unknown layout name"},
		{"tiler-0xall-1g.5gb", 1, "not a name ConfigName generates"},
		{"all-1g.5gb", 0, "the node has no GPUs"},
	} {
		_, err := m.ParseConfigName(tc.name, tc.gpus)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %d GPUs: %v, want %q", tc.name, tc.gpus, err, tc.want)
		}
	}
	if ls, err := m.ParseConfigName("all-balanced", 2); err != nil || len(ls) != 2 || len(ls[1].Profiles) == 0 {
		t.Errorf("all-balanced: %v %v", ls, err)
	}
}
