package mig

import (
	"cmp"
	"strconv"
	"strings"
)

// MIGProfile names a MIG GPU-instance profile as nvidia-smi and mig-parted print it, e.g.
// "1g.10gb", "3g.40gb" or "1g.5gb+me". A name means different shapes on different models:
// "1g.10gb" takes one memory slot on H100 80GB but two on A100-40GB.
type MIGProfile string

// MediaExtensions reports whether the profile carries the media engines ("+me" suffix).
func (p MIGProfile) MediaExtensions() bool { return strings.HasSuffix(string(p), mediaSuffix) }

// mediaSuffix marks a profile with media extensions (NVDEC/NVJPG/OFA).
const mediaSuffix = "+me"

// labelMediaSuffix replaces mediaSuffix where '+' is not allowed: mig-parted config names
// ("all-1g.5gb.me") and Kubernetes resource names.
const labelMediaSuffix = ".me"

// ResourcePrefix prefixes a MIG profile in the extended resource the NVIDIA device plugin
// advertises under the mixed strategy: "nvidia.com/mig-1g.10gb".
const ResourcePrefix = "nvidia.com/mig-"

// Profile is one MIG profile of one GPU model.
type Profile struct {
	// Name is the profile name, e.g. "3g.40gb".
	Name MIGProfile
	// ComputeSlices is the number of compute slices (the "Ng" prefix).
	ComputeSlices int
	// MemorySlices is the number of memory slots the instance occupies (equal to Size).
	MemorySlices int
	// MemoryMiB is the instance memory: NVML's MemorySizeMB where the table sources it, else the
	// nominal size from the name (NominalMemoryGiB × 1024), which overstates usable memory.
	MemoryMiB int64
	// NominalMemoryGiB is the "Xgb" of the name.
	NominalMemoryGiB int
	// ObservedMemoryMiB is the memory nvidia-smi reported in a captured transcript; 0 if unknown.
	ObservedMemoryMiB int64
	// MaxCount is the most instances of this profile one GPU holds.
	MaxCount int
	// Starts are the memory slots an instance may start at (nvidia-smi mig -lgipp).
	Starts []int
	// Size is the number of consecutive memory slots an instance occupies.
	Size int
	// MediaExtensions marks a +me profile: at most one per GPU.
	MediaExtensions bool
}

// ResourceName returns the extended resource of the device plugin's mixed strategy for p, e.g.
// "nvidia.com/mig-1g.10gb". A +me profile is written with ".me" ("nvidia.com/mig-1g.5gb.me")
// because '+' is not allowed in a Kubernetes resource name.
func ResourceName(p MIGProfile) string {
	return ResourcePrefix + labelSafe(p)
}

// ParseResourceName returns the profile of a mixed-strategy MIG resource such as
// "nvidia.com/mig-3g.40gb". It accepts ".me" and "+me" and reports false for any other resource
// (including "nvidia.com/gpu").
func ParseResourceName(name string) (MIGProfile, bool) {
	rest, ok := strings.CutPrefix(name, ResourcePrefix)
	if !ok {
		return "", false
	}
	p := fromLabelSafe(rest)
	if _, _, _, ok := parseProfileName(p); !ok {
		return "", false
	}
	return p, true
}

// labelSafe renders p with ".me" instead of "+me".
func labelSafe(p MIGProfile) string {
	if base, ok := strings.CutSuffix(string(p), mediaSuffix); ok {
		return base + labelMediaSuffix
	}
	return string(p)
}

// fromLabelSafe undoes labelSafe; a name without a media suffix is returned unchanged.
func fromLabelSafe(s string) MIGProfile {
	if base, ok := strings.CutSuffix(s, labelMediaSuffix); ok {
		return MIGProfile(base + mediaSuffix)
	}
	return MIGProfile(s)
}

// parseProfileName splits "<compute>g.<memory>gb[+me]" into its parts.
func parseProfileName(p MIGProfile) (compute, memoryGiB int, media, ok bool) {
	s, media := strings.CutSuffix(string(p), mediaSuffix)
	c, m, found := strings.Cut(s, "g.")
	if !found {
		return 0, 0, false, false
	}
	m, found = strings.CutSuffix(m, "gb")
	if !found {
		return 0, 0, false, false
	}
	compute, err1 := strconv.Atoi(c)
	memoryGiB, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || compute <= 0 || memoryGiB <= 0 {
		return 0, 0, false, false
	}
	return compute, memoryGiB, media, true
}

// compareProfiles is the canonical profile order: fewer compute slices first, then fewer memory
// slots, then without media extensions, then by name. Layouts list their profiles in this order
// and custom layout names follow it ("custom-1g.10gb-x2-2g.20gb-x1-3g.40gb-x1").
func compareProfiles(a, b *Profile) int {
	if c := cmp.Compare(a.ComputeSlices, b.ComputeSlices); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MemorySlices, b.MemorySlices); c != 0 {
		return c
	}
	if a.MediaExtensions != b.MediaExtensions {
		if a.MediaExtensions {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.Name, b.Name)
}

// compareProfileNames orders profiles of an unknown model by what their names say (compute
// slices, nominal memory, media extensions), falling back to the plain string order.
func compareProfileNames(a, b MIGProfile) int {
	ca, ma, ea, oka := parseProfileName(a)
	cb, mb, eb, okb := parseProfileName(b)
	if !oka || !okb {
		return cmp.Compare(a, b)
	}
	pa := Profile{Name: a, ComputeSlices: ca, MemorySlices: ma, MediaExtensions: ea}
	pb := Profile{Name: b, ComputeSlices: cb, MemorySlices: mb, MediaExtensions: eb}
	return compareProfiles(&pa, &pb)
}

// Profile returns the named profile of the model.
func (m *GPUModel) Profile(name MIGProfile) (*Profile, bool) {
	i, ok := m.index[name]
	if !ok {
		return nil, false
	}
	return &m.Profiles[i], true
}

// profileNames lists the model's profile names in canonical order, for error messages.
func (m *GPUModel) profileNames() string {
	names := make([]string, len(m.Profiles))
	for i := range m.Profiles {
		names[i] = string(m.Profiles[i].Name)
	}
	return strings.Join(names, ", ")
}
