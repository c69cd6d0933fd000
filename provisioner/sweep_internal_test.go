package provisioner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// TestFindStrays: the sweep's decisions, each case alone, over two sweeps running.
func TestFindStrays(t *testing.T) {
	rec := func(id, inst string) LaunchRecord { return LaunchRecord{LaunchID: id, NodeName: id, InstanceID: inst} }
	inst := func(id, launch, state string) *cloudprovider.Instance {
		return &cloudprovider.Instance{ID: id, LaunchID: launch, State: state}
	}
	node := func(name, inst string, ready bool, ann map[string]string) *corev1.Node {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec:   corev1.NodeSpec{ProviderID: awsProviderID("us-east-1a", inst)},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	}
	running, terminating := cloudprovider.StateRunning, cloudprovider.StateTerminating
	replacement := rec("replacement", "i-r")
	replacement.DisruptionAction = "a1"
	cases := []struct {
		name  string
		recs  []LaunchRecord
		insts []*cloudprovider.Instance
		nodes []*corev1.Node
		busy  map[string]bool
		// gone (launch IDs, with the state and the Node to delete) and orphans (instance IDs),
		// at the first sweep and at the second.
		gone1, gone2       []strayRecord
		orphans1, orphans2 []string
	}{
		{name: "live instance and Ready node", recs: []LaunchRecord{rec("a", "i-a")},
			insts: []*cloudprovider.Instance{inst("i-a", "a", running)}, nodes: []*corev1.Node{node("a", "i-a", true, nil)}},
		{name: "terminating while booting: at once", recs: []LaunchRecord{rec("a", "i-a")},
			insts: []*cloudprovider.Instance{inst("i-a", "a", terminating)},
			gone1: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: terminating, Instance: inst("i-a", "a", terminating)}},
			gone2: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: terminating, Instance: inst("i-a", "a", terminating)}}},
		{name: "terminated under a Ready node: at once", recs: []LaunchRecord{rec("a", "i-a")},
			insts: []*cloudprovider.Instance{inst("i-a", "a", cloudprovider.StateTerminated)}, nodes: []*corev1.Node{node("a", "i-a", true, nil)},
			gone1: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: cloudprovider.StateTerminated, Instance: inst("i-a", "a", cloudprovider.StateTerminated)}},
			gone2: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: cloudprovider.StateTerminated, Instance: inst("i-a", "a", cloudprovider.StateTerminated)}}},
		{name: "the live one of two under a launch ID counts", recs: []LaunchRecord{rec("a", "i-a2")},
			insts: []*cloudprovider.Instance{inst("i-a2", "a", running), inst("i-a1", "a", terminating)}},
		{name: "not listed, no Node: on the second sweep", recs: []LaunchRecord{rec("a", "i-a")},
			gone2: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: "gone"}}},
		{name: "not listed, Node NotReady: on the second sweep", recs: []LaunchRecord{rec("a", "i-a")},
			nodes: []*corev1.Node{node("a", "i-a", false, nil)},
			gone2: []strayRecord{{Record: rec("a", "i-a"), Node: "a", State: "gone"}}},
		{name: "not listed, Node Ready: kept", recs: []LaunchRecord{rec("a", "i-a")},
			nodes: []*corev1.Node{node("a", "i-a", true, nil)}},
		{name: "no instance ID and none listed: the launch retries' own", recs: []LaunchRecord{rec("a", "")}},
		{name: "a call under way", recs: []LaunchRecord{rec("a", "i-a")}, busy: map[string]bool{"a": true, "b": true},
			insts: []*cloudprovider.Instance{inst("i-a", "a", terminating), inst("i-b", "b", running)}},
		{name: "a node under a disruption action", recs: []LaunchRecord{rec("a", "i-a")},
			insts: []*cloudprovider.Instance{inst("i-a", "a", terminating)},
			nodes: []*corev1.Node{node("a", "i-a", false, map[string]string{api.AnnotationDisruptionAction: "consolidate"})}},
		{name: "a disruption's replacement ending: at once", recs: []LaunchRecord{replacement},
			insts: []*cloudprovider.Instance{inst("i-r", "replacement", terminating)},
			gone1: []strayRecord{{Record: replacement, Node: "replacement", State: terminating, Instance: inst("i-r", "replacement", terminating)}},
			gone2: []strayRecord{{Record: replacement, Node: "replacement", State: terminating, Instance: inst("i-r", "replacement", terminating)}}},
		{name: "orphan: on the second sweep", insts: []*cloudprovider.Instance{inst("i-o", "o", running)},
			orphans2: []string{"i-o"}},
		{name: "an ending orphan is left to end", insts: []*cloudprovider.Instance{inst("i-o", "o", terminating)}},
		{name: "relinked: the Node found by its instance", recs: []LaunchRecord{rec("a", "i-a")},
			insts: []*cloudprovider.Instance{inst("i-a", "a", terminating)}, nodes: []*corev1.Node{node(eksName, "i-a", true, nil)},
			gone1: []strayRecord{{Record: rec("a", "i-a"), Node: eksName, State: terminating, Instance: inst("i-a", "a", terminating)}},
			gone2: []strayRecord{{Record: rec("a", "i-a"), Node: eksName, State: terminating, Instance: inst("i-a", "a", terminating)}}},
	}
	ids := func(is []*cloudprovider.Instance) []string {
		var out []string
		for _, i := range is {
			out = append(out, i.ID)
		}
		return out
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			idx := newNodeIndex(c.nodes)
			first := findStrays(c.recs, c.insts, idx, c.busy, nil)
			second := findStrays(c.recs, c.insts, idx, c.busy, first.Suspects)
			if d := cmp.Diff(c.gone1, first.Gone); d != "" {
				t.Errorf("first sweep's removals (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.gone2, second.Gone); d != "" {
				t.Errorf("second sweep's removals (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.orphans1, ids(first.Orphans)); d != "" {
				t.Errorf("first sweep's orphans (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.orphans2, ids(second.Orphans)); d != "" {
				t.Errorf("second sweep's orphans (-want +got):\n%s", d)
			}
		})
	}
}

