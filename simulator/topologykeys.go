package simulator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// topologyKey is a topology key the pod's node must carry as a label: kube-scheduler filters out
// a node without the key of a hard (DoNotSchedule) spread constraint or of a required pod
// affinity term, even for the first pod of a self-affine group. field names where the pod says so.
type topologyKey struct {
	key   string
	field string
}

// requiredTopologyKeys lists those keys of the pod, hostname excluded (every node has it; a new
// node is labelled with its name).
func requiredTopologyKeys(pi *podInfo) []topologyKey {
	var out []topologyKey
	for i, c := range pi.pod.Spec.TopologySpreadConstraints {
		if c.TopologyKey != LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			out = append(out, topologyKey{c.TopologyKey, fmt.Sprintf("topologySpreadConstraints[%d].topologyKey", i)})
		}
	}
	if a := pi.pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for i, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey != LabelHostname {
				out = append(out, topologyKey{t.TopologyKey, fmt.Sprintf("affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[%d].topologyKey", i)})
			}
		}
	}
	return out
}

// carriesKeys reports whether labels have every key.
func carriesKeys(labels map[string]string, keys []topologyKey) bool {
	for _, k := range keys {
		if _, ok := labels[k.key]; !ok {
			return false
		}
	}
	return true
}

// offeringCarriesKeys reports whether a node of o would carry the pod's required topology keys.
func offeringCarriesKeys(pi *podInfo, o *offering) bool {
	return len(pi.topoKeys) == 0 || carriesKeys(o.labels, pi.topoKeys)
}

// nodeCarriesKeys reports whether node n carries, or as a new node may still carry, the pod's
// required topology keys: an existing node by its labels, a new one when a candidate does.
func nodeCarriesKeys(pi *podInfo, n *simNode) bool {
	if len(pi.topoKeys) == 0 {
		return true
	}
	if n.existing {
		return carriesKeys(n.labels, pi.topoKeys)
	}
	for _, o := range n.cands {
		if carriesKeys(o.labels, pi.topoKeys) {
			return true
		}
	}
	return false
}

// missingTopologyKey explains a pod whose required topology key no node it may use carries —
// no existing node and no offering that its node selection accepts — or returns "". Planning it
// onto a new node without the label would buy a node the scheduler then does not use.
func (s *state) missingTopologyKey(pi *podInfo) string {
	for _, k := range pi.topoKeys {
		found := false
		for _, n := range s.nodes {
			if _, ok := n.labels[k.key]; ok && n.existing && s.nodeCompatible(pi.sig, n) {
				found = true
				break
			}
		}
		for _, o := range s.offerings {
			if _, ok := o.labels[k.key]; ok && !found && s.offeringCompatible(pi.sig, o) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("%s %q: no node or offering it may use carries that label, and the scheduler puts it on no node without it", k.field, k.key)
		}
	}
	return ""
}
