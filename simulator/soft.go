package simulator

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tiler-dev/tiler/api"
)

// Soft constraints: preferred node affinity, preferred pod affinity and anti-affinity, and
// topology spread with whenUnsatisfiable: ScheduleAnyway. They never decide whether a pod fits;
// they choose among placements that cost the same — or, with the policy's
// softConstraints.maxPremiumPercent, up to that much more — the way kube-scheduler's score
// plugins would rank them (NodeAffinity, InterPodAffinity and PodTopologySpread, each normalised
// to 0–100 over the options and weighted 2, kube-scheduler's default weights).
//
// Where they act (only for pods that carry soft constraints, so every other pod is placed as
// before):
//   - placeOneSoft: among the existing, in-flight and planned nodes that can take the pod at no
//     more marginal cost than first fit's node, the best-scored one;
//   - softNarrow: among the offerings a new node can be bought as (its zone, pool, type), those
//     that score best among the ones within the premium of the cheapest.
//
// simulateOnce guards the whole plan: the plan that honours soft constraints is kept only when it
// leaves no more pods unschedulable and costs at most the premium more than the plan that ignores
// them (premium 0: never more), since a tie broken one way can change what later pods pack into.

// softTerms are a pending pod's soft constraints; nil when it has none.
type softTerms struct {
	node *nodeaffinity.PreferredSchedulingTerms // nil when none
	pod  []weightedTerm
	// spread indexes the pod's ScheduleAnyway constraints in podInfo.spread.
	spread []int
}

// weightedTerm is a preferred pod affinity (positive weight) or anti-affinity (negative) term.
type weightedTerm struct {
	tracker int
	key     string
	weight  int32
}

// softPluginWeight is kube-scheduler's default weight of NodeAffinity, InterPodAffinity and
// PodTopologySpread in the default profile.
const softPluginWeight = 2

// parseSoftTerms reads the pod's soft constraints into pi.soft.
func (s *state) parseSoftTerms(pi *podInfo) error {
	p := pi.pod
	st := &softTerms{}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil && len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			terms, err := nodeaffinity.NewPreferredSchedulingTerms(na.PreferredDuringSchedulingIgnoredDuringExecution)
			if err != nil {
				return fmt.Errorf("nodeAffinity.preferred: %w", err)
			}
			st.node = terms
		}
		add := func(terms []corev1.WeightedPodAffinityTerm, sign int32, field string) error {
			for i := range terms {
				t := &terms[i].PodAffinityTerm
				tr, err := s.trackers.getPreferred(t.TopologyKey, t.LabelSelector, termNamespaces(p, t))
				if err != nil {
					return fmt.Errorf("%s.preferred[%d].podAffinityTerm.labelSelector: %w", field, i, err)
				}
				st.pod = append(st.pod, weightedTerm{tracker: tr, key: t.TopologyKey, weight: sign * terms[i].Weight})
			}
			return nil
		}
		if pa := a.PodAffinity; pa != nil {
			if err := add(pa.PreferredDuringSchedulingIgnoredDuringExecution, 1, "podAffinity"); err != nil {
				return err
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			if err := add(pa.PreferredDuringSchedulingIgnoredDuringExecution, -1, "podAntiAffinity"); err != nil {
				return err
			}
		}
	}
	for i := range pi.spread {
		if !pi.spread[i].hard {
			st.spread = append(st.spread, i)
		}
	}
	if st.node != nil || len(st.pod) > 0 || len(st.spread) > 0 {
		pi.soft = st
		s.hasSoft = true
	}
	return nil
}

// softRaw is a placement's raw score per plugin, before normalisation.
type softRaw struct {
	na, ipa, pts float64
	// noKey: the node lacks the key of a ScheduleAnyway constraint (kube-scheduler scores it 0).
	noKey bool
}

// softDomain looks up a topology key's value where the pod would run; counted reports that the
// pod itself is already counted there (the placement is committed on trial).
type softDomain func(key string) (value string, ok, counted bool)

// softScore computes the pod's raw soft score where dom and node say it would run (node carries
// the labels preferred node affinity is matched against).
func (s *state) softScore(pi *podInfo, node *corev1.Node, dom softDomain) softRaw {
	var r softRaw
	st := pi.soft
	if st.node != nil && node != nil {
		r.na = float64(st.node.Score(node))
	}
	count := func(tr int, key string) (int32, bool) {
		d, ok, counted := dom(key)
		if !ok {
			return 0, false
		}
		c := s.trackers.list[tr].counts[d]
		if counted && s.matchesTracker(pi, tr) {
			c--
		}
		return c, true
	}
	for _, t := range st.pod {
		if c, ok := count(t.tracker, t.key); ok {
			r.ipa += float64(t.weight) * float64(c)
		}
	}
	for _, i := range st.spread {
		c := &pi.spread[i]
		n, ok := count(c.tracker, c.key)
		if !ok {
			r.noKey = true
			continue
		}
		r.pts += float64(n)*s.spreadWeight(pi, c) + float64(c.maxSkew-1)
	}
	return r
}

