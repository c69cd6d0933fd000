package mig

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tiler-dev/tiler/api/catalog"
)

// TestEmbeddedCopyMatchesTestdata keeps data/mig-profiles.yaml equal to the testdata original
// below its two-line copy note.
func TestEmbeddedCopyMatchesTestdata(t *testing.T) {
	orig, err := os.ReadFile("../../testdata/catalog/mig-profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfterN(embeddedTable, []byte("\n"), 3)
	if len(lines) != 3 || !bytes.HasPrefix(lines[0], []byte("# Copy of testdata/catalog/mig-profiles.yaml")) {
		t.Fatalf("embedded copy lacks its copy note")
	}
	if !bytes.Equal(lines[2], orig) {
		t.Errorf("simulator/mig/data/mig-profiles.yaml differs from testdata/catalog/mig-profiles.yaml; re-copy it")
	}
}

func TestLoadModels(t *testing.T) {
	var got []string
	for _, m := range table(t).Models() {
		got = append(got, m.Model)
	}
	want := []string{"A100-SXM4-40GB", "A100-80GB", "A30-24GB", "H100-80GB", "H100-94GB",
		"GH200-96GB", "GH200-144GB", "H200-141GB", "B200-180GB"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestModelMapping(t *testing.T) {
	cases := []struct {
		name string
		want string // "" = no MIG
	}{
		{"A100-40GB", "A100-SXM4-40GB"}, // catalog short names
		{"A100-80GB", "A100-80GB"},
		{"H100", "H100-80GB"},
		{"H100-80GB", "H100-80GB"},
		{"H200", "H200-141GB"},
		{"B200", "B200-180GB"},
		{"A30", "A30-24GB"},
		{"A100-SXM4-40GB", "A100-SXM4-40GB"}, // table names and aliases
		{"a100-pcie-40gb", "A100-SXM4-40GB"},
		{"A100-SXM4-80GB", "A100-80GB"},
		{"H100-94GB", "H100-94GB"},
		{"H100 NVL", "H100-94GB"},
		{"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"}, // driver product names
		{"NVIDIA H100 80GB HBM3", "H100-80GB"},
		{"NVIDIA H200", "H200-141GB"},
		{"L4", ""}, {"T4", ""}, {"A10G", ""}, {"L40S", ""}, {"V100", ""}, {"", ""},
		{"same profile names", ""}, // a table remark, not an alias
	}
	tab := table(t)
	for _, tc := range cases {
		m, ok := tab.Model(tc.name)
		got := ""
		if ok {
			got = m.Model
		}
		if got != tc.want {
			t.Errorf("Model(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCatalogGPUs checks every GPU of the embedded catalogs: the MIG-capable ones map to a model
// whose full-GPU profile has the catalog's memory (7g.40gb = 40 × 1024 MiB on A100-40GB).
func TestCatalogGPUs(t *testing.T) {
	noMIG := map[string]bool{"L4": true, "T4": true, "A10G": true, "L40S": true, "V100": true}
	tab := table(t)
	for _, name := range catalog.EmbeddedNames() {
		c, err := catalog.Embedded(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range c.Types {
			g := it.GPU
			if g.Count == 0 {
				continue
			}
			m, ok := tab.Model(g.Model)
			if ok == noMIG[g.Model] {
				t.Errorf("%s %s: Model(%q) = %v, want %v", name, it.Name, g.Model, ok, !noMIG[g.Model])
				continue
			}
			if ok {
				full := m.Profiles[len(m.Profiles)-1]
				if got := int64(full.NominalMemoryGiB) * 1024; got != g.MemoryMiB {
					t.Errorf("%s %s: %s is %d MiB, catalog says %d", name, it.Name, full.Name, got, g.MemoryMiB)
				}
			}
		}
	}
}

func TestProfile(t *testing.T) {
	cases := []struct {
		model   string
		profile MIGProfile
		want    Profile
	}{
		// nvmlMemoryMiB 19968 is sourced for A100.
		{"A100-40GB", "3g.20gb", Profile{Name: "3g.20gb", ComputeSlices: 3, MemorySlices: 4, MemoryMiB: 19968,
			NominalMemoryGiB: 20, MaxCount: 2, Starts: []int{0, 4}, Size: 4}},
		{"A100-40GB", "1g.5gb+me", Profile{Name: "1g.5gb+me", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 4864,
			NominalMemoryGiB: 5, MaxCount: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, Size: 1, MediaExtensions: true}},
		// No NVML size for H100: nominal 10 × 1024; observed 9.75 GiB × 1024 = 9984.
		{"H100", "1g.10gb", Profile{Name: "1g.10gb", ComputeSlices: 1, MemorySlices: 1, MemoryMiB: 10240,
			NominalMemoryGiB: 10, ObservedMemoryMiB: 9984, MaxCount: 7, Starts: []int{0, 1, 2, 3, 4, 5, 6}, Size: 1}},
	}
	for _, tc := range cases {
		p, ok := model(t, tc.model).Profile(tc.profile)
		if !ok {
			t.Errorf("%s: no profile %s", tc.model, tc.profile)
			continue
		}
		if diff := cmp.Diff(tc.want, *p); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.model, tc.profile, diff)
		}
	}
	if _, ok := model(t, "H100").Profile("1g.5gb"); ok {
		t.Errorf("H100 has no 1g.5gb")
	}
}

func TestProfilesCanonicalOrder(t *testing.T) {
	var got []MIGProfile
	for _, p := range model(t, "A100-40GB").Profiles {
		got = append(got, p.Name)
	}
	want := ps("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestResourceName(t *testing.T) {
	cases := []struct {
		profile  MIGProfile
		resource string
	}{
		{"1g.10gb", "nvidia.com/mig-1g.10gb"},
		{"3g.40gb", "nvidia.com/mig-3g.40gb"},
		{"1g.5gb+me", "nvidia.com/mig-1g.5gb.me"}, // '+' is not allowed in a resource name
	}
	for _, tc := range cases {
		if got := ResourceName(tc.profile); got != tc.resource {
			t.Errorf("ResourceName(%s) = %s, want %s", tc.profile, got, tc.resource)
		}
		if got, ok := ParseResourceName(tc.resource); !ok || got != tc.profile {
			t.Errorf("ParseResourceName(%s) = %s, %v", tc.resource, got, ok)
		}
	}
	if got, ok := ParseResourceName("nvidia.com/mig-1g.5gb+me"); !ok || got != "1g.5gb+me" {
		t.Errorf("ParseResourceName(+me) = %s, %v", got, ok)
	}
	for _, bad := range []string{"nvidia.com/gpu", "nvidia.com/mig-", "nvidia.com/mig-foo", "nvidia.com/mig-1g", "example.com/mig-1g.5gb", "nvidia.com/mig-0g.5gb"} {
		if p, ok := ParseResourceName(bad); ok {
			t.Errorf("ParseResourceName(%s) = %s, want false", bad, p)
		}
	}
}

// TestParseRejects edits the embedded table to break one rule at a time; each error must name
// the model, the profile or layout and the field.
func TestParseRejects(t *testing.T) {
	src := string(embeddedTable)
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"unknown field", "    architecture: Ampere\n", "    architecture: Ampere\n    colour: green\n", []string{"colour"}},
		{"compute vs name", "        computeSlices: 3\n        memorySlices: 4\n        memoryGiB: 20\n",
			"        computeSlices: 2\n        memorySlices: 4\n        memoryGiB: 20\n", []string{"A100-SXM4-40GB", "3g.20gb", "computeSlices"}},
		{"size vs slots", "placements: {starts: [0, 4], size: 4}", "placements: {starts: [0, 4], size: 3}", []string{"A100-SXM4-40GB", "placements.size"}},
		{"start overflow", "placements: {starts: [0, 2, 4], size: 2}", "placements: {starts: [0, 2, 4, 7], size: 2}", []string{"2g.10gb", "overflows"}},
		{"invalid named layout", `{name: "all-3g.20gb", devices: {"3g.20gb": 2}}`, `{name: "all-3g.20gb", devices: {"3g.20gb": 3}}`,
			[]string{"namedLayouts all-3g.20gb", "too many instances", "3g.20gb"}},
		{"unknown derived profile", `- {"7g.40gb": 1}`, `- {"7g.41gb": 1}`, []string{"derivedMaximalLayouts[0]", "7g.41gb"}},
		{"zero count", `{name: "all-4g.20gb", devices: {"4g.20gb": 1}}`, `{name: "all-4g.20gb", devices: {"4g.20gb": 0}}`,
			[]string{"namedLayouts all-4g.20gb", "count 0 of 4g.20gb"}},
		{"schema version", "schemaVersion: 1", "schemaVersion: 2", []string{"schemaVersion 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("table lacks %q", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(src, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestNamedLayouts(t *testing.T) {
	m := model(t, "A100-40GB")
	got := map[string]string{}
	for name, profiles := range m.NamedLayouts {
		got[name] = key(profiles)
	}
	want := map[string]string{
		"all-1g.5gb": "1g.5gb×7", "all-1g.5gb.me": "1g.5gb+me×1", "all-1g.10gb": "1g.10gb×4",
		"all-2g.10gb": "2g.10gb×3", "all-3g.20gb": "3g.20gb×2", "all-4g.20gb": "4g.20gb×1",
		"all-7g.40gb": "7g.40gb×1", "all-balanced": "1g.5gb×2+2g.10gb×1+3g.20gb×1",
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("named layouts (-want +got):\n%s", diff)
	}
	for _, mod := range table(t).Models() {
		for name := range mod.NamedLayouts {
			l, _ := mod.NamedLayout(name)
			checkPlacement(t, mod, l)
		}
	}
}

// TestArchitectureAgreesWithGPUFacts: the profile table, copied from its sources, names the same
// architecture as catalog.GPUFacts, the one table of GPU facts, for every catalog model with MIG.
func TestArchitectureAgreesWithGPUFacts(t *testing.T) {
	tab, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name := range catalogNames {
		facts, ok := catalog.GPUFacts(name)
		if !ok {
			continue // a MIG GPU no embedded catalog sells (H100-NVL, B200, A30)
		}
		m, ok := tab.Model(name)
		if !ok {
			t.Errorf("catalog model %s is in catalogNames but not in the table", name)
			continue
		}
		if m.Architecture != facts.Architecture {
			t.Errorf("%s: table architecture %q, GPUFacts %q", name, m.Architecture, facts.Architecture)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no catalog model was checked")
	}
}
