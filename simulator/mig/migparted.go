package mig

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// migPartedFile is a mig-parted config file, version v1 (github.com/NVIDIA/mig-parted,
// api/spec/v1): config name → one entry per group of GPUs.
type migPartedFile struct {
	Version    string                      `json:"version"`
	MigConfigs map[string][]migPartedEntry `json:"mig-configs"`
}

// migPartedEntry configures the GPUs at the indices Devices alike.
type migPartedEntry struct {
	Devices    []int              `json:"devices"`
	MigEnabled bool               `json:"mig-enabled"`
	MigDevices map[MIGProfile]int `json:"mig-devices,omitempty"`
}

// MigPartedConfig renders a mig-parted config file (version v1) with one config called name
// that gives GPU i the profiles perGPU[i]. GPUs with the same profiles share one entry, in the
// order of their first GPU; a GPU without profiles gets "mig-enabled: false". For example
// two GPUs with [1g.10gb 1g.10gb 2g.20gb 3g.40gb] and one without profiles:
//
//	mig-configs:
//	  custom:
//	  - devices:
//	    - 0
//	    - 1
//	    mig-devices:
//	      1g.10gb: 2
//	      2g.20gb: 1
//	      3g.40gb: 1
//	    mig-enabled: true
//	  - devices:
//	    - 2
//	    mig-enabled: false
//	version: v1
//
// Keys are sorted, as sigs.k8s.io/yaml writes them. The output is deterministic.
func MigPartedConfig(name string, perGPU [][]MIGProfile) string {
	entries := []migPartedEntry{} // [], not null, for no GPUs
	for _, g := range groupGPUs(perGPU) {
		e := migPartedEntry{Devices: g.devices, MigEnabled: len(g.profiles) > 0}
		for i, p := range g.profiles {
			if e.MigDevices == nil {
				e.MigDevices = map[MIGProfile]int{}
			}
			e.MigDevices[p] = g.counts[i]
		}
		entries = append(entries, e)
	}
	out, err := yaml.Marshal(migPartedFile{Version: "v1", MigConfigs: map[string][]migPartedEntry{name: entries}})
	if err != nil {
		// Strings, ints and bools always marshal; an error here is a bug in this file.
		panic(fmt.Sprintf("marshalling the mig-parted config %q: %v", name, err))
	}
	return string(out)
}

// gpuGroup is one mig-parted entry: GPUs with the same profiles.
type gpuGroup struct {
	devices  []int
	profiles []MIGProfile // distinct, canonical order
	counts   []int
}

// groupGPUs groups GPU indices by their profile multiset, in order of first appearance.
func groupGPUs(perGPU [][]MIGProfile) []*gpuGroup {
	byKey := map[string]*gpuGroup{}
	var out []*gpuGroup
	for i, ps := range perGPU {
		g := newGroup(ps)
		key := fmt.Sprint(g.profiles, g.counts)
		if prev, ok := byKey[key]; ok {
			prev.devices = append(prev.devices, i)
			continue
		}
		g.devices = []int{i}
		byKey[key] = g
		out = append(out, g)
	}
	return out
}

// newGroup counts a GPU's profiles in canonical order.
func newGroup(ps []MIGProfile) *gpuGroup {
	sorted := slices.Clone(ps)
	slices.SortFunc(sorted, compareProfileNames)
	g := &gpuGroup{}
	for _, p := range sorted {
		if n := len(g.profiles); n > 0 && g.profiles[n-1] == p {
			g.counts[n-1]++
			continue
		}
		g.profiles = append(g.profiles, p)
		g.counts = append(g.counts, 1)
	}
	return g
}
