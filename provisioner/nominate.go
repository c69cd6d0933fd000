package provisioner

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Nominations (KEP-5278) tell kube-scheduler where each planned pod is expected to land:
// status.nominatedNodeName names the node bought for it. The scheduler tries that node first and,
// when it evaluates other pods on a node, counts the pods nominated there, which keeps pods planned
// for later nodes off the room of a node that came up first.
//
// kube-scheduler clears an external nomination at the pod's next failed attempt, and each clear
// makes it retry every pending pod of equal or lower priority at once: a nomination set again at
// once is cleared again by those retries, a loop that keeps the scheduler busy while nodes boot.
// So Tiler nominates as soon as the cloud accepted the launch, sets a cleared nomination again
// only after a per-pod delay that doubles with each clear (nominationRetryMin to
// nominationRetryMax, from the minimum again when the node advances), and stops once the pod is
// bound, its launch record is gone or its node has been usable for nominationGrace. It writes only
// a nomination that is empty or its own (api.AnnotationNominatedBy, api.AnnotationNominatedNode),
// never the scheduler's preemption nomination, and every write carries the pod's resourceVersion.
//
// The kube-scheduler v1.37 code this follows (https://github.com/kubernetes/kubernetes/blob/v1.37.2/):
//   - the clear: pkg/scheduler/framework/preemption/preemption.go, Evaluator.Preempt returning
//     NewPostFilterResultWithNominatedNode("") when preemption does not help;
//   - the retries: pkg/scheduler/eventhandlers.go, updatePodInSchedulingQueue and
//     hasNominatedNodeNameChanged;
//   - nominated pods counted on their node: pkg/scheduler/framework/runtime/framework.go,
//     RunFilterPluginsWithNominatedPods;
//   - the maximum pod backoff: pkg/scheduler/backend/queue/backoff_queue.go.

// nominatedByTiler is the value of api.AnnotationNominatedBy on pods Tiler nominated.
const nominatedByTiler = "tiler"

// nominationGrace is how long after a planned node became usable Tiler still nominates the pods
// planned onto it that have no nomination: longer than kube-scheduler's maximum pod backoff
// (podMaxBackoffSeconds, 10 s), so a pod whose attempt failed just before its node came up is
// retried with its nomination in force.
const nominationGrace = 15 * time.Second

// nominationRetryMin and nominationRetryMax bound the delay before a nomination the scheduler
// cleared is set again. A round of retries after a clear takes milliseconds for a few pods and
// about a second for a thousand (each attempt that fails takes ~1 ms); the maximum, the
// scheduler's maximum pod backoff, bounds the writes to one per pod every 10 s while the pods keep
// failing.
const (
	nominationRetryMin = 250 * time.Millisecond
	nominationRetryMax = 10 * time.Second
)

// nodePhase is how far a launched node has come, as far as its planned pods are concerned.
type nodePhase int

const (
	// phaseLaunched: the cloud accepted the launch; no Node yet.
	phaseLaunched nodePhase = iota
	// phaseRegistered: the Node exists but is not Ready, or still has a start-up taint.
	phaseRegistered
	// phaseReady: Ready and untainted, GPUs not advertised yet (the device-plugin gap).
	phaseReady
	// phaseUsable: the node can take its planned pods.
	phaseUsable
	// phaseDown: the node was Ready once (LaunchRecord.ReadyAt) and is not now, or its Node is
	// gone: it is not coming up, and no pod waits for it (repair replaces it; a gone Node's
	// launch is removed).
	phaseDown
)

// phaseOf returns the phase of the node n (nil: not registered) launched for the record r;
// sliced reports whether DRA ResourceSlices exist for the node (GPUs that only the DRA driver
// publishes: dynamic MIG, consumable memory).
func phaseOf(n *corev1.Node, r LaunchRecord, sliced bool) nodePhase {
	wasReady := !r.ReadyAt.IsZero()
	switch {
	case n == nil && wasReady:
		return phaseDown
	case n == nil:
		return phaseLaunched
	case !snapshot.IsNodeReady(n) || hasStartupTaint(n):
		if wasReady {
			return phaseDown
		}
		return phaseRegistered
	case !devicesShown(n, r, sliced):
		return phaseReady
	}
	return phaseUsable
}

// hasStartupTaint reports whether the node still carries a taint that keeps pods off a node that
// is coming up.
func hasStartupTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeNetworkUnavailable,
			"node.cloudprovider.kubernetes.io/uninitialized":
			return true
		}
	}
	return false
}

// NominationOp is what the controller does to one pod's nomination.
type NominationOp int

const (
	// NominationKeep leaves the pod alone.
	NominationKeep NominationOp = iota
	// NominationSet sets nominatedNodeName to the planned node, with Tiler's annotations.
	NominationSet
	// NominationClear clears Tiler's stale nomination and its annotations.
	NominationClear
	// NominationRelease drops Tiler's annotations from a pod the scheduler nominated elsewhere.
	NominationRelease
)

