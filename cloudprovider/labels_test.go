package cloudprovider_test

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator"
)

// TestInstanceTypeLabelsMatchTheSimulator: clouds label a node of every embedded catalog type as
// the simulator planned it (the pure simulator keeps its own copy of the rule).
func TestInstanceTypeLabelsMatchTheSimulator(t *testing.T) {
	if api.LabelCatalogInstanceType != api.LabelCatalogInstanceType || api.LabelGKEAccelerator != api.LabelGKEAccelerator {
		t.Fatal("label keys differ from the simulator's")
	}
	for _, name := range []string{"aws-us-east-1", "aws-us-west-2", "gcp-us-central1"} {
		cat, err := catalog.Embedded(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range cat.Types {
			if diff := cmp.Diff(simulator.InstanceTypeLabels(it.Name), cloudprovider.InstanceTypeLabels(it.Name)); diff != "" {
				t.Errorf("%s (-simulator +cloudprovider):\n%s", it.Name, diff)
			}
		}
	}
}

func TestWithInstanceTypeLabels(t *testing.T) {
	planned := map[string]string{"team": "ml", "node.kubernetes.io/instance-type": "n1-standard-4",
		api.LabelCatalogInstanceType: "n1-standard-4_1xnvidia-tesla-t4", api.LabelGKEAccelerator: "nvidia-tesla-t4"}
	got := cloudprovider.WithInstanceTypeLabels(planned, "a2-highgpu-1g")
	want := map[string]string{"team": "ml", "node.kubernetes.io/instance-type": "a2-highgpu-1g"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if planned["node.kubernetes.io/instance-type"] != "n1-standard-4" {
		t.Error("the request's labels were changed")
	}
}
