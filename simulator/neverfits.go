package simulator

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/simulator/dra"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// neverFits explains why no node could ever hold the pod — no existing node by its allocatable
// (and its DRA devices as allocated now) and no offering of any pool on an empty node — or
// returns "" when some node could. The explanation counts what excluded the offerings: labels
// and taints, the first resource that is short, or the claims (with the allocator's reason on
// one of them, which names the claim).
func (s *state) neverFits(pi *podInfo) string {
	zero := make(vec, len(s.dims.names))
	for _, n := range s.nodes {
		if n.existing && s.nodeCompatible(pi.sig, n) && s.podFits(pi, zero, n.alloc) &&
			(pi.dra == nil || s.existingReason(pi, n) == nil) {
			return ""
		}
	}
	byAffinity, byClaims, byTier := 0, 0, 0
	var claimWhy *dra.Reason
	claimWhyDevices, claimWhyClass := false, 0
	var claimWhyClaims *claimSet
	short := map[string]int{}
	for _, o := range s.offerings {
		if !s.offeringCompatible(pi.sig, o) {
			if poolAllowed(s.sigPools[pi.sig], o.pool.Name) && !s.tierAllows(pi.sig, o.pool) {
				byTier++
			} else {
				byAffinity++
			}
			continue
		}
		if name, lacking := s.shortfall(pi, zero, o.alloc); lacking {
			short[string(name)]++
			continue
		}
		if pi.dra == nil {
			return ""
		}
		cs := s.claimsOn(pi, o.alloc)
		r := s.emptyReason(cs, o.draClass)
		if r == nil {
			return ""
		}
		byClaims++
		// Prefer the reason of an offering with DRA devices: "no devices" says little.
		if hasDevices := s.dra.hasSlices(o.draClass); claimWhy == nil || hasDevices && !claimWhyDevices {
			claimWhy, claimWhyDevices, claimWhyClass, claimWhyClaims = r, hasDevices, o.draClass, cs
		}
	}
	if claimWhy != nil {
		// emptyReason answers for every pod whose claims have the same specs, in the words of the
		// first pod asked: the reason shown is fitted again on this pod's own claims, so it names
		// them.
		if r := s.dra.fitEmpty(claimWhyClaims.claims, claimWhyClass); r != nil {
			claimWhy = r
		}
	}
	if len(s.offerings) == 0 {
		return "the policy's pools allow no offering of catalog " + s.cat.Name
	}
	parts := []string{}
	if byTier > 0 {
		parts = append(parts, fmt.Sprintf("%d in pools reserved for other priority tiers (its priority %d%s: minPriority, maxPriority, priorityClassNames)",
			byTier, pi.priority, classSuffix(pi.pod.Spec.PriorityClassName)))
	}
	if byAffinity > 0 {
		parts = append(parts, fmt.Sprintf("%d excluded by node selector, affinity or taints", byAffinity))
	}
	if byClaims > 0 {
		parts = append(parts, fmt.Sprintf("%d cannot allocate its claims, e.g. %s", byClaims, oneLine(claimWhy.String())))
	}
	names := make([]string, 0, len(short))
	for k := range short {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !s.anyOffers(corev1.ResourceName(k)) {
			parts = append(parts, fmt.Sprintf("none advertises %s%s", k, migHint(k)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d too small in %s", short[k], k))
	}
	return fmt.Sprintf("no offering of %d can hold it (%s)", len(s.offerings), strings.Join(parts, ", "))
}

// anyOffers reports whether some offering advertises the resource at all.
func (s *state) anyOffers(name corev1.ResourceName) bool {
	i, ok := s.dims.index[name]
	if !ok {
		return false
	}
	for _, o := range s.offerings {
		if o.alloc[i] > 0 {
			return true
		}
	}
	return false
}

// migHint explains a MIG resource that nothing advertises.
func migHint(resourceName string) string {
	p, ok := mig.ParseResourceName(resourceName)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (no GPU model of the policy's MIG pools has profile %s)", p)
}

// classSuffix names a PriorityClass after a priority, or nothing.
func classSuffix(class string) string {
	if class == "" {
		return ""
	}
	return ", PriorityClass " + class
}