// String names the operation in logs.
func (o NominationOp) String() string {
	return [...]string{"keep", "set", "clear", "release"}[o]
}

// nominationChange is a decision about one pod: the operation and, for NominationSet, the node.
// again marks a NominationSet that restores Tiler's nomination after the scheduler cleared it.
type nominationChange struct {
	op    NominationOp
	node  string
	again bool
}

// plannedNode is one launch record as nominations see it: the record and the pods planned onto it.
type plannedNode struct {
	record LaunchRecord
	pods   map[string]bool
}

// nominationPlan indexes the launch records by node and by planned pod (namespace/name).
type nominationPlan struct {
	nodes map[string]*plannedNode
	pods  map[string]*plannedNode
	// byInstance finds a record by its cloud instance, for a Node that registers under another
	// name than the planned one (EKS names nodes after the instance's private DNS name).
	byInstance map[string]*plannedNode
}

// newNominationPlan indexes recs. A pod listed by several records is planned onto the last one in
// launch-ID order.
func newNominationPlan(recs []LaunchRecord) *nominationPlan {
	pl := &nominationPlan{nodes: map[string]*plannedNode{}, pods: map[string]*plannedNode{}, byInstance: map[string]*plannedNode{}}
	for _, r := range recs {
		pn := &plannedNode{record: r, pods: map[string]bool{}}
		for _, key := range r.Pods {
			pn.pods[key] = true
			pl.pods[key] = pn
		}
		pl.nodes[r.NodeName] = pn
		if r.InstanceID != "" {
			pl.byInstance[r.InstanceID] = pn
		}
	}
	return pl
}

// lists reports whether a launch record for node plans the pod key onto it.
func (pl *nominationPlan) lists(node, key string) bool {
	pn := pl.nodes[node]
	return pn != nil && pn.pods[key]
}

// nominationView is what a decision reads: the plan, the Nodes, and how far each planned node has
// come.
type nominationView struct {
	plan *nominationPlan
	node func(name string) *corev1.Node
	// observe returns the phase of the node n (nil: not registered) launched for r and, when it is
	// usable, for how long it has been.
	observe func(n *corev1.Node, r LaunchRecord) (nodePhase, time.Duration)
	// pod returns the pod namespace/name (nil: unknown); nil pod means none is known.
	pod func(key string) *corev1.Pod
}

// target returns the node the pod key should be nominated for now, or "": the node of its launch
// record once the cloud accepted the launch or the Node registered, until the node has been usable
// for nominationGrace.
func (v nominationView) target(key string) string {
	pn := v.plan.pods[key]
	if pn == nil {
		return ""
	}
	r := pn.record
	n := v.node(r.NodeName)
	if n == nil && r.InstanceID == "" {
		return "" // the cloud has not accepted the launch yet
	}
	if phase, usableFor := v.observe(n, r); phase == phaseDown || phase == phaseUsable && usableFor > nominationGrace {
		return ""
	}
	if v.blocksSpread(key, pn) {
		return ""
	}
	return r.NodeName
}

// blocksSpread reports whether nominating the pod key onto its planned node would keep another
// pod planned there from being scheduled. When kube-scheduler evaluates a pod on a node, it counts
// the pods nominated to that node (of equal or higher priority) as if they ran there, but not the
// pods nominated to other nodes: for a pod whose hard topology spread constraint selects a pod
// nominated to the same node, that node's domain looks one pod fuller than every other domain —
// whose planned pods are only nominated — and two such pods planned together on one node block
// each other for as long as their nominations stand (seed-75: four zone-spread pods planned two
// per zone were never bound). Such pods are not nominated; the node's reservation keeps their
// room.
func (v nominationView) blocksSpread(key string, pn *plannedNode) bool {
	if v.pod == nil {
		return false
	}
	x := v.pod(key)
	if x == nil {
		return false
	}
	var together []*corev1.Pod
	for other := range pn.pods {
		if y := v.pod(other); y != nil && other != key {
			together = append(together, y)
		}
	}
	return NominationBlocksSpread(x, together)
}

// NominationBlocksSpread reports whether nominating pod x to a node would keep one of the pending
// pods planned onto the same node from being scheduled there: a hard topology spread constraint of
// that pod counts x, and x's priority is not lower than its (see nominationView.blocksSpread).
func NominationBlocksSpread(x *corev1.Pod, together []*corev1.Pod) bool {
	for _, y := range together {
		if y == x || y.Namespace != x.Namespace || !snapshot.IsPending(y) ||
			corev1helpers.PodPriority(x) < corev1helpers.PodPriority(y) {
			continue
		}
		for _, c := range y.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable == corev1.DoNotSchedule && spreadSelects(c, y, x) {
				return true
			}
		}
	}
	return false
}

