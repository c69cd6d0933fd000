package provisioner

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A Replace action's replacement keeps its room for the pods the plan moves there.
//
// Until session 51 a replacement registered without a reservation (api.TaintReserved, reserve.go):
// no pending pod was planned there, the pods it is bought for still running on the nodes the
// action removes. It was open to any pod. When several actions drain at once (an expiry rolling
// a fleet of one-GPU nodes), kube-scheduler bound each evicted pod's replica to whichever new node
// its score preferred, not to its own action's replacement: campaign seed 44 logged 12 such swaps
// in one expiry phase, and twice the swap left a zone-spread replica with no node its hard spread
// allowed, and a node was bought for it.
//
// Now a replacement registers reserved like every node Tiler buys, and the reservation is held
// while the action's nodes are there (replacementsUnderWay, read by the reservation watch). When
// the drain ends a pod the plan moves to the replacement (AnnotationDisruptionReplacementPods),
// the replica its controller makes for it (a ReplicaSet's, a StatefulSet's or a
// ReplicationController's: a pod of that controller that did not exist when the pod was ended,
// unbound, tolerating no reservation) is given the replacement's toleration (steerReplicas), as a
// batch gives a planned pod its new node's; the action's nodes go only once every such replica
// has it, or a reschedule grace after the eviction when none comes (steers.unsteered). The
// replica binds there and on no other reserved node; the reservation then ends as usual once no
// unbound pod tolerates it, or after Config.ReservationTTL Ready. A replica that binds elsewhere
// before its toleration is written (room nothing reserved) is a move, as before, and takes
// nothing from the other actions' replacements.
//
// Between the eviction and the toleration (one pass) the replica may fail to schedule once; a
// replica of a higher priority may then preempt a pod elsewhere, which it could before too.
// What is steered is kept in memory (disruptionMemory.steers): after a restart, a replica not yet
// given its toleration is planned by the batch once the reschedule grace ends (the simulation
// ignores the reservation, so it puts it on the replacement's room and gives it the toleration),
// or binds once the TTL ends the reservation.

// steer is a pod an action ended whose replica goes to the action's replacement.
type steer struct {
	owner types.UID
	// at: when the drain first saw the pod ended.
	at time.Time
	// before: the controller's pods when the pod was ended (the replica is none of them).
	before map[types.UID]bool
	// given: the replica given the toleration ("namespace/name"; empty: none yet).
	given string
}

// steers are, per action, the pods it ended that the plan moves to its replacement, by UID.
type steers struct {
	mu sync.Mutex
	by map[string]map[types.UID]*steer
}

// note remembers that action id ended pod p (once, at now), with its controller's pods among all.
func (s *steers) note(id string, p *corev1.Pod, all []*corev1.Pod, now time.Time) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || !replacedBy[ref.Kind] {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]map[types.UID]*steer{}
	}
	if s.by[id] == nil {
		s.by[id] = map[types.UID]*steer{}
	}
	if s.by[id][p.UID] != nil {
		return
	}
	st := &steer{owner: ref.UID, at: now, before: map[types.UID]bool{}}
	for _, q := range all {
		if r := metav1.GetControllerOfNoCopy(q); r != nil && r.UID == ref.UID {
			st.before[q.UID] = true
		}
	}
	s.by[id][p.UID] = st
}

// forget drops what action id steered (it ended).
func (s *steers) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.by, id)
}

// pick returns, for each pod action id ended whose replica has no toleration yet, a replica to
// give it (pod key → the steer to mark once written): a pod of its controller made since (not
// in before), unbound, not terminating, tolerating no reservation, and not picked for another
// ended pod (of any action). When there is none, a replica made since that is bound already
// (elsewhere: room nothing reserved), finished, or that a batch gave a reservation settles the
// ended pod without a toleration.
func (s *steers) pick(id string, all []*corev1.Pod) map[string]*steer {
	s.mu.Lock()
	defer s.mu.Unlock()
	taken := map[string]bool{}
	for _, byPod := range s.by {
		for _, st := range byPod {
			if st.given != "" {
				taken[st.given] = true
			}
		}
	}
	out := map[string]*steer{}
	for _, st := range s.by[id] {
		if st.given != "" {
			continue
		}
		var settle string
		for _, q := range all {
			key := q.Namespace + "/" + q.Name
			r := metav1.GetControllerOfNoCopy(q)
			if r == nil || r.UID != st.owner || st.before[q.UID] || q.DeletionTimestamp != nil || taken[key] {
				continue
			}
			if waitingPod(q) && len(reservedValues(q)) == 0 {
				taken[key] = true
				out[key] = st
				settle = ""
				break
			}
			if settle == "" {
				settle = key
			}
		}
		if settle != "" {
			// Bound, finished or reserved by a batch: nothing to steer.
			taken[settle] = true
			st.given = settle
		}
	}
	return out
}

// unsteered counts the pods action id ended less than grace before now whose replica has not
// been given its toleration yet.
func (s *steers) unsteered(id string, now time.Time, grace time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.by[id] {
		if st.given == "" && now.Sub(st.at) <= grace {
			n++
		}
	}
	return n
}

// mark marks st's replica as given its toleration.
func (s *steers) mark(st *steer, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.given = key
}

// steerReplicas gives the replicas of the pods action a ended, of those the plan moves to its
// replacement, the replacement's reservation toleration (see above). on are the action's nodes;
// all the pods; now the pass's time. Nothing without reservations, a replacement or such pods.
func (c *Controller) steerReplicas(ctx context.Context, log *zap.Logger, a *actionState, on map[string]bool, all []*corev1.Pod, now time.Time) {
	ids := a.replacements()
	if c.reservations == nil || len(ids) == 0 || len(a.toReplacement) == 0 {
		return
	}
	for _, p := range all {
		if on[p.Spec.NodeName] && a.toReplacement[p.Namespace+"/"+p.Name] &&
			(p.DeletionTimestamp != nil || c.disruption.hasEnded(p.UID, now)) {
			c.disruption.steers.note(a.id, p, all, now)
		}
	}
	for key, st := range c.disruption.steers.pick(a.id, all) {
		if err := c.reservations.addTolerations(ctx, key, ids); err != nil {
			log.Warn("giving a replica its replacement's reservation toleration", zap.String(keyPod, key), zap.Strings("reservations", ids), zap.Error(err))
			continue
		}
		c.disruption.steers.mark(st, key)
		log.Info("replica steered to the replacement", zap.String(keyPod, key), zap.Strings("reservations", ids))
	}
}

// replacementsUnderWay returns the launch IDs of the replacements of the actions whose nodes are
// still there (api.AnnotationDisruptionReplacement): the reservation watch holds their
// reservations, whatever pod tolerates them yet.
func replacementsUnderWay(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Annotations[api.AnnotationDisruptionAction] == "" {
			continue
		}
		for _, id := range strings.Split(n.Annotations[api.AnnotationDisruptionReplacement], ",") {
			if id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}
