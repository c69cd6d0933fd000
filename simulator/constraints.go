package simulator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// buildConstraints parses every pending pod's topology spread and pod (anti-)affinity into
// trackers, registers the anti-affinity terms of bound pods too (they repel incoming pods), and
// counts the bound pods into every tracker they match.
func (s *state) buildConstraints() error {
	var valid []*podInfo
	for _, pi := range s.pending {
		if err := s.parsePodConstraints(pi); err != nil {
			s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.InvalidRequest, Reason: err.Error()}
			continue
		}
		pi.topoKeys = requiredTopologyKeys(pi)
		if why := s.missingTopologyKey(pi); why != "" {
			s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.Unschedulable, Reason: why}
			continue
		}
		valid = append(valid, pi)
	}
	s.pending = valid
	var bound []*podInfo
	for _, p := range s.in.Snapshot.Pods {
		if !snapshot.IsActive(p) {
			continue
		}
		pi := &podInfo{pod: p, key: podKey(p), ports: podHostPorts(p)}
		if err := s.parseAntiTerms(pi); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("pod %s: %v; its anti-affinity is ignored", pi.key, err))
		}
		bound = append(bound, pi)
	}
	for _, pi := range append(bound, s.pending...) {
		s.computeMatches(pi)
	}
	for _, pi := range bound {
		if n := s.nodeIndex(pi.pod.Spec.NodeName); n >= 0 {
			s.countPod(pi, s.nodes[n])
		}
	}
	return nil
}

func (s *state) parsePodConstraints(pi *podInfo) error {
	p := pi.pod
	for i := range p.Spec.TopologySpreadConstraints {
		c := &p.Spec.TopologySpreadConstraints[i]
		sel := spreadSelector(p, c)
		get := s.trackers.get
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			get = s.trackers.getPreferred
		}
		t, err := get(c.TopologyKey, sel, map[string]bool{p.Namespace: true})
		if err != nil {
			return fmt.Errorf("topologySpreadConstraints[%d].labelSelector: %w", i, err)
		}
		sc := spreadConstraint{tracker: t, key: c.TopologyKey, maxSkew: c.MaxSkew,
			hard: c.WhenUnsatisfiable == corev1.DoNotSchedule, selfMatch: s.trackers.list[t].matches(p)}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		sc.honorTaints = c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		pi.spread = append(pi.spread, sc)
	}
	if err := s.parseSoftTerms(pi); err != nil {
		return err
	}
	if p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil {
		for i := range p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			t, err := s.trackers.get(term.TopologyKey, term.LabelSelector, termNamespaces(p, term))
			if err != nil {
				return fmt.Errorf("podAffinity.required[%d].labelSelector: %w", i, err)
			}
			pi.affinity = append(pi.affinity, podAffinityTerm{tracker: t, key: term.TopologyKey, selfMatch: s.trackers.list[t].matches(p)})
		}
	}
	return s.parseAntiTerms(pi)
}

// parseAntiTerms registers the pod's required anti-affinity terms: a tracker of the pods each
// term selects (to check the pod itself) and an owner tracker (to repel later pods).
func (s *state) parseAntiTerms(pi *podInfo) error {
	p := pi.pod
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	for i := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		term := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
		t, err := s.trackers.get(term.TopologyKey, term.LabelSelector, termNamespaces(p, term))
		if err != nil {
			return fmt.Errorf("podAntiAffinity.required[%d].labelSelector: %w", i, err)
		}
		owner := s.trackers.ownerTracker(term.TopologyKey, fmt.Sprint(t))
		pi.anti = append(pi.anti, podAffinityTerm{tracker: t, key: term.TopologyKey, owner: owner})
		if !s.hasAntiTerm(owner) {
			s.antiTerms = append(s.antiTerms, antiTerm{tracker: owner, match: t})
		}
	}
	return nil
}

func (s *state) hasAntiTerm(owner int) bool {
	for _, a := range s.antiTerms {
		if a.tracker == owner {
			return true
		}
	}
	return false
}

// computeMatches records which selector trackers and which anti-affinity terms select the pod.
// Pods with the same namespace and labels share the answer.
func (s *state) computeMatches(pi *podInfo) {
	key := pi.pod.Namespace + "\x00" + labelsKey(pi.pod.Labels)
	if m, ok := s.matchCache[key]; ok {
		pi.matches, pi.antiAgainst = m[0], m[1]
		return
	}
	defer func() { s.matchCache[key] = [2][]int{pi.matches, pi.antiAgainst} }()
	pi.matches = pi.matches[:0]
	for i, t := range s.trackers.list {
		if t.matches(pi.pod) {
			pi.matches = append(pi.matches, i)
		}
	}
	pi.antiAgainst = pi.antiAgainst[:0]
	for i, a := range s.antiTerms {
		if s.trackers.list[a.match].matches(pi.pod) {
			pi.antiAgainst = append(pi.antiAgainst, i)
		}
	}
}

// countPod adds a pod placed on node n to the trackers it matches, to the owner counts of its
// anti-affinity terms and its host ports to the node's. It returns a function that undoes the
// counting.
func (s *state) countPod(pi *podInfo, n *simNode) func() {
	n.ports = n.ports.add(pi.ports, 1)
	type inc struct {
		t *tracker
		d string
	}
	var done []inc
	add := func(t *tracker) {
		if d, ok := n.domain(t.key); ok {
			t.counts[d]++
			t.total++
			done = append(done, inc{t, d})
		}
	}
	for _, ti := range pi.matches {
		add(s.trackers.list[ti])
	}
	for _, a := range pi.anti {
		add(s.trackers.list[a.owner])
	}
	return func() {
		n.ports.add(pi.ports, -1)
		for _, x := range done {
			x.t.counts[x.d]--
			x.t.total--
		}
	}
}

// labelsKey serialises a label set in key order.
func labelsKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}