// spreadWeight is PodTopologySpread's normalising weight of a constraint: log(domains + 2), so
// that a key with few domains (zones) weighs less than one with many (hostnames).
func (s *state) spreadWeight(pi *podInfo, c *spreadConstraint) float64 {
	n := len(s.nodes)
	if c.key != LabelHostname {
		n = len(s.eligibleDomains(pi.sig, c.key, c.honorTaints))
	}
	return math.Log(float64(n + 2))
}

func (s *state) matchesTracker(pi *podInfo, tr int) bool {
	for _, t := range pi.matches {
		if t == tr {
			return true
		}
	}
	return false
}

// normalizeSoft turns raw scores into kube-scheduler's combined score of the three plugins, each
// normalised over the options as the plugin's NormalizeScore does.
func normalizeSoft(raws []softRaw) []float64 {
	var maxNA float64
	minIPA, maxIPA := math.Inf(1), math.Inf(-1)
	minPTS, maxPTS := math.Inf(1), math.Inf(-1)
	for _, r := range raws {
		maxNA = max(maxNA, r.na)
		minIPA, maxIPA = min(minIPA, r.ipa), max(maxIPA, r.ipa)
		if !r.noKey {
			minPTS, maxPTS = min(minPTS, r.pts), max(maxPTS, r.pts)
		}
	}
	out := make([]float64, len(raws))
	for i, r := range raws {
		var v float64
		if maxNA > 0 {
			v += 100 * r.na / maxNA
		}
		if d := maxIPA - minIPA; d > 0 {
			v += 100 * (r.ipa - minIPA) / d
		}
		switch {
		case r.noKey:
		case maxPTS == 0:
			v += 100
		default:
			v += 100 * (maxPTS + minPTS - r.pts) / maxPTS
		}
		out[i] = softPluginWeight * v
	}
	return out
}

// plannedPrice is what a node adds to the plan: its chosen offering's price for a planned node, 0
// for an existing or in-flight one (already paid for).
func plannedPrice(n *simNode) float64 {
	if n.existing || n.chosen == nil {
		return 0
	}
	return n.chosen.price
}

// nodeObject is the Node preferred node affinity is matched against.
func nodeObject(n *simNode) *corev1.Node {
	switch {
	case n.node != nil:
		return n.node
	case !n.existing && n.chosen != nil:
		return n.chosen.node
	}
	return &corev1.Node{}
}

// placeOneSoft is placeOne for a pod with soft constraints. First fit's node (the cost choice)
// is found as placeOne finds it; then the nodes that score better — scored before any try, each
// plugin normalised over all of them — are tried best first, and the first that takes the pod
// while its price rises no more than first fit's node's (plus the premium of that node's price)
// gets it; otherwise first fit's node does. When no node takes it, a new node is opened.
func (s *state) placeOneSoft(pi *podInfo, r restriction) (failure, bool) {
	var order []*simNode
	seen := map[*simNode]bool{}
	for _, n := range s.rankedGPUNodes(pi) {
		if !seen[n] {
			seen[n] = true
			order = append(order, n)
		}
	}
	for _, n := range s.nodes {
		if n.available() && !seen[n] {
			seen[n] = true
			order = append(order, n)
		}
	}
	// try places the pod on n, undone unless keep says otherwise, and returns the price change.
	try := func(n *simNode, keep func(delta float64) bool) (float64, bool) {
		before := plannedPrice(n)
		mark := s.checkpoint()
		if !s.tryNode(pi, n, r) {
			s.revert(mark)
			return 0, false
		}
		delta := plannedPrice(n) - before
		if keep == nil || !keep(delta) {
			s.revert(mark)
		}
		return delta, true
	}
	ref := -1
	var refDelta float64
	for i, n := range order {
		if d, ok := try(n, nil); ok {
			ref, refDelta = i, d
			break
		}
	}
	if ref < 0 {
		return s.openNode(pi, r)
	}
	refNode := order[ref]
	raws := make([]softRaw, len(order)-ref)
	for i, n := range order[ref:] {
		raws[i] = s.softScore(pi, nodeObject(n), nodeDomain(n))
	}
	scores := normalizeSoft(raws)
	var better []int // indexes into order[ref:], best first
	for i := 1; i < len(raws); i++ {
		if scores[i] > scores[0]+1e-9 {
			better = append(better, i)
		}
	}
	sort.SliceStable(better, func(a, b int) bool { return scores[better[a]] > scores[better[b]] })
	limit := refDelta + s.premium()*(plannedPrice(refNode)+refDelta) + 1e-9
	for _, i := range better {
		if _, ok := try(order[ref+i], func(delta float64) bool { return delta <= limit }); ok && order[ref+i] == pi.node {
			return failure{}, true
		}
	}
	if _, ok := try(refNode, func(float64) bool { return true }); !ok {
		// The same try succeeded a moment ago on the same state.
		panic("simulator: soft placement no longer fits " + pi.key)
	}
	return failure{}, true
}

