package provisioner_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestPlanInterruptedFailsOver: the pure half of the interruption path (the controller's
// startInterrupted and the replay share it). An interrupted spot GPU node whose pod has nowhere
// else to go gets a Replace action whose replacement avoids the offering the notice marked
// unavailable — and, without the mark, the plan would have bought that very offering again. A
// node that is not Tiler's gets no action; the deadline is the plan's.
func TestPlanInterruptedFailsOver(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	pol := &policy.CostPolicy{APIVersion: api.GroupVersion, Kind: policy.Kind, Pools: []policy.Pool{
		{Name: "gpu", CapacityTypes: []api.CapacityType{api.Spot}, InstanceTypes: []api.InstanceTypeName{"g4dn.xlarge"}},
	}}
	if err := pol.Validate(); err != nil {
		t.Fatal(err)
	}
	offering := api.Offering{InstanceType: "g4dn.xlarge", Zone: "us-east-1a", CapacityType: api.Spot}
	node := simtest.ManagedNode(cat, "spot-1", "gpu", offering.InstanceType, offering.Zone, api.Spot, now.Add(-time.Hour))
	other := simtest.Node("theirs", "m7i.large", "us-east-1a", corev1.ResourceList{})
	pod := simtest.Pod("infer").CPU("2").Mem("8Gi").GPU(1).Controlled("ReplicaSet", "infer").On("spot-1").Obj()
	deadline := now.Add(2 * time.Minute)
	interrupted := map[string]time.Time{"spot-1": deadline, "theirs": deadline}
	plan := func(unavailable []provisioner.UnavailableEntry) api.DisruptionAction {
		t.Helper()
		s := provisioner.State{Now: now, Pods: []*corev1.Pod{pod}, Nodes: []*corev1.Node{node, other}, Policy: pol, Catalog: cat,
			Unavailable: unavailable}
		actions, err := provisioner.PlanInterrupted(&s, interrupted)
		if err != nil {
			t.Fatal(err)
		}
		if len(actions) != 1 || len(actions[0].Nodes) != 1 || actions[0].Nodes[0] != "spot-1" {
			t.Fatalf("actions %+v; want one, for spot-1 (theirs is not Tiler's)", actions)
		}
		a := actions[0]
		if a.Reason != api.ReasonInterrupted || a.Kind != api.ActionReplace || a.Replacement == nil {
			t.Fatalf("action %+v; want an Interrupted Replace", a)
		}
		return a
	}
	same := plan(nil)
	if same.Replacement.Offering != offering {
		t.Fatalf("without the mark the replacement is %s; want the cheapest, %s (else the test proves nothing)", same.Replacement.Offering, offering)
	}
	moved := plan([]provisioner.UnavailableEntry{{Offering: offering, Code: provisioner.SpotInterruptionKind, Until: now.Add(3 * time.Minute)}})
	if moved.Replacement.Offering == offering || moved.Replacement.InstanceType != offering.InstanceType || moved.Replacement.CapacityType != api.Spot {
		t.Errorf("with the offering marked unavailable the replacement is %s; want g4dn.xlarge spot in another zone", moved.Replacement.Offering)
	}
	// A mark that has expired is no mark.
	if again := plan([]provisioner.UnavailableEntry{{Offering: offering, Code: provisioner.SpotInterruptionKind, Until: now}}); again.Replacement.Offering != offering {
		t.Errorf("with an expired mark the replacement is %s; want %s", again.Replacement.Offering, offering)
	}
	if !provisioner.InterruptionDrainDue(deadline, deadline.Add(-45*time.Second), 45*time.Second) ||
		provisioner.InterruptionDrainDue(deadline, deadline.Add(-46*time.Second), 45*time.Second) ||
		provisioner.InterruptionDrainDue(time.Time{}, now, time.Hour) {
		t.Errorf("InterruptionDrainDue: due from the margin before the deadline on, never without one")
	}
}
