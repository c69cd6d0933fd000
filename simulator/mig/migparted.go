package mig

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// plainYAMLName matches a config name that needs no quoting in YAML.
var plainYAMLName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// MigPartedConfig renders a mig-parted config file (version v1) with one config called name
// that gives GPU i the profiles perGPU[i]. GPUs with the same profiles share one entry, in the
// order of their first GPU; a GPU without profiles gets "mig-enabled: false". For example
// two GPUs with [1g.10gb 1g.10gb 2g.20gb 3g.40gb] and one without profiles:
//
//	version: v1
//	mig-configs:
//	  custom:
//	    - devices: [0, 1]
//	      mig-enabled: true
//	      mig-devices:
//	        "1g.10gb": 2
//	        "2g.20gb": 1
//	        "3g.40gb": 1
//	    - devices: [2]
//	      mig-enabled: false
//
// The profiles of an entry are listed in canonical order. The output is deterministic.
func MigPartedConfig(name string, perGPU [][]MIGProfile) string {
	var b strings.Builder
	b.WriteString("version: v1\nmig-configs:\n")
	if !plainYAMLName.MatchString(name) {
		name = fmt.Sprintf("%q", name)
	}
	if len(perGPU) == 0 {
		fmt.Fprintf(&b, "  %s: []\n", name)
		return b.String()
	}
	fmt.Fprintf(&b, "  %s:\n", name)
	for _, g := range groupGPUs(perGPU) {
		writeGroup(&b, g)
	}
	return b.String()
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

// writeGroup writes one entry of the config list.
func writeGroup(b *strings.Builder, g *gpuGroup) {
	devs := make([]string, len(g.devices))
	for i, d := range g.devices {
		devs[i] = fmt.Sprint(d)
	}
	fmt.Fprintf(b, "    - devices: [%s]\n", strings.Join(devs, ", "))
	if len(g.profiles) == 0 {
		b.WriteString("      mig-enabled: false\n")
		return
	}
	b.WriteString("      mig-enabled: true\n      mig-devices:\n")
	for i, p := range g.profiles {
		fmt.Fprintf(b, "        %q: %d\n", p, g.counts[i])
	}
}
