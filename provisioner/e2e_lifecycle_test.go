package provisioner_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// expirePolicy expires the pool's nodes 20 s after creation; consolidation is off, so that only
// expiry moves work.
const expirePolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: short
  instanceTypes: [m7i.large]
  capacityTypes: [on-demand]
  disruption:
    consolidation: never
    expireAfter: 20s
`

// testNodeExpiry: a node past its pool's expireAfter is replaced through the disruption
// mechanism that consolidation uses (simulator.PlanDisruption's Expired reason carried out by the
// same executor): the replacement is launched and Ready before the old node is cordoned, the
// PodDisruptionBudget (maxUnavailable 1) holds during the whole run, every pod ends Ready on the
// replacement, and the cloud's instances match the Nodes.
func testNodeExpiry(t *testing.T, cp *controlplane.ControlPlane) {
	e, _ := newDisruptionEnv(t, cp, disruptionConfig(), nil)
	ns, app := "expiry", "expiry"
	e.namespace(ns)
	e.applyPolicy("policy", expirePolicy)
	tmpl := simtest.Pod("t").Namespace(ns).Label("app", app).CPU("500m").Mem("1Gi").Obj()
	e.deployment(ns, app, 2, tmpl)
	one := intstr.FromInt32(1)
	e.pdb(ns, app, &one, nil)
	e.waitAppReady(ns, app, 2, 60*time.Second)
	nodes := e.managedNodes()
	if len(nodes) != 1 {
		t.Fatalf("nodes %v for 2 small pods, want one m7i.large", names(nodes))
	}
	old := nodes[0].Name
	launches := e.launches()
	watch := e.watchAvailability(ns, app, 2)
	nw := e.watchNodes()
	start := time.Now()
	testwait.Until(t, testwait.Slow, "the expired node to be replaced", 90*time.Second, func() bool {
		nodes := e.managedNodes()
		return len(nodes) == 1 && nodes[0].Name != old && len(e.records()) == 1
	})
	events := nw.finish()
	repl := e.managedNodes()[0].Name
	pods := e.waitAppReady(ns, app, 2, 30*time.Second)
	missing, seen := watch.finish()
	t.Logf("node %s expired and was replaced by %s %.1fs after the pods were Ready (%d availability events)", old, repl, time.Since(start).Seconds(), seen)
	if missing > 1 {
		t.Errorf("%d pods unavailable at once; the PDB allows 1", missing)
	}
	readyAt, cordonAt := -1, -1
	for i, ev := range events {
		if readyAt < 0 && ev.name == repl && ev.ready {
			readyAt = i
		}
		if cordonAt < 0 && ev.name == old && ev.unschedulable {
			cordonAt = i
		}
	}
	if readyAt < 0 || cordonAt < 0 || readyAt > cordonAt {
		t.Errorf("replacement Ready at node event %d, old node cordoned at %d: the replacement must be Ready first", readyAt, cordonAt)
	}
	for _, p := range pods {
		if p.Spec.NodeName != repl {
			t.Errorf("pod %s is on %s, want the replacement %s", p.Name, p.Spec.NodeName, repl)
		}
	}
	if got := e.launches() - launches; got < 1 {
		t.Errorf("%d launches since the pods were Ready, want the replacement", got)
	}
	e.instancesMatchNodes()
	e.cleanupNamespace(ns)
}