// nodeDomain is the softDomain of a pod not yet placed on n: the node's own value of the key, or
// for a planned node whose zone is not pinned, its chosen offering's.
func nodeDomain(n *simNode) softDomain {
	return func(key string) (string, bool, bool) {
		if d, ok := n.domain(key); ok {
			return d, true, false
		}
		if !n.existing && n.chosen != nil {
			d, ok := n.chosen.labels[key]
			return d, ok, false
		}
		return "", false, false
	}
}

// premium is the policy's soft-constraint premium as a fraction.
func (s *state) premium() float64 { return s.in.Policy.SoftConstraints.MaxPremium() }

// softNarrow keeps, of a new node's candidates for a pod with soft constraints, those that score
// at least as well as the best one priced within the premium of floor (the cheapest price the pod
// could have), when that one scores better than the cheapest candidate; otherwise all of them.
// A candidate priced above the premium stays when it scores as well (a larger type of the
// preferred kind, for pods packed later).
func (s *state) softNarrow(pi *podInfo, n *simNode, cands []*offering, floor float64) []*offering {
	if !s.softOn || pi.soft == nil || len(cands) < 2 {
		return cands
	}
	raws := make([]softRaw, len(cands))
	for i, o := range cands {
		raws[i] = s.softScore(pi, o.node, offeringDomain(n, o))
	}
	scores := normalizeSoft(raws)
	limit := floor*(1+s.premium()) + 1e-9
	best := math.Inf(-1)
	cheap, cheapIdx := math.Inf(1), -1
	for i, o := range cands {
		if o.price <= limit && scores[i] > best {
			best = scores[i]
		}
		if o.price < cheap {
			cheap, cheapIdx = o.price, i
		}
	}
	if cheapIdx < 0 || best <= scores[cheapIdx]+1e-9 {
		return cands
	}
	var out []*offering
	for i, o := range cands {
		if scores[i] >= best-1e-9 {
			out = append(out, o)
		}
	}
	return out
}

// offeringDomain is the softDomain of a pod on new node n bought as o (not committed yet).
func offeringDomain(n *simNode, o *offering) softDomain {
	return func(key string) (string, bool, bool) {
		switch key {
		case LabelHostname:
			return n.name, true, false
		case LabelZone:
			return o.zone, true, false
		}
		d, ok := o.labels[key]
		return d, ok, false
	}
}

// oneZone returns the zone all the offerings share, or "".
func oneZone(cands []*offering) string {
	if len(cands) == 0 {
		return ""
	}
	for _, o := range cands[1:] {
		if o.zone != cands[0].zone {
			return ""
		}
	}
	return cands[0].zone
}

// keepSoftPlan decides between the plan that honours soft constraints and the one that ignores
// them: the soft plan when it leaves no more pods unschedulable and costs at most premium more.
func keepSoftPlan(soft, base *api.Plan, premium float64) bool {
	return len(soft.Unschedulable) <= len(base.Unschedulable) && soft.CostPerHour <= base.CostPerHour*(1+premium)+1e-6
}

// withoutSoft returns the input with the pending pods' soft constraints removed: the plan that
// ignores them, which the plan honouring them is measured against.
func withoutSoft(in Input) Input {
	snap := *in.Snapshot
	snap.Pods = make([]*corev1.Pod, len(in.Snapshot.Pods))
	for i, p := range in.Snapshot.Pods {
		snap.Pods[i] = p
		if !hasSoftConstraints(p) {
			continue
		}
		q := p.DeepCopy()
		if a := q.Spec.Affinity; a != nil {
			if a.NodeAffinity != nil {
				a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
			}
			if a.PodAffinity != nil {
				a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
			}
			if a.PodAntiAffinity != nil {
				a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
			}
		}
		q.Spec.TopologySpreadConstraints = slices.DeleteFunc(q.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.WhenUnsatisfiable != corev1.DoNotSchedule
		})
		snap.Pods[i] = q
	}
	in.Snapshot = &snap
	return in
}

// hasSoftConstraints reports whether the pod has preferred affinity or ScheduleAnyway spread.
func hasSoftConstraints(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
			a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
			a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
