package mig

import (
	"fmt"
	"math"
	"slices"

	"sigs.k8s.io/yaml"
)

// tableFile is the schema of mig-profiles.yaml. Decoding is strict so that a renamed or new
// field in the table fails loudly instead of being ignored.
type tableFile struct {
	SchemaVersion int               `json:"schemaVersion"`
	Sources       map[string]string `json:"sources"`
	Constraints   []string          `json:"constraints"`
	GPUs          []gpuEntry        `json:"gpus"`
}

type gpuEntry struct {
	Model                 string               `json:"model"`
	Aliases               []string             `json:"aliases"`
	Architecture          string               `json:"architecture"`
	CUDAComputeCapability string               `json:"cudaComputeCapability"`
	PCIDeviceIDs          string               `json:"pciDeviceIds"`
	TotalComputeSlices    int                  `json:"totalComputeSlices"`
	TotalMemorySlots      int                  `json:"totalMemorySlots"`
	MemoryFractionStatus  string               `json:"memoryFractionStatus"`
	ProfileIDsNote        string               `json:"profileIdsNote"`
	PlacementsStatus      string               `json:"placementsStatus"`
	PlacementsEvidence    string               `json:"placementsEvidence"`
	Profiles              []profileEntry       `json:"profiles"`
	NamedLayouts          []namedEntry         `json:"namedLayouts"`
	DerivedMaximalLayouts []map[MIGProfile]int `json:"derivedMaximalLayouts"`
	Notes                 []string             `json:"notes"`
}

type profileEntry struct {
	Name               MIGProfile `json:"name"`
	NvidiaSmiProfileID *int       `json:"nvidiaSmiProfileId"`
	ProfileIDStatus    string     `json:"profileIdStatus"`
	ComputeSlices      int        `json:"computeSlices"`
	MemorySlices       int        `json:"memorySlices"`
	MemoryGiB          int        `json:"memoryGiB"`
	MemoryFraction     string     `json:"memoryFraction"`
	MaxCount           int        `json:"maxCount"`
	Placements         struct {
		Starts []int `json:"starts"`
		Size   int   `json:"size"`
	} `json:"placements"`
	PlacementsStatus  string  `json:"placementsStatus"`
	NVMLMemoryMiB     int64   `json:"nvmlMemoryMiB"`
	ObservedMemoryGiB float64 `json:"observedMemoryGiB"`
	Note              string  `json:"note"`
}

type namedEntry struct {
	Name    string             `json:"name"`
	Devices map[MIGProfile]int `json:"devices"`
}

// Parse reads a table in the mig-profiles.yaml format; Load parses the embedded copy. Errors
// name the model, the profile and the field at fault.
func Parse(data []byte) (*Table, error) {
	var f tableFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("mig-profiles.yaml: %w", err)
	}
	if f.SchemaVersion != 1 {
		return nil, fmt.Errorf("mig-profiles.yaml: schemaVersion %d is not 1", f.SchemaVersion)
	}
	t := &Table{byName: map[string]*GPUModel{}}
	for i := range f.GPUs {
		m, err := newModel(&f.GPUs[i])
		if err != nil {
			return nil, fmt.Errorf("mig-profiles.yaml: gpus[%d] (%s): %w", i, f.GPUs[i].Model, err)
		}
		t.models = append(t.models, m)
	}
	if err := t.indexNames(); err != nil {
		return nil, fmt.Errorf("mig-profiles.yaml: %w", err)
	}
	return t, nil
}

// indexNames registers every model under its name, its aliases and the catalog names.
func (t *Table) indexNames() error {
	add := func(name string, m *GPUModel) error {
		key := normalizeModelName(name)
		if other, dup := t.byName[key]; dup && other != m {
			return fmt.Errorf("name %q is used by %s and %s", name, other.Model, m.Model)
		}
		t.byName[key] = m
		return nil
	}
	for _, m := range t.models {
		for _, name := range append([]string{m.Model}, m.Aliases...) {
			if err := add(name, m); err != nil {
				return err
			}
		}
	}
	for short, model := range catalogNames {
		if m, ok := t.byName[normalizeModelName(model)]; ok {
			t.byName[normalizeModelName(short)] = m
		}
	}
	return nil
}

