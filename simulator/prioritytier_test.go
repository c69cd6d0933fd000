package simulator_test

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// tierPolicy reserves on-demand GPU nodes for priority ≥ 1000 (production inference) and spot
// GPU nodes for priority ≤ 999 (research).
const tierPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: inference
  capacityTypes: [on-demand]
  minPriority: 1000
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  requirements: [{key: tiler.dev/gpu-count, operator: Exists}]
- name: research
  capacityTypes: [spot]
  maxPriority: 999
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  requirements: [{key: tiler.dev/gpu-count, operator: Exists}]
- name: batch
  priorityClassNames: [batch]
  requirements: [{key: tiler.dev/gpu-count, operator: DoesNotExist}]
`

// TestPriorityTierPools: production inference is never bought a spot node, even though spot is
// cheaper, and research only spot ones; a pod whose priority no pool admits is NeverFits with a
// reason naming the tiers.
func TestPriorityTierPools(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(tierPolicy))
	if err != nil {
		t.Fatal(err)
	}
	serve := simtest.Pod("serve-0").Namespace("prod").CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Priority(1000).Obj()
	train := simtest.Pod("train-0").Namespace("research").CPU("2").Mem("8Gi").GPU(1).Tolerate("nvidia.com/gpu").Priority(100).Obj()
	web := simtest.Pod("web-0").Namespace("prod").CPU("1").Priority(0).Obj()
	job := simtest.Pod("job-0").Namespace("batch").CPU("1").Obj()
	job.Spec.PriorityClassName = "batch"
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: []*corev1.Pod{serve, train, web, job}},
		Catalog: cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			got[p] = n.Pool + "/" + string(n.CapacityType)
		}
	}
	for pod, want := range map[string]string{"prod/serve-0": "inference/on-demand", "research/train-0": "research/spot", "batch/job-0": "batch/on-demand"} {
		if got[pod] != want && !(pod == "batch/job-0" && strings.HasPrefix(got[pod], "batch/")) {
			t.Errorf("%s bought as %q, want %s (plan %+v)", pod, got[pod], want, plan.NewNodes)
		}
	}
	if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod != "prod/web-0" || plan.Unschedulable[0].Code != api.NeverFits ||
		!strings.Contains(plan.Unschedulable[0].Reason, "in pools reserved for other priority tiers (its priority 0: minPriority, maxPriority, priorityClassNames)") {
		t.Errorf("unschedulable %+v: want prod/web-0 NeverFits, naming the priority tiers", plan.Unschedulable)
	}
}