// spreadSelects reports whether the topology spread constraint c of pod y counts pod x (same
// namespace): its label selector, with y's values of its matchLabelKeys, matches x's labels.
func spreadSelects(c corev1.TopologySpreadConstraint, y, x *corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil || c.LabelSelector == nil || !sel.Matches(labels.Set(x.Labels)) {
		return false
	}
	for _, k := range c.MatchLabelKeys {
		if v, ok := y.Labels[k]; ok && x.Labels[k] != v {
			return false
		}
	}
	return true
}

// decide returns what to do with the pod's nomination (see the comment at the top of this file).
func (v nominationView) decide(p *corev1.Pod) nominationChange {
	if !snapshot.IsPending(p) {
		return nominationChange{}
	}
	key := p.Namespace + "/" + p.Name
	want := v.target(key)
	nnn := p.Status.NominatedNodeName
	tagged := p.Annotations[api.AnnotationNominatedBy] == nominatedByTiler
	// Pods nominated by an older Tiler carry only api.AnnotationNominatedBy.
	recorded, hasRecorded := p.Annotations[api.AnnotationNominatedNode]
	ours := tagged && (!hasRecorded || recorded == nnn)
	switch {
	case nnn == want:
		return nominationChange{}
	case nnn == "":
		// With Tiler's annotations for the same node, the scheduler cleared Tiler's nomination.
		return nominationChange{op: NominationSet, node: want, again: tagged && recorded == want}
	case !tagged:
		return nominationChange{} // someone else's nomination, e.g. the scheduler's preemption
	case !ours:
		return nominationChange{op: NominationRelease}
	case v.plan.lists(nnn, key):
		return nominationChange{} // ours, for a node still planned for the pod
	case want != "":
		return nominationChange{op: NominationSet, node: want} // ours, for a launch that is gone
	default:
		return nominationChange{op: NominationClear}
	}
}

// nominationPatch renders a decision as a JSON merge patch.
func nominationPatch(p *corev1.Pod, ch nominationChange) ([]byte, error) {
	meta := map[string]any{}
	if p.ResourceVersion != "" {
		meta["resourceVersion"] = p.ResourceVersion
	}
	patch := map[string]any{"metadata": meta}
	switch ch.op {
	case NominationSet:
		meta["annotations"] = map[string]any{api.AnnotationNominatedBy: nominatedByTiler, api.AnnotationNominatedNode: ch.node}
		patch["status"] = map[string]any{"nominatedNodeName": ch.node}
	case NominationClear:
		meta["annotations"] = map[string]any{api.AnnotationNominatedBy: nil, api.AnnotationNominatedNode: nil}
		patch["status"] = map[string]any{"nominatedNodeName": nil}
	case NominationRelease:
		meta["annotations"] = map[string]any{api.AnnotationNominatedBy: nil, api.AnnotationNominatedNode: nil}
	default:
		return nil, fmt.Errorf("no patch for nomination op %s", ch.op)
	}
	return json.Marshal(patch)
}

// decideNominations runs the nomination decisions over every pod of the batch, with its launch
// records (those that remain after housekeeping) and Nodes, and returns the pods whose nomination
// should change. The nomination watch decides again when it writes them, at the pace that holds
// for the events in between (nominate_watch.go).
func decideNominations(s *State, recs []LaunchRecord) []Nomination {
	byName := make(map[string]*corev1.Node, len(s.Nodes))
	for _, n := range s.Nodes {
		byName[n.Name] = n
	}
	sliced := slicedNodes(s.ResourceSlices)
	// Only pending pods are nominated, and only pending pods keep one another from being
	// scheduled (blocksSpread).
	pending := map[string]*corev1.Pod{}
	for _, p := range s.Pods {
		if snapshot.IsPending(p) {
			pending[p.Namespace+"/"+p.Name] = p
		}
	}
	v := nominationView{
		plan: newNominationPlan(recs),
		node: func(name string) *corev1.Node { return byName[name] },
		observe: func(n *corev1.Node, r LaunchRecord) (nodePhase, time.Duration) {
			if n == nil {
				return phaseOf(nil, r, false), 0
			}
			phase := phaseOf(n, r, sliced[n.Name])
			since, seen := s.UsableSince[n.Name]
			if phase != phaseUsable || !seen {
				return phase, 0
			}
			return phase, s.Now.Sub(since)
		},
		pod: func(key string) *corev1.Pod { return pending[key] },
	}
	var out []Nomination
	for _, p := range s.Pods {
		if ch := v.decide(p); ch.op != NominationKeep {
			out = append(out, Nomination{Pod: p.Namespace + "/" + p.Name, Op: ch.op, Node: ch.node})
		}
	}
	return out
}