// newModel checks one GPU entry and builds its model with every derived layout.
func newModel(g *gpuEntry) (*GPUModel, error) {
	switch {
	case g.Model == "":
		return nil, fmt.Errorf("model is empty")
	case g.TotalComputeSlices <= 0:
		return nil, fmt.Errorf("totalComputeSlices must be positive")
	case g.TotalMemorySlots <= 0 || g.TotalMemorySlots > 64:
		return nil, fmt.Errorf("totalMemorySlots %d is not in 1..64", g.TotalMemorySlots)
	case len(g.Profiles) == 0 || len(g.Profiles) > maxProfiles:
		return nil, fmt.Errorf("has %d profiles, want 1..%d", len(g.Profiles), maxProfiles)
	}
	m := &GPUModel{Model: g.Model, Architecture: g.Architecture, PlacementsStatus: g.PlacementsStatus,
		TotalComputeSlices: g.TotalComputeSlices, TotalMemorySlots: g.TotalMemorySlots}
	for _, a := range g.Aliases {
		m.Aliases = append(m.Aliases, cleanAlias(a)...)
	}
	for i := range g.Profiles {
		p, err := newProfile(&g.Profiles[i], g.TotalMemorySlots)
		if err != nil {
			return nil, fmt.Errorf("profiles[%d] (%s): %w", i, g.Profiles[i].Name, err)
		}
		m.Profiles = append(m.Profiles, p)
	}
	slices.SortFunc(m.Profiles, func(a, b Profile) int { return compareProfiles(&a, &b) })
	m.index = map[MIGProfile]int{}
	for i, p := range m.Profiles {
		if _, dup := m.index[p.Name]; dup {
			return nil, fmt.Errorf("profile %s is listed twice", p.Name)
		}
		m.index[p.Name] = i
		m.weight[i] = weightOf(&p)
	}
	if err := m.loadNamed(g.NamedLayouts); err != nil {
		return nil, err
	}
	if err := m.loadDerived(g.DerivedMaximalLayouts); err != nil {
		return nil, err
	}
	m.derive()
	return m, nil
}

// newProfile checks one profile entry against its name and the GPU's memory slots.
func newProfile(e *profileEntry, slots int) (Profile, error) {
	compute, gib, media, ok := parseProfileName(e.Name)
	pl := e.Placements
	switch {
	case !ok:
		return Profile{}, fmt.Errorf("name is not <n>g.<m>gb[+me]")
	case compute != e.ComputeSlices:
		return Profile{}, fmt.Errorf("computeSlices %d disagrees with the name", e.ComputeSlices)
	case gib != e.MemoryGiB:
		return Profile{}, fmt.Errorf("memoryGiB %d disagrees with the name", e.MemoryGiB)
	case pl.Size <= 0 || pl.Size != e.MemorySlices:
		return Profile{}, fmt.Errorf("placements.size %d must equal memorySlices %d", pl.Size, e.MemorySlices)
	case e.MaxCount <= 0 || e.MaxCount > len(pl.Starts):
		return Profile{}, fmt.Errorf("maxCount %d is not in 1..len(placements.starts)", e.MaxCount)
	}
	for _, s := range pl.Starts {
		if s < 0 || s+pl.Size > slots {
			return Profile{}, fmt.Errorf("placements.starts %d+%d overflows %d memory slots", s, pl.Size, slots)
		}
	}
	p := Profile{Name: e.Name, ComputeSlices: compute, MemorySlices: pl.Size, NominalMemoryGiB: gib,
		MaxCount: e.MaxCount, Starts: slices.Sorted(slices.Values(pl.Starts)), Size: pl.Size,
		MediaExtensions: media, MemoryMiB: e.NVMLMemoryMiB,
		ObservedMemoryMiB: int64(math.Round(e.ObservedMemoryGiB * 1024))}
	if p.MemoryMiB == 0 {
		p.MemoryMiB = int64(gib) * 1024
	}
	return p, nil
}

// weightOf is a profile's value in Plan: compute slices first, memory slots as tie-breaker
// (8·compute + memory), so 1g.10gb (1 compute, 2 slots on A100) counts a little more than 1g.5gb.
func weightOf(p *Profile) int { return 8*p.ComputeSlices + p.MemorySlices }

// loadNamed validates the mig-parted named layouts; each must be a valid layout of the model.
func (m *GPUModel) loadNamed(entries []namedEntry) error {
	m.NamedLayouts = map[string][]MIGProfile{}
	m.namedLay = map[string]Layout{}
	m.named = map[counts]string{}
	for _, e := range entries {
		profiles, err := expand(e.Devices)
		if err != nil {
			return fmt.Errorf("namedLayouts %s: %w", e.Name, err)
		}
		l, err := m.Valid(profiles)
		if err != nil {
			return fmt.Errorf("namedLayouts %s: %w", e.Name, err)
		}
		if _, dup := m.namedLay[e.Name]; dup {
			return fmt.Errorf("namedLayouts %s is listed twice", e.Name)
		}
		m.NamedLayouts[e.Name] = l.Profiles
		m.namedLay[e.Name] = l
		c, _ := m.countsOf(l.Profiles)
		if prev, ok := m.named[c]; !ok || e.Name < prev {
			m.named[c] = e.Name
		}
	}
	return nil
}

// loadDerived keeps the table's derivedMaximalLayouts in canonical form for comparison with
// the enumeration; every profile must exist.
func (m *GPUModel) loadDerived(entries []map[MIGProfile]int) error {
	for i, e := range entries {
		ps, err := expand(e)
		if err == nil {
			_, err = m.countsOf(ps)
		}
		if err != nil {
			return fmt.Errorf("derivedMaximalLayouts[%d]: %w", i, err)
		}
		m.sortProfiles(ps)
		m.derived = append(m.derived, ps)
	}
	return nil
}

// expand turns profile → count into a profile list (unsorted); counts must be positive.
func expand(devices map[MIGProfile]int) ([]MIGProfile, error) {
	var out []MIGProfile
	for p, n := range devices {
		if n <= 0 || n > 255 {
			return nil, fmt.Errorf("count %d of %s is not in 1..255", n, p)
		}
		for range n {
			out = append(out, p)
		}
	}
	return out, nil
}