// TestFindStraysForgetsCleared: a record missing from one list but listed again at the next
// sweep (an eventually consistent list) is not removed at the sweep after.
func TestFindStraysForgetsCleared(t *testing.T) {
	recs := []LaunchRecord{{LaunchID: "a", NodeName: "a", InstanceID: "i-a"}}
	live := []*cloudprovider.Instance{{ID: "i-a", LaunchID: "a", State: cloudprovider.StateRunning}}
	idx := newNodeIndex(nil)
	s1 := findStrays(recs, nil, idx, nil, nil)
	s2 := findStrays(recs, live, idx, nil, s1.Suspects)
	s3 := findStrays(recs, nil, idx, nil, s2.Suspects)
	if len(s1.Gone)+len(s2.Gone)+len(s3.Gone) != 0 || !s3.Suspects["record/a"] {
		t.Errorf("removals %v, %v, %v, suspects at the third %v; want none, and a suspect again", s1.Gone, s2.Gone, s3.Gone, s3.Suspects)
	}
}

// TestSweepMarksCapacityLoss: a launch whose instance the cloud lists as ending, or no longer lists
// and answers for by ID as terminated, is removed by the first sweep; its offering is marked
// unavailable only when the cloud says it ended the instance for want of capacity, not when a
// person terminated it.
func TestSweepMarksCapacityLoss(t *testing.T) {
	offering := api.Offering{InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: api.Spot}
	for _, c := range []struct {
		state, code string
		capacity    bool
	}{
		{cloudprovider.StateTerminating, "Server.InsufficientInstanceCapacity", true},
		{cloudprovider.StateTerminating, "Client.UserInitiatedShutdown", false},
		{cloudprovider.StateTerminated, "Server.SpotInstanceTermination", true},
		{cloudprovider.StateTerminated, "Client.UserInitiatedShutdown", false},
	} {
		t.Run(c.state+"/"+c.code, func(t *testing.T) {
			e := newInterruptedEKSEnv(t, nil, &cloudprovider.Instance{ID: "i-00000000000000001", LaunchID: "tiler-default-1",
				Offering: offering, State: c.state, EndCode: c.code, CapacityLost: c.capacity})
			e.ctrl.sweep(context.Background(), nil)
			e.ctrl.launches.wg.Wait()
			if got := e.ctrl.unavailable.IsUnavailable(offering); got != c.capacity {
				t.Errorf("offering marked unavailable: %t, want %t", got, c.capacity)
			}
			if recs, err := e.ctrl.records.List(context.Background()); err != nil || len(recs) != 0 {
				t.Errorf("records %+v, %v; want the launch removed", recs, err)
			}
		})
	}
}
