package simulator

import "slices"

// topologyAllows checks the pod's hard topology spread constraints, its required pod affinity
// and anti-affinity, and the anti-affinity of placed pods against it, for node n in zone. A new
// node whose zone is not chosen passes zone-keyed checks (the zone is chosen later).
func (s *state) topologyAllows(pi *podInfo, n *simNode, zone string) bool {
	if !nodeCarriesKeys(pi, n) {
		return false
	}
	dom := func(key string) (string, bool) {
		if key == LabelZone && !n.existing {
			return zone, zone != ""
		}
		return n.domain(key)
	}
	for i := range pi.spread {
		if !s.spreadAllows(pi, &pi.spread[i], dom) {
			return false
		}
	}
	for _, t := range pi.affinity {
		d, ok := dom(t.key)
		if !ok {
			continue
		}
		tr := s.trackers.list[t.tracker]
		if tr.counts[d] == 0 && !(tr.total == 0 && t.selfMatch) {
			return false
		}
	}
	for _, t := range pi.anti {
		if d, ok := dom(t.key); ok && s.trackers.list[t.tracker].counts[d] > 0 {
			return false
		}
	}
	for _, a := range pi.antiAgainst {
		tr := s.trackers.list[s.antiTerms[a].tracker]
		if d, ok := dom(tr.key); ok && tr.counts[d] > 0 {
			return false
		}
	}
	return true
}

// spreadAllows implements the PodTopologySpread filter: placing the pod in domain d must keep
// count(d) + self − min ≤ maxSkew, where min is the smallest count among the domains the pod
// could use. For hostname the minimum is 0, since the simulation can always open a new node.
func (s *state) spreadAllows(pi *podInfo, c *spreadConstraint, dom func(string) (string, bool)) bool {
	if !c.hard {
		return true
	}
	d, ok := dom(c.key)
	if !ok {
		return true
	}
	tr := s.trackers.list[c.tracker]
	self := int32(0)
	if c.selfMatch {
		self = 1
	}
	return tr.counts[d]+self-s.minCount(pi, c) <= c.maxSkew
}

// minCount is the smallest tracker count among the domains eligible for the pod: values of the
// key on existing nodes and offerings the pod may use. Fewer domains than minDomains count as 0.
func (s *state) minCount(pi *podInfo, c *spreadConstraint) int32 {
	if c.key == LabelHostname {
		return 0
	}
	domains := s.eligibleDomains(pi.sig, c.key, c.honorTaints)
	if int32(len(domains)) < c.minDomains || len(domains) == 0 {
		return 0
	}
	tr := s.trackers.list[c.tracker]
	m := tr.counts[domains[0]]
	for _, d := range domains[1:] {
		m = min(m, tr.counts[d])
	}
	return m
}

// eligibleDomains lists, cached per signature and key, the key's values on the existing nodes
// that count as domains for pods of the signature — those matching their node affinity, and,
// only with nodeTaintsPolicy Honor, whose taints they tolerate (kube-scheduler's default Ignore
// counts a tainted node's domain) — and on the offerings they may use.
func (s *state) eligibleDomains(sig int, key string, honorTaints bool) []string {
	honor := 0
	if honorTaints {
		honor = 1
	}
	k := [3]int{sig, s.keyIndex(key), honor}
	if d, ok := s.eligible[k]; ok {
		return d
	}
	seen := map[string]bool{}
	var out []string
	add := func(v string, ok bool) {
		if ok && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, n := range s.nodes {
		if n.existing && (honorTaints && s.nodeCompatible(sig, n) || !honorTaints && s.affinityMatches(sig, n.node)) {
			v, ok := n.labels[key]
			add(v, ok)
		}
	}
	for _, o := range s.offerings {
		if s.offeringCompatible(sig, o) {
			v, ok := o.labels[key]
			add(v, ok)
		}
	}
	if key == LabelZone && !honorTaints {
		for _, z := range s.pinnedZones() {
			if slices.ContainsFunc(z.offerings, func(o *offering) bool { return s.affinityMatches(sig, o.node) }) {
				add(z.zone, true)
			}
		}
		for _, o := range s.opened {
			add(o.zone, s.affinityMatches(sig, o.node))
		}
	}
	s.eligible[k] = out
	return out
}

// pinnedZone is a zone some pending pod can be bought a node in and no other: the offerings
// there that it may use and that can hold it.
type pinnedZone struct {
	zone      string
	offerings []*offering
}

// pinnedZones lists, once per simulation, the zones pending pods are pinned to (every offering
// they may use and that can hold them is there). A node bought for such a pod is a zone-spread
// domain of every pod whose node affinity it matches, tainted or not (kube-scheduler's default
// nodeTaintsPolicy Ignore), also of pods that cannot go there themselves: that domain keeps
// their count at 0, and with maxSkew 1 only one of them fits in each of their own zones.
// eligibleDomains counts these zones from the start, so the spread is planned against the
// domains the plan itself will open. (keepSpreadDomains moves a node whose pods do not care
// about the zone; a pinned pod's node cannot move. Generated scenario seed 93: four spread pods
// in two zones beside a GPU pod pinned to a third were all planned, and two of them never bound.)
// When the pinned pod is not placed after all, the spread was planned stricter than it needed
// to be: pessimistic, never a pod planned that the scheduler will not bind.
func (s *state) pinnedZones() []pinnedZone {
	if s.pinned != nil {
		return *s.pinned
	}
	out := []pinnedZone{}
	zero := make(vec, len(s.dims.names))
	done := map[int]bool{}
	byZone := map[string]int{}
	for _, pi := range s.pending {
		if done[pi.sig] {
			continue
		}
		done[pi.sig] = true
		zone, pinned := "", true
		var fit []*offering
		for _, o := range s.offerings {
			if !s.offeringCompatible(pi.sig, o) {
				continue
			}
			if _, short := s.shortfall(pi, zero, o.alloc); short {
				continue
			}
			if zone != "" && o.zone != zone {
				pinned = false
				break
			}
			zone, fit = o.zone, append(fit, o)
		}
		if !pinned || zone == "" {
			continue
		}
		i, ok := byZone[zone]
		if !ok {
			i = len(out)
			byZone[zone] = i
			out = append(out, pinnedZone{zone: zone})
		}
		out[i].offerings = append(out[i].offerings, fit...)
	}
	s.pinned = &out
	return out
}

func (s *state) keyIndex(key string) int {
	if i, ok := s.keys[key]; ok {
		return i
	}
	s.keys[key] = len(s.keys)
	return s.keys[key]
}
