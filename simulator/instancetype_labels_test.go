package simulator_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

func TestInstanceTypeLabels(t *testing.T) {
	for _, tt := range []struct {
		name api.InstanceTypeName
		want map[string]string
	}{
		{"m7i.large", map[string]string{corev1.LabelInstanceTypeStable: "m7i.large"}},
		{"a2-highgpu-1g", map[string]string{corev1.LabelInstanceTypeStable: "a2-highgpu-1g"}},
		// GKE: the machine type and the accelerator; Tiler: the catalog name, '+' as '_'.
		{"n1-standard-4+1xnvidia-tesla-t4", map[string]string{corev1.LabelInstanceTypeStable: "n1-standard-4",
			api.LabelGKEAccelerator: "nvidia-tesla-t4", api.LabelCatalogInstanceType: "n1-standard-4_1xnvidia-tesla-t4"}},
		{"n1-standard-16+2xnvidia-tesla-t4", map[string]string{corev1.LabelInstanceTypeStable: "n1-standard-16",
			api.LabelGKEAccelerator: "nvidia-tesla-t4", api.LabelCatalogInstanceType: "n1-standard-16_2xnvidia-tesla-t4"}},
	} {
		got := simulator.InstanceTypeLabels(tt.name)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if back := simulator.CatalogTypeOf(got); back != string(tt.name) && tt.want[api.LabelCatalogInstanceType] != back {
			t.Errorf("%s: CatalogTypeOf = %q", tt.name, back)
		}
	}
	// Every type of every embedded catalog gets valid label values, and no two types share them.
	for _, name := range []string{"aws-us-east-1", "aws-us-west-2", "gcp-us-central1"} {
		cat, err := catalog.Embedded(name)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]api.InstanceTypeName{}
		for _, it := range cat.Types {
			labels := simulator.InstanceTypeLabels(it.Name)
			for k, v := range labels {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("%s %s: %s=%q: %v", name, it.Name, k, v, errs)
				}
			}
			key := simulator.CatalogTypeOf(labels)
			if other, dup := seen[key]; dup {
				t.Errorf("%s: %s and %s both read back as %q", name, other, it.Name, key)
			}
			seen[key] = it.Name
		}
	}
}

// TestAttachedAcceleratorPlanAndExistingNode: a planned N1+T4 node carries label-safe type labels,
// and an existing node of the pool labelled so is recognised as that catalog type: its GPU counts
// against the pool's maxGPUs, so the next GPU pod is not bought a second node.
func TestAttachedAcceleratorPlanAndExistingNode(t *testing.T) {
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu
  instanceTypes: [n1-standard-4+1xnvidia-tesla-t4]
  limits: {maxGPUs: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *simtest.PodBuilder {
		return simtest.Pod(name).Label("app", "infer").CPU("1").Mem("4Gi").GPU(1)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Pods: []*corev1.Pod{pod("infer-0").Obj()}},
		Catalog: cat, Policy: pol})
	if err != nil || len(plan.NewNodes) != 1 {
		t.Fatalf("plan: %v %+v", err, plan)
	}
	n := plan.NewNodes[0]
	if n.InstanceType != "n1-standard-4+1xnvidia-tesla-t4" {
		t.Fatalf("planned %s, want n1-standard-4+1xnvidia-tesla-t4", n.InstanceType)
	}
	for k, want := range simulator.InstanceTypeLabels(n.InstanceType) {
		if n.Labels[k] != want {
			t.Errorf("planned node label %s = %q, want %q", k, n.Labels[k], want)
		}
	}

	// The node registered with the plan's labels, its one GPU taken by infer-0.
	node := simtest.Node(n.Name, "", n.Zone, simtest.Resources("cpu", "3920m", "memory", "12Gi", "pods", "110", "nvidia.com/gpu", "1"))
	for k, v := range n.Labels {
		node.Labels[k] = v
	}
	bound := pod("infer-0").On(n.Name).Obj()
	plan, err = simulator.Simulate(simulator.Input{Catalog: cat, Policy: pol,
		Snapshot: &snapshot.Snapshot{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{bound, pod("infer-1").Obj()}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NewNodes) != 0 || len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Code != api.LimitExceeded {
		t.Errorf("second GPU pod: new nodes %+v, unschedulable %+v; want none and LimitExceeded (maxGPUs 1 is used)",
			plan.NewNodes, plan.Unschedulable)
	}
}
