package mig

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestLayoutName(t *testing.T) {
	cases := []struct {
		model    string
		profiles []MIGProfile
		want     string
	}{
		{"A100-40GB", rep("1g.5gb", 7), "all-1g.5gb"}, // homogeneous at the named count
		{"A100-40GB", ps("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"), "all-balanced"},
		{"A100-40GB", ps("1g.5gb+me"), "all-1g.5gb.me"},
		{"H100", ps("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"), "all-balanced"},
		{"H100", rep("1g.10gb", 7), "all-1g.10gb"},
		// Not named: profiles in canonical order (smallest first) with counts.
		{"H100", ps("3g.40gb", "1g.20gb", "1g.20gb"), "custom-1g.20gb-x2-3g.40gb-x1"},
		{"A100-40GB", ps("4g.20gb", "3g.20gb"), "custom-3g.20gb-x1-4g.20gb-x1"},
		// Homogeneous below the named count is not all-3g.40gb (which means two).
		{"H100", ps("3g.40gb"), "custom-3g.40gb-x1"},
		// '+' is not allowed in a label value: +me is written .me.
		{"A100-40GB", ps("2g.10gb", "1g.5gb+me", "2g.10gb", "2g.10gb"), "custom-1g.5gb.me-x1-2g.10gb-x3"},
		{"H100", nil, "all-enabled"},
	}
	for _, tc := range cases {
		m := model(t, tc.model)
		if got := m.LayoutName(Layout{Profiles: tc.profiles}); got != tc.want {
			t.Errorf("%s LayoutName(%v) = %s, want %s", tc.model, tc.profiles, got, tc.want)
		}
	}
}

// labelValue is the syntax of a Kubernetes label value (nvidia.com/mig.config holds the name).
var labelValue = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// TestLayoutNamesRoundTrip: every layout of every model has a label-safe name that
// ParseLayoutSpec turns back into the same layout.
func TestLayoutNamesRoundTrip(t *testing.T) {
	for _, m := range table(t).Models() {
		seen := map[string]string{}
		for _, l := range append(append([]Layout(nil), m.Layouts()...), m.MediaLayouts()...) {
			name := m.LayoutName(l)
			if !labelValue.MatchString(name) {
				t.Errorf("%s: %q is not a label value", m.Model, name)
			}
			if prev, dup := seen[name]; dup {
				t.Errorf("%s: %q names %s and %s", m.Model, name, prev, key(l.Profiles))
			}
			seen[name] = key(l.Profiles)
			got, err := ParseLayoutSpec(m, name)
			if err != nil {
				t.Errorf("%s: ParseLayoutSpec(%q): %v", m.Model, name, err)
				continue
			}
			if diff := cmp.Diff([]Layout{l}, got); diff != "" {
				t.Errorf("%s %q (-want +got):\n%s", m.Model, name, diff)
			}
		}
	}
}

func TestParseLayoutSpec(t *testing.T) {
	cases := []struct {
		model, spec string
		want        []MIGProfile // when reason is 0
		reason      Reason
		inError     []string
	}{
		{"H100", "all-1g.10gb", rep("1g.10gb", 7), 0, nil},
		{"A100-40GB", "all-balanced", ps("1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"), 0, nil},
		{"H100", "1g.10gb,1g.10gb,2g.20gb", ps("1g.10gb", "1g.10gb", "2g.20gb"), 0, nil},
		{"H100", " 4g.40gb , 3g.40gb ", ps("3g.40gb", "4g.40gb"), 0, nil},
		{"H100", "1g.10gb.me, 3g.40gb", ps("1g.10gb+me", "3g.40gb"), 0, nil},
		{"H100", "custom-1g.20gb-x2-3g.40gb-x1", ps("1g.20gb", "1g.20gb", "3g.40gb"), 0, nil},
		{"H100", "1g.5gb", nil, UnknownProfile, []string{`"1g.5gb"`, "H100-80GB", "1g.10gb, 1g.10gb+me"}},
		{"H100", "1g.10gb,2g.10gb", nil, UnknownProfile, []string{`"2g.10gb"`}},
		{"H100", "all-1g.5gb", nil, UnknownLayoutName, []string{`"all-1g.5gb"`, "all-balanced"}},
		{"H100", "custom-1g.20gb-2", nil, UnknownLayoutName, []string{"custom-<profile>-x<count>"}},
		{"H100", "custom-1g.5gb-x1", nil, UnknownProfile, []string{`"1g.5gb"`}},
		{"H100", "", nil, EmptySpec, nil},
		{"H100", "1g.10gb,,2g.20gb", nil, EmptySpec, []string{"empty profile"}},
		// 4 + 4 memory slots for the two 3g.40gb leave none for the 1g.10gb.
		{"H100", "3g.40gb,3g.40gb,1g.10gb", nil, NoPlacement, nil},
		{"A100-40GB", "1g.5gb+me,1g.5gb", nil, MediaExtensionConflict, []string{`"1g.5gb+me"`}},
	}
	for _, tc := range cases {
		m := model(t, tc.model)
		got, err := ParseLayoutSpec(m, tc.spec)
		if tc.reason == 0 {
			if err != nil {
				t.Errorf("%s %q: %v", tc.model, tc.spec, err)
				continue
			}
			if diff := cmp.Diff(tc.want, got[0].Profiles); diff != "" || len(got) != 1 {
				t.Errorf("%s %q (-want +got):\n%s", tc.model, tc.spec, diff)
			}
			continue
		}
		if ReasonOf(err) != tc.reason {
			t.Errorf("%s %q: error %v, want reason %v", tc.model, tc.spec, err, tc.reason)
			continue
		}
		for _, w := range append(tc.inError, `migLayouts entry "`+strings.TrimSpace(tc.spec)+`"`) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: error %q lacks %q", tc.model, tc.spec, err, w)
			}
		}
	}
}

