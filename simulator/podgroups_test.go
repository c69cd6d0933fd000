package simulator_test

import (
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestNativePodGroupGang: pods naming a PodGroup of gang policy (scheduling.k8s.io/v1beta1) are
// planned all-or-nothing with the PodGroup's minCount, as tiler.dev/gang pods are; a basic-policy
// PodGroup is no gang, and a pod naming a PodGroup that does not exist is not planned (the
// scheduler holds it).
func TestNativePodGroupGang(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	// Two m7i.xlarge nodes at most; each member takes most of one.
	pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: a\n  instanceTypes: [m7i.xlarge]\n  limits: {maxNodes: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	basic := &schedulingv1beta1.PodGroup{ObjectMeta: simtest.GangPodGroup("train", 1).ObjectMeta,
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}}
	for _, c := range []struct {
		name       string
		groups     []*schedulingv1beta1.PodGroup
		members    int
		wantPlaced int
		wantReason string // in every unplaced member's reason, with GangIncomplete
	}{
		{"gang of two fits", []*schedulingv1beta1.PodGroup{simtest.GangPodGroup("train", 2)}, 2, 2, ""},
		{"gang of three over the limit places none", []*schedulingv1beta1.PodGroup{simtest.GangPodGroup("train", 3)}, 3, 0, ""},
		{"minCount above the members present", []*schedulingv1beta1.PodGroup{simtest.GangPodGroup("train", 3)}, 2, 0, "gang default/train needs 3 members, 2 are pending"},
		{"basic policy is no gang", []*schedulingv1beta1.PodGroup{basic}, 3, 2, ""},
		{"missing PodGroup", nil, 2, 0, "PodGroup default/train does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{PodGroups: c.groups}
			for i := range c.members {
				snap.Pods = append(snap.Pods, simtest.Pod("train-"+string(rune('0'+i))).CPU("3").Mem("4Gi").PodGroup("train").Obj())
			}
			plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			placed := 0
			for _, n := range plan.NewNodes {
				placed += len(n.Pods)
			}
			if placed != c.wantPlaced || len(plan.Unschedulable) != c.members-c.wantPlaced {
				t.Fatalf("%d placed, unschedulable %+v; want %d placed", placed, plan.Unschedulable, c.wantPlaced)
			}
			if placed == 0 && len(plan.NewNodes) != 0 {
				t.Errorf("%d nodes bought for a gang placed nowhere", len(plan.NewNodes))
			}
			for _, u := range plan.Unschedulable {
				if c.wantReason != "" && (u.Code != api.GangIncomplete || !strings.Contains(u.Reason, c.wantReason)) {
					t.Errorf("%s: %s %q; want GangIncomplete with %q", u.Pod, u.Code, u.Reason, c.wantReason)
				}
			}
			for _, v := range simtest.Check(snap, plan) {
				t.Error(v)
			}
		})
	}
}
