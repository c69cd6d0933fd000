package simulator_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestZeroLimitsAllowNone: 0 meant "no limit" for maxNodes, maxVCPU and maxPricePerHour but "none"
// for maxGPUs; every limit of 0 now allows none, and an absent limit none is set.
func TestZeroLimitsAllowNone(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, limits := range []string{"{maxNodes: 0}", "{maxVCPU: 0}", "{maxPricePerHour: 0}"} {
		pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: a\n  limits: " + limits + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		snap := &snapshot.Snapshot{Pods: []*corev1.Pod{simtest.Pod("p").CPU("1").Obj()}}
		plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Code != api.LimitExceeded {
			t.Errorf("limits %s: %d new nodes, unschedulable %+v; want none and LimitExceeded", limits, len(plan.NewNodes), plan.Unschedulable)
		}
	}
	pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: a\n  limits: {maxGPUs: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Pods: []*corev1.Pod{simtest.Pod("p").CPU("1").Obj()}}
	if plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat, Policy: pol}); err != nil || len(plan.NewNodes) != 1 || plan.NewNodes[0].GPUs != nil {
		t.Errorf("maxGPUs 0: a CPU node is still bought: %v %v", plan, err)
	}
}

// TestUnknownInstanceFamily: a family the catalog does not have offered nothing, and every pod
// was NeverFits; it is an error naming the pool and the field.
func TestUnknownInstanceFamily(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools:\n- name: general\n  instanceFamilies: [m7i, m7x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{}, Catalog: cat, Policy: pol})
	if err == nil || !strings.Contains(err.Error(), `pools[0] (general): instanceFamilies[1]: no type of family "m7x" in catalog aws-us-east-1`) {
		t.Errorf("error %v", err)
	}
}