// migPartedSchema is the shape of a mig-parted config (github.com/NVIDIA/mig-parted, v1), written
// out here apart from the one MigPartedConfig marshals.
type migPartedSchema struct {
	Version    string `json:"version"`
	MigConfigs map[string][]struct {
		Devices    []int          `json:"devices"`
		MigEnabled bool           `json:"mig-enabled"`
		MigDevices map[string]int `json:"mig-devices"`
	} `json:"mig-configs"`
}

func TestMigPartedConfig(t *testing.T) {
	balanced := ps("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb")
	perGPU := [][]MIGProfile{balanced, rep("1g.10gb", 7), nil, ps("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"), rep("1g.10gb", 7)}
	got := MigPartedConfig("tiler-h100-mixed", perGPU)
	// GPUs 0 and 3 hold the same multiset in different orders; 1 and 4 are all-1g.10gb.
	want := `mig-configs:
  tiler-h100-mixed:
  - devices:
    - 0
    - 3
    mig-devices:
      1g.10gb: 2
      2g.20gb: 1
      3g.40gb: 1
    mig-enabled: true
  - devices:
    - 1
    - 4
    mig-devices:
      1g.10gb: 7
    mig-enabled: true
  - devices:
    - 2
    mig-enabled: false
version: v1
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	var f migPartedSchema
	if err := yaml.UnmarshalStrict([]byte(got), &f); err != nil {
		t.Fatalf("not a mig-parted config: %v", err)
	}
	entries := f.MigConfigs["tiler-h100-mixed"]
	if f.Version != "v1" || len(entries) != 3 || entries[0].MigDevices["1g.10gb"] != 2 || entries[2].MigEnabled {
		t.Errorf("parsed config %+v", f)
	}
}

func TestMigPartedConfigEdges(t *testing.T) {
	cases := []struct {
		name   string
		perGPU [][]MIGProfile
		want   string
	}{
		{"all-1g.5gb.me", [][]MIGProfile{ps("1g.5gb+me")},
			"mig-configs:\n  all-1g.5gb.me:\n  - devices:\n    - 0\n    mig-devices:\n      1g.5gb+me: 1\n    mig-enabled: true\nversion: v1\n"},
		{"empty", nil, "mig-configs:\n  empty: []\nversion: v1\n"},
		{"two words", [][]MIGProfile{nil}, "mig-configs:\n  two words:\n  - devices:\n    - 0\n    mig-enabled: false\nversion: v1\n"},
		// A name YAML would misread is quoted.
		{"yes", [][]MIGProfile{nil}, "mig-configs:\n  \"yes\":\n  - devices:\n    - 0\n    mig-enabled: false\nversion: v1\n"},
	}
	for _, tc := range cases {
		got := MigPartedConfig(tc.name, tc.perGPU)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		var f migPartedSchema
		if err := yaml.UnmarshalStrict([]byte(got), &f); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if _, ok := f.MigConfigs[tc.name]; !ok || len(f.MigConfigs) != 1 {
			t.Errorf("%s: configs %v", tc.name, f.MigConfigs)
		}
	}
}
