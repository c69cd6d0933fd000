package sim

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api/catalog"
)

// TestNodeLabelsAttachedAccelerator: a GCP N1 machine with an attached T4 registers with label-safe
// type labels, as GKE labels it, whatever the request's labels say (a fallback may have launched
// another type than the one the request was labelled for); every type of the GCP catalog does.
func TestNodeLabelsAttachedAccelerator(t *testing.T) {
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		t.Fatal(err)
	}
	it, _ := cat.Type("n1-standard-4+1xnvidia-tesla-t4")
	r := &record{ID: "sim-000001", NodeName: "gpu-node", Pool: "gpu",
		Offering: api.Offering{InstanceType: it.Name, Zone: "us-central1-a", CapacityType: api.Spot},
		Labels:   map[string]string{"team": "ml"}}
	want := map[string]string{
		"team": "ml", api.TagPool: "gpu", api.LabelCapacityType: "spot", api.LabelInstanceID: "sim-000001",
		corev1.LabelHostname: "gpu-node", corev1.LabelTopologyZone: "us-central1-a", corev1.LabelTopologyRegion: "us-central1",
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		corev1.LabelInstanceTypeStable: "n1-standard-4", api.LabelGKEAccelerator: "nvidia-tesla-t4",
		api.LabelCatalogInstanceType: "n1-standard-4_1xnvidia-tesla-t4",
	}
	if diff := cmp.Diff(want, nodeLabels(r, cat, it)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}

	// Labelled for the T4 shape, launched as a type without attached accelerators.
	a2, _ := cat.Type("a2-highgpu-1g")
	r.Labels = map[string]string{api.LabelCatalogInstanceType: "n1-standard-4_1xnvidia-tesla-t4", api.LabelGKEAccelerator: "nvidia-tesla-t4"}
	r.Offering.InstanceType = a2.Name
	got := nodeLabels(r, cat, a2)
	if got[corev1.LabelInstanceTypeStable] != "a2-highgpu-1g" || got[api.LabelCatalogInstanceType] != "" || got[api.LabelGKEAccelerator] != "" {
		t.Errorf("fallback a2-highgpu-1g kept the request's type labels: %v", got)
	}

	for i := range cat.Types {
		it := &cat.Types[i]
		r.Offering.InstanceType = it.Name
		for k, v := range nodeLabels(r, cat, it) {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: label %s=%q: %v", it.Name, k, v, errs)
			}
		}
	}
}
