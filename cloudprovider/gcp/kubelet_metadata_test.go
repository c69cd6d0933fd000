package gcp

import (
	"context"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// TestCreateKubeletMetadata: each insert's metadata carries the kubelet labels and taints of the
// node launched as the offering it tries, as GKE passes them: kube-labels (k=v,…) and kube-env's
// NODE_LABELS and NODE_TAINTS; the other keys of the configured kube-env stay. The labels leave
// out those the kubelet and the cloud set (hostname, zone, region, instance type) and add the
// device plugin's config of the GPU sharing.
func TestCreateKubeletMetadata(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	failure := stockout(t)
	failure.Zone = zoneA
	srv.FailInserts(failure)
	cfg := testConfig(srv)
	cfg.Metadata = map[string]string{MetadataKubeEnv: "KUBERNETES_MASTER_NAME: 10.0.0.2\nENABLE_NODE_PROBLEM_DETECTOR: standalone\n"}
	p, err := NewProvider(context.Background(), cfg, embeddedCatalog(t), clock.RealClock{}, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	fallback := offering("g2-standard-4", zoneB, api.Spot)
	planned := func(zone string, extra map[string]string) map[string]string {
		l := map[string]string{corev1.LabelHostname: "gpu-node-abcde", corev1.LabelTopologyZone: zone,
			corev1.LabelTopologyRegion: "us-central1", "tiler.dev/pool": "gpu-pool", "team": "ml"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	req := t4Request()
	req.Fallbacks = []api.Offering{fallback}
	req.Labels = planned(zoneA, map[string]string{corev1.LabelInstanceTypeStable: "n1-standard-8",
		api.LabelGKEAccelerator: "nvidia-tesla-t4", "tiler.dev/gpu-model": "T4"})
	req.FallbackLabels = map[api.Offering]map[string]string{
		fallback: planned(zoneB, map[string]string{corev1.LabelInstanceTypeStable: "g2-standard-4", "tiler.dev/gpu-model": "L4"})}
	req.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	req.GPU = api.GPUConfig{Sharing: "time-slicing", Replicas: 4}
	if _, err := p.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	bodies := insertBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d inserts, want 2 (zone A out of stock, then the fallback)", len(bodies))
	}
	wantLabels := []string{
		"cloud.google.com/gke-accelerator=nvidia-tesla-t4,nvidia.com/device-plugin.config=tiler-time-slicing-4,nvidia.com/gpu.deploy.dra-driver=false,team=ml,tiler.dev/gpu-model=T4,tiler.dev/instance-type=n1-standard-8_1xnvidia-tesla-t4,tiler.dev/pool=gpu-pool",
		"nvidia.com/device-plugin.config=tiler-time-slicing-4,nvidia.com/gpu.deploy.dra-driver=false,team=ml,tiler.dev/gpu-model=L4,tiler.dev/pool=gpu-pool",
	}
	for i, body := range bodies {
		if got := metadataItem(t, body, MetadataKubeLabels); got != wantLabels[i] {
			t.Errorf("insert %d: %s = %q, want %q", i, MetadataKubeLabels, got, wantLabels[i])
		}
		var env map[string]any
		if err := yaml.Unmarshal([]byte(metadataItem(t, body, MetadataKubeEnv)), &env); err != nil {
			t.Fatalf("insert %d: kube-env: %v", i, err)
		}
		want := map[string]any{"KUBERNETES_MASTER_NAME": "10.0.0.2", "ENABLE_NODE_PROBLEM_DETECTOR": "standalone",
			KubeEnvNodeLabels: wantLabels[i], KubeEnvNodeTaints: "nvidia.com/gpu=present:NoSchedule"}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("insert %d: kube-env (-want +got):\n%s", i, diff)
		}
	}

	cfg.Metadata = map[string]string{MetadataKubeEnv: "- a list"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "metadata kube-env is not a YAML map") {
		t.Errorf("a kube-env that is not a map: %v", err)
	}
}
