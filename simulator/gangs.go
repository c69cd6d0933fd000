package simulator

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/tiler-dev/tiler/api"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// gang is a set of pods planned all-or-nothing.
type gang struct {
	name    string
	size    int // members needed; 0 means all members present
	members []*podInfo
	// topology is "node" (all members on one node), "zone" (one zone) or "".
	topology string
	// bound counts the members the scheduler has already bound: they count towards size, and
	// with a topology the pending members must join them (boundNode / boundZone, "" when the
	// bound members are spread over several).
	bound                int
	boundNode, boundZone string
}

// buildGangs groups pending pods by native PodGroup (spec.schedulingGroup naming a PodGroup of
// gang policy), tiler.dev/gang or the coscheduling pod-group label. A gang's members share the
// highest priority among them, so they stay together in placement order. A pod naming a PodGroup
// the snapshot lacks is not planned: the scheduler holds it until the PodGroup exists.
func (s *state) buildGangs() {
	groups := newPodGroups(s.in.Snapshot)
	s.groups = groups
	gangs := map[string]*gang{}
	for _, pi := range s.pending {
		if why := groups.missing(pi.pod); why != "" {
			s.reasons[pi] = api.UnschedulablePod{Pod: pi.key, Code: api.GangIncomplete, Reason: why}
			continue
		}
		name, size, topo := groups.gangOf(pi.pod)
		if name == "" {
			continue
		}
		key := pi.pod.Namespace + "/" + name
		g := gangs[key]
		if g == nil {
			g = &gang{name: key}
			gangs[key] = g
		}
		g.members = append(g.members, pi)
		g.size = max(g.size, size)
		if topo != "" {
			g.topology = topo
		}
		pi.gang = g
	}
	s.countBoundMembers(gangs)
	names := make([]string, 0, len(gangs))
	for k := range gangs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		g := gangs[k]
		var top int32
		for i, m := range g.members {
			if i == 0 || m.priority > top {
				top = m.priority
			}
		}
		for _, m := range g.members {
			m.priority = top
		}
		if g.size > len(g.members)+g.bound {
			why := fmt.Sprintf("gang %s needs %d members, %d are pending", g.name, g.size, len(g.members))
			if g.bound > 0 {
				why += fmt.Sprintf(" and %d bound", g.bound)
			}
			for _, m := range g.members {
				s.reasons[m] = api.UnschedulablePod{Pod: m.key, Code: api.GangIncomplete, Reason: why}
			}
		}
	}
	s.dropReasoned()
}

// countBoundMembers counts, for each gang with pending members, the members already bound to a
// node (active, not terminating), and where they are.
func (s *state) countBoundMembers(gangs map[string]*gang) {
	nodeZone := map[string]string{}
	for _, n := range s.in.Snapshot.Nodes {
		nodeZone[n.Name] = n.Labels[LabelZone]
	}
	for _, p := range s.in.Snapshot.Pods {
		if !snapshot.IsActive(p) || p.DeletionTimestamp != nil {
			continue
		}
		name, _, _ := s.groups.gangOf(p)
		g := gangs[p.Namespace+"/"+name]
		if name == "" || g == nil {
			continue
		}
		zone := nodeZone[p.Spec.NodeName]
		if g.bound == 0 {
			g.boundNode, g.boundZone = p.Spec.NodeName, zone
		}
		if g.boundNode != p.Spec.NodeName {
			g.boundNode = ""
		}
		if g.boundZone != zone {
			g.boundZone = ""
		}
		g.bound++
	}
}

// podGroups are the snapshot's native PodGroups by namespace/name.
type podGroups map[string]*schedulingv1beta1.PodGroup

func newPodGroups(snap *snapshot.Snapshot) podGroups {
	if len(snap.PodGroups) == 0 {
		return nil
	}
	out := make(podGroups, len(snap.PodGroups))
	for _, g := range snap.PodGroups {
		out[g.Namespace+"/"+g.Name] = g
	}
	return out
}

// podGroupName is the PodGroup the pod names in spec.schedulingGroup, or "".
func podGroupName(p *corev1.Pod) string {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName
	}
	return ""
}

// missing says why a pod naming a PodGroup the snapshot lacks waits, or "".
func (g podGroups) missing(p *corev1.Pod) string {
	name := podGroupName(p)
	if name == "" || g[p.Namespace+"/"+name] != nil {
		return ""
	}
	return fmt.Sprintf("PodGroup %s/%s does not exist: the scheduler holds its pods until it is created", p.Namespace, name)
}

// gangOf names the pod's gang, the members it needs (0: all present) and its topology. A native
// PodGroup of gang policy comes first (size: its minCount; a basic-policy PodGroup is no gang),
// then tiler.dev/gang, then the coscheduling label.
func (g podGroups) gangOf(p *corev1.Pod) (name string, size int, topology string) {
	l := p.Labels
	if n := podGroupName(p); n != "" {
		if pg := g[p.Namespace+"/"+n]; pg != nil && pg.Spec.SchedulingPolicy.Gang != nil {
			return n, int(pg.Spec.SchedulingPolicy.Gang.MinCount), l[api.LabelTopology]
		}
	}
	if n := l[api.LabelGang]; n != "" {
		size, _ = strconv.Atoi(l[api.LabelGangSize])
		return n, size, l[api.LabelTopology]
	}
	if n := l[api.LabelPodGroup]; n != "" {
		size, _ = strconv.Atoi(p.Annotations[AnnotationPodGroupMinMember])
		return n, size, l[api.LabelTopology]
	}
	return "", 0, ""
}

// AnnotationPodGroupMinMember carries a coscheduling PodGroup's minMember on its pods, since the
// snapshot holds no PodGroup objects.
const AnnotationPodGroupMinMember = "scheduling.x-k8s.io/min-member"

// dropReasoned removes from the pending list the pods that already have a reason.
func (s *state) dropReasoned() {
	kept := s.pending[:0]
	for _, pi := range s.pending {
		if _, ok := s.reasons[pi]; !ok {
			kept = append(kept, pi)
		}
	}
	s.pending = kept
}
