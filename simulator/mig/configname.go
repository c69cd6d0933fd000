package mig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// tilerPrefix starts the config names Tiler generates for nodes whose GPUs have different layouts.
const tilerPrefix = "tiler-"

// maxConfigName is the longest label value (nvidia.com/mig.config is a label).
const maxConfigName = 63

// runRE is one run of a generated config name: an optional GPU count and a layout name.
var runRE = regexp.MustCompile(`^(?:([1-9][0-9]*)x)?([a-z].*)$`)

// ConfigName returns the nvidia.com/mig.config value of a node whose GPU i has the layout
// perGPU[i]. When every GPU has the same layout it is that layout's name (LayoutName: a mig-parted
// name such as all-1g.10gb, or a custom-... name), which mig-parted applies to every GPU.
// Otherwise it lists the runs of GPUs with the same layout, in GPU order, separated by '_' (which
// no layout name holds), each run as <count>x<layout name> or, for one GPU, the name alone:
// "tiler-all-1g.5gb_3xall-3g.20gb" is GPU 0 in all-1g.5gb and GPUs 1-3 in all-3g.20gb.
// ParseConfigName reads these names back, so a node's label says its layout. A name that would
// be longer than a label value (63 characters) is "tiler-mixed-" and a hash of the layouts instead,
// which ParseConfigName cannot read: the layout of such a node is known only from the mig-parted
// file that defines it.
func (m *GPUModel) ConfigName(perGPU []Layout) string {
	if len(perGPU) == 0 {
		return enabledName
	}
	names := make([]string, len(perGPU))
	uniform := true
	for i, l := range perGPU {
		names[i] = m.LayoutName(l)
		uniform = uniform && names[i] == names[0]
	}
	if uniform {
		return names[0]
	}
	var runs []string
	for i := 0; i < len(names); {
		j := i
		for j < len(names) && names[j] == names[i] {
			j++
		}
		if j-i == 1 {
			runs = append(runs, names[i])
		} else {
			runs = append(runs, fmt.Sprintf("%dx%s", j-i, names[i]))
		}
		i = j
	}
	name := tilerPrefix + strings.Join(runs, "_")
	if len(name) <= maxConfigName {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	return tilerPrefix + "mixed-" + hex.EncodeToString(sum[:8])
}

// ParseConfigName returns the per-GPU layouts that the nvidia.com/mig.config value name gives a
// node with gpus GPUs: a layout name (named, custom-..., or all-enabled) for every GPU, or a name
// ConfigName generated for GPUs of different layouts, whose GPU count must be gpus. Every layout
// is checked with Valid. Hashed names and names of other tools fail with an UnknownLayoutName
// LayoutError.
func (m *GPUModel) ParseConfigName(name string, gpus int) ([]Layout, error) {
	if gpus <= 0 {
		return nil, fmt.Errorf("mig config %q: the node has no GPUs", name)
	}
	rest, generated := strings.CutPrefix(name, tilerPrefix)
	if !generated {
		l, err := m.parseLayoutName(name)
		if err != nil {
			return nil, fmt.Errorf("mig config %q: %w", name, err)
		}
		out := make([]Layout, gpus)
		for i := range out {
			out[i] = l
		}
		return out, nil
	}
	var out []Layout
	for _, run := range strings.Split(rest, "_") {
		g := runRE.FindStringSubmatch(run)
		if g == nil {
			return nil, fmt.Errorf("mig config %q: %w", name, &LayoutError{Model: m.Model, Reason: UnknownLayoutName, Name: name,
				Detail: "not a name ConfigName generates (tiler-[<count>x]<layout>_...); a hashed name names no layout"})
		}
		n := 1
		if g[1] != "" {
			n, _ = strconv.Atoi(g[1])
		}
		l, err := m.parseLayoutName(g[2])
		if err != nil {
			return nil, fmt.Errorf("mig config %q: %w", name, err)
		}
		for range n {
			out = append(out, l)
		}
		if len(out) > gpus {
			break
		}
	}
	if len(out) != gpus {
		return nil, fmt.Errorf("mig config %q lays out %d GPUs; the node has %d", name, len(out), gpus)
	}
	return out, nil
}

// parseLayoutName reads one layout name: all-enabled (MIG on, no instance), a mig-parted name of
// the model or a custom-... name.
func (m *GPUModel) parseLayoutName(name string) (Layout, error) {
	if name == enabledName {
		return Layout{}, nil
	}
	if _, named := m.namedLay[name]; !named && !strings.HasPrefix(name, customPrefix) {
		return Layout{}, &LayoutError{Model: m.Model, Reason: UnknownLayoutName, Name: name,
			Detail: "the model's named layouts are " + strings.Join(m.namedLayoutNames(), ", ")}
	}
	ls, err := ParseLayoutSpec(m, name)
	if err != nil {
		return Layout{}, err
	}
	return ls[0], nil
}
