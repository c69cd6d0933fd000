package mig

import (
	_ "embed" // the profile table
	"strings"
)

//go:embed data/mig-profiles.yaml
var embeddedTable []byte

// maxProfiles bounds the profiles per model so that layouts are fixed-size count vectors; the
// largest model in the table (A100-40GB) has 7.
const maxProfiles = 8

// Table is the MIG profile table: one GPUModel per MIG-capable GPU. It is read-only after Load
// and safe for concurrent use; callers must not modify the models it returns.
type Table struct {
	models []*GPUModel
	byName map[string]*GPUModel
}

// GPUModel is one MIG-capable GPU model with its profiles, named layouts and the layouts derived
// from its placement table.
type GPUModel struct {
	// Model is the table's model name, e.g. "A100-SXM4-40GB", "H100-80GB".
	Model string
	// Aliases are other names of the same GPU ("A100-PCIE-40GB"), without the table's remarks.
	Aliases []string
	// Architecture is the NVIDIA architecture, e.g. "Ampere".
	Architecture string
	// TotalComputeSlices is the compute slices of the whole GPU (7, or 4 on A30).
	TotalComputeSlices int
	// TotalMemorySlots is the memory slots of the whole GPU (8, or 4 on A30).
	TotalMemorySlots int
	// PlacementsStatus is how well the placement table is sourced: confirmed, inferred or
	// unconfirmed.
	PlacementsStatus string
	// Profiles are the model's profiles in canonical order (see compareProfiles).
	Profiles []Profile
	// NamedLayouts are mig-parted's config-default.yaml layouts: name → profiles in canonical
	// order, e.g. "all-balanced" → [1g.5gb 1g.5gb 2g.10gb 3g.20gb].
	NamedLayouts map[string][]MIGProfile

	index     map[MIGProfile]int
	weight    [maxProfiles]int
	named     map[counts]string // multiset → mig-parted name (the smallest if several)
	namedLay  map[string]Layout
	layouts   []Layout // Layouts(): maximal ∪ named, sorted
	maximal   []Layout // maximal non +me layouts, sorted
	media     []Layout // maximal layouts holding exactly one +me instance, sorted
	derived   [][]MIGProfile
	planCands []candidate // Layouts() as count vectors
	mediaCand []candidate // media as count vectors
}

// Load parses the embedded copy of mig-profiles.yaml, validates it and derives every model's
// layouts. Call it once and keep the Table: it does the layout enumeration for all models.
func Load() (*Table, error) {
	return Parse(embeddedTable)
}

// Models returns the models in table order.
func (t *Table) Models() []*GPUModel { return t.models }

// catalogNames maps the catalog's short GPU model names (api/catalog, GPU.Model) to table
// models. Other names are matched against the table's model names and aliases.
var catalogNames = map[string]string{
	"A100-40GB": "A100-SXM4-40GB",
	"A100-80GB": "A100-80GB",
	"H100":      "H100-80GB", // p5: NVIDIA H100 80GB HBM3
	"H100-80GB": "H100-80GB",
	"H100-NVL":  "H100-94GB",
	"H200":      "H200-141GB",
	"B200":      "B200-180GB",
	"A30":       "A30-24GB",
}

// Model returns the table entry for a catalog GPU model name ("A100-40GB", "H100", "H200"),
// a table model name or alias ("A100-SXM4-40GB", "H100-SXM5-80GB") or a driver product name
// ("NVIDIA A100-SXM4-40GB"). Matching ignores case and treats spaces as dashes. It reports false
// for GPUs without MIG (L4, T4, A10G, L40S, V100) and for unknown names.
func (t *Table) Model(catalogModel string) (*GPUModel, bool) {
	m, ok := t.byName[normalizeModelName(catalogModel)]
	return m, ok
}

// normalizeModelName upper-cases a GPU name, drops a leading "NVIDIA" and turns spaces and
// underscores into dashes: "NVIDIA A100-SXM4-40GB" → "A100-SXM4-40GB".
func normalizeModelName(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "NVIDIA ")
	s = strings.TrimPrefix(s, "NVIDIA-")
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '_' || r == '-' }), "-")
}

// cleanAlias drops a table alias's parenthesised remark and returns the names it holds: the
// part before the parenthesis and, when the remark is a driver product name ("NVIDIA H100 80GB
// HBM3"), that too. Remarks like "(same profile names)" are not names.
func cleanAlias(alias string) []string {
	name, remark, found := strings.Cut(alias, "(")
	out := []string{strings.TrimSpace(name)}
	remark = strings.TrimSuffix(strings.TrimSpace(remark), ")")
	if found && strings.HasPrefix(remark, "NVIDIA ") {
		out = append(out, remark)
	}
	return out
}
