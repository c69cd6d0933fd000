//go:build linux && chaos

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/testwait"
)

// killPoint is a moment of a purchase or a disruption at which the test kills the controller: the
// first moment the test sees cond hold for k, against the view before the round began.
type killPoint struct {
	name string
	// most is the largest k worth drawing for the round (at least 1).
	most func(r round) int
	cond func(r round, v view, k int) bool
}

// round is one purchase (the app scaled up) or one disruption (scaled down), with the view of the
// cluster before it.
type round struct {
	before   view
	from, to int
}

func (r round) newNodes() int  { return max(1, nodesFor(r.to)-nodesFor(r.from)) }
func (r round) goneNodes() int { return max(1, nodesFor(r.from)-nodesFor(r.to)) }

// newRecords are the records the round wrote.
func (r round) newRecords(v view) (all, withInstance int) {
	old := map[string]bool{}
	for _, rec := range r.before.records {
		old[rec.LaunchID] = true
	}
	for _, rec := range v.records {
		if !old[rec.LaunchID] {
			all++
			if rec.InstanceID != "" {
				withInstance++
			}
		}
	}
	return all, withInstance
}

// newNodes are the managed Nodes the round registered, and how many of them are Ready.
func (r round) registered(v view) (all, ready int) {
	old := map[string]bool{}
	for _, n := range r.before.nodes {
		old[n.Name] = true
	}
	for _, n := range v.nodes {
		if !old[n.Name] {
			all++
			if snapshot.IsNodeReady(n) {
				ready++
			}
		}
	}
	return all, ready
}

// newInstance returns the ID of an instance the round launched that the cloud has not deleted
// yet, "" for none.
func (r round) newInstance(v view) string {
	deleted := map[string]bool{}
	for _, e := range v.events {
		if e.Kind == sim.EventDeleted {
			deleted[e.InstanceID] = true
		}
	}
	for _, e := range v.events[len(r.before.events):] {
		if e.Kind == sim.EventLaunched && !deleted[e.InstanceID] {
			return e.InstanceID
		}
	}
	return ""
}

// gone are the round's earlier pods that were evicted (terminating or deleted).
func (r round) gone(v view) int {
	now := map[string]*corev1.Pod{}
	for _, p := range v.pods {
		now[string(p.UID)] = p
	}
	n := 0
	for _, p := range r.before.livePods() {
		if q := now[string(p.UID)]; q == nil || q.DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

// purchasePoints span a purchase: before the launch record is written (pods pending, the batch
// open), once records are written, once the cloud has the instance (before or after its ID is
// recorded), before and after the Node registers, while the pods bind.
var purchasePoints = []killPoint{
	{"pods pending, batch open (no record yet)", func(r round) int { return r.to - r.from },
		func(r round, v view, k int) bool {
			pending := 0
			for _, p := range v.livePods() {
				if p.Spec.NodeName == "" {
					pending++
				}
			}
			all, _ := r.newRecords(v)
			return pending >= k && all == 0
		}},
	{"launch record written", round.newNodes, func(r round, v view, k int) bool { all, _ := r.newRecords(v); return all >= k }},
	{"cloud called (instance exists)", round.newNodes, func(r round, v view, k int) bool {
		return v.count(sim.EventLaunched)-r.before.count(sim.EventLaunched) >= k
	}},
	{"instance ID recorded, Node not registered", round.newNodes, func(r round, v view, k int) bool {
		_, with := r.newRecords(v)
		nodes, _ := r.registered(v)
		return with >= k && nodes < r.newNodes()
	}},
	{"Node registered", round.newNodes, func(r round, v view, k int) bool { n, _ := r.registered(v); return n >= k }},
	{"Node Ready, pods binding", func(r round) int { return r.to - r.from }, func(r round, v view, k int) bool {
		_, ready := r.registered(v)
		bound := 0
		for _, p := range v.livePods() {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return ready >= 1 && bound-r.from >= k
	}},
}

// disruptionPoints span a consolidation or a drifted node's replacement: the node cordoned, its
// drain under way (pods evicted), the instance deleted, the Node gone (a Node of the fleet before
// the round, whatever replaced it).
var disruptionPoints = []killPoint{
	{"node cordoned for disruption", func(round) int { return 1 }, func(r round, v view, k int) bool {
		n := 0
		for _, nd := range v.nodes {
			if nd.Spec.Unschedulable {
				n++
			}
		}
		return n >= k
	}},
	{"draining (pods evicted)", func(r round) int { return min(3, r.to) }, func(r round, v view, k int) bool { return r.gone(v) >= k }},
	{"instance deleted", round.goneNodes, func(r round, v view, k int) bool {
		return v.count(sim.EventDeleted)-r.before.count(sim.EventDeleted) >= k
	}},
	{"Node gone", round.goneNodes, func(r round, v view, k int) bool {
		now := map[string]bool{}
		for _, n := range v.nodes {
			now[n.Name] = true
		}
		gone := 0
		for _, n := range r.before.nodes {
			if !now[n.Name] {
				gone++
			}
		}
		return gone >= k
	}},
}

// TestChaosKillPoints: the controller, a real `tiler run` process, is killed with SIGKILL at a
// randomly drawn point of each purchase and each disruption (consolidation) of a Deployment that
// is scaled up and down, and a new process started at once. After every round the cluster must
// settle on the right fleet with every pod bound and Ready, the cloud's instances exactly the
// managed Nodes and the launch records, no launch ID bought twice, no purchase beyond the
// fleet's need, and the PodDisruptionBudget (maxUnavailable 1) never broken during a
// consolidation.
func TestChaosKillPoints(t *testing.T) {
	s := seed(t)
	cycles := 6
	if c := os.Getenv("CHAOS_CYCLES"); c != "" {
		var err error
		if cycles, err = strconv.Atoi(c); err != nil || cycles < 1 {
			t.Fatalf("CHAOS_CYCLES %q: want a positive number", c)
		}
	}
	t.Logf("CHAOS_SEED=%d CHAOS_CYCLES=%d", s, cycles)
	h := newHarness(t, s)
	h.image = "img-0"
	ctrl := h.start()
	n := 3
	h.scale(n)
	h.until("the first pods to settle", 60*time.Second, func(v view) bool { return v.settled(n) }, ctrl)
	h.checkInvariants("start")

	kills := map[string]int{}
	missed := map[string]int{}
	var extra int
	start := time.Now()
	for c := 1; c <= cycles; c++ {
		// Purchase: at least one new node.
		up := n + 1 + h.rng.IntN(8)
		for nodesFor(up) == nodesFor(n) {
			up++
		}
		ctrl, extra = h.killRound(t, fmt.Sprintf("cycle %d purchase %d→%d", c, n, up), ctrl, n, up, purchasePoints, kills, missed, extra)
		n = up
		// Disruption: at least one node fewer, consolidated with drains.
		// At least two pods stay, spread over the nodes (spreadKeepers), so that there is a
		// drain to kill.
		down := 2 + h.rng.IntN(max(1, n-podsPerNode-1))
		for nodesFor(down) == nodesFor(n) {
			down--
		}
		ctrl, extra = h.killRound(t, fmt.Sprintf("cycle %d disruption %d→%d", c, n, down), ctrl, n, down, disruptionPoints, kills, missed, extra)
		n = down
		// Every third cycle, the fleet is rolled onto a new image (the controller restarted with
		// it, as a Helm upgrade of the image flag would): every node drifts and is replaced.
		if c%3 == 0 && !t.Failed() {
			ctrl, extra = h.rollRound(t, fmt.Sprintf("cycle %d image roll to img-%d", c, c), ctrl, n, fmt.Sprintf("img-%d", c), kills, missed, extra)
		}
		if t.Failed() {
			break
		}
	}
	total := 0
	var lines []string
	for name, k := range kills {
		total += k
		lines = append(lines, fmt.Sprintf("%s: %d", name, k))
	}
	sort.Strings(lines)
	t.Logf("%d kill points exercised in %d cycles (%.0fs): %s; %d instances lost their capacity", total, cycles, time.Since(start).Seconds(),
		strings.Join(lines, "; "), h.capacityLost)
	if len(missed) > 0 {
		t.Logf("drawn but not reached before the round settled (no kill): %v", missed)
	}
	if extra > 0 {
		h.errorf("%d purchases beyond what the fleet needed", extra)
	}
	if total < cycles {
		h.errorf("only %d kills in %d cycles: the kill points are not being reached", total, cycles)
	}
}

// killRound scales the app from→to, kills the controller at a point drawn from points (when the
// round reaches it), starts a new controller, and checks the settled cluster. It returns the
// running controller and extra plus the purchases beyond the need of this round.
func (h *harness) killRound(t *testing.T, what string, ctrl *proc, from, to int, points []killPoint,
	kills, missed map[string]int, extra int) (*proc, int) {
	t.Helper()
	return h.runRound(t, what, ctrl, from, to, "", points, kills, missed, extra)
}

// rollRound rolls the fleet of n pods onto image: the controller is restarted with it, every node
// drifts and is replaced, and the controller is killed at a point drawn from the disruption
// points. The round settles once every launch record names image; it buys at most one node per
// node of the fleet, and the PodDisruptionBudget holds throughout.
func (h *harness) rollRound(t *testing.T, what string, ctrl *proc, n int, image string,
	kills, missed map[string]int, extra int) (*proc, int) {
	t.Helper()
	return h.runRound(t, what, ctrl, n, n, image, disruptionPoints, kills, missed, extra)
}

// runRound is killRound, and rollRound when image is set.
func (h *harness) runRound(t *testing.T, what string, ctrl *proc, from, to int, image string, points []killPoint,
	kills, missed map[string]int, extra int) (*proc, int) {
	t.Helper()
	r := round{before: h.look(), from: from, to: to}
	pt := points[h.rng.IntN(len(points))]
	k := 1 + h.rng.IntN(max(1, pt.most(r)))
	disruption := to < from || image != ""
	done := func(v view) bool { return v.settled(to) && (image == "" || v.onImage(image)) }
	switch {
	case image != "":
		h.image = image
		ctrl.kill()
		ctrl = h.start()
		h.avail.arm(to)
	case disruption:
		// The pods the scale-down keeps are spread over the nodes (pod-deletion-cost), so that
		// consolidation drains rather than finding nodes emptied. The budget is judged on the
		// fleet at its new size: the scale-down itself is not a disruption.
		h.spreadKeepers(to)
		h.scale(to)
		h.until(what+": the scale-down", 30*time.Second, func(v view) bool {
			live := v.livePods()
			if len(live) != to {
				return false
			}
			for _, p := range live {
				if !podReady(p) {
					return false
				}
			}
			return true
		}, ctrl)
		r.before = h.look()
		h.avail.arm(to)
	default:
		h.scale(to)
	}
	var killed bool
	var at view
	// In a third of the purchases the cloud also ends one of the new instances for want of
	// capacity, with no notice (sim's LoseCapacity), as soon as it is launched: the sweep, or
	// Recover after the kill, removes its launch and the fleet is bought for again, one purchase
	// more than the round's need.
	lose, lost := !disruption && h.rng.IntN(3) == 0, ""
	// The kill waits on a fast look: the windows between two writes of the controller are short.
	h.untilEvery(testwait.Fast, what+": the kill point "+pt.name, 90*time.Second, func(v view) bool {
		if lose && lost == "" {
			if id := r.newInstance(v); id != "" {
				switch err := h.cloud.LoseCapacity(context.Background(), id); {
				case err == nil:
					lost = id
					v = h.look()
				case !cloudprovider.IsNotFound(err): // NotFound: the controller deleted it first
					h.fatalf("%s: ending instance %s for want of capacity: %v", what, id, err)
				}
			}
		}
		if pt.cond(r, v, k) {
			ctrl.kill()
			killed, at = true, h.look()
			return true
		}
		return done(v)
	}, ctrl)
	label := fmt.Sprintf("%s (k=%d)", pt.name, k)
	if lost != "" {
		h.capacityLost++
		t.Logf("%s: instance %s lost its capacity", what, lost)
	}
	if killed {
		kills[pt.name]++
		t.Logf("%s: killed at %s; %s", what, label, phase(r, at))
		ctrl = h.start()
		if h.rng.IntN(3) == 0 {
			// Killed again while it recovers: as soon as it acts on what the first left
			// (relaunch, removal, orphan) or, when there is nothing to act on, once its caches
			// synced, when Recover runs.
			var seen string
			h.waitFor(what+": the restarted controller to recover", 60*time.Second, func() bool {
				for _, line := range []string{"relaunching a recorded launch", "removing a launch whose instance is gone", "deleting an orphan instance", "controller running"} {
					if ctrl.logged(line) {
						seen = line
						ctrl.kill()
						return true
					}
				}
				return ctrl.exited()
			})
			if ctrl.exited() {
				h.fatalf("%s: the restarted controller exited: %v\n%s", what, ctrl.err, tail(ctrl.logPath, 40))
			}
			kills["during recovery"]++
			t.Logf("%s: the restarted controller killed again at %q", what, seen)
			ctrl = h.start()
		}
	} else {
		missed[pt.name]++
		t.Logf("%s: settled before %s", what, label)
	}
	settled := h.until(what+": the cluster to settle after the kill", 120*time.Second, done, ctrl)
	if disruption {
		if most := h.avail.disarm(); most > 1 {
			h.errorf("%s: %d pods unavailable at once; the PodDisruptionBudget allows 1", what, most)
		}
	}
	if image != "" {
		if bought := settled.count(sim.EventLaunched) - r.before.count(sim.EventLaunched); bought > nodesFor(to) {
			h.errorf("%s: %d purchases to replace %d nodes", what, bought, nodesFor(to))
			extra += bought - nodesFor(to)
		}
	} else if !disruption {
		bought := settled.count(sim.EventLaunched) - r.before.count(sim.EventLaunched)
		need := nodesFor(to) - nodesFor(from)
		if lost != "" {
			need++
		}
		if bought > need {
			h.errorf("%s: %d purchases for %d new nodes", what, bought, need)
			extra += bought - need
		}
	}
	h.checkInvariants(what)
	return ctrl, extra
}

// phase says where the kill found the round: records without a live instance (written and not
// launched yet, or of a removal that deleted the instance), instances the records do not name
// yet, instances without a Node, cordoned nodes, evicted pods.
func phase(r round, v view) string {
	launched := map[string]bool{}
	for _, e := range v.events {
		switch e.Kind {
		case sim.EventLaunched:
			launched[e.LaunchID] = true
		case sim.EventDeleted:
			delete(launched, e.LaunchID)
		}
	}
	nodes := map[string]bool{}
	cordoned := 0
	for _, n := range v.nodes {
		nodes[n.Name] = true
		if n.Spec.Unschedulable {
			cordoned++
		}
	}
	var unlaunched, unrecorded, unregistered int
	for _, rec := range v.records {
		switch {
		case !launched[rec.LaunchID]:
			unlaunched++
		case rec.InstanceID == "":
			unrecorded++
		case !nodes[rec.NodeName]:
			unregistered++
		}
	}
	return fmt.Sprintf("%d records without a live instance (not launched yet, or its instance deleted), %d with a live instance not recorded in them, %d with a live instance and no Node, %d nodes cordoned, %d pods evicted",
		unlaunched, unrecorded, unregistered, cordoned, r.gone(v))
}
