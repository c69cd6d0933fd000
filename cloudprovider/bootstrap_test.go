package cloudprovider

import (
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestKubeletLabels(t *testing.T) {
	labels := map[string]string{
		corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "us-east-1a", corev1.LabelTopologyRegion: "us-east-1",
		corev1.LabelInstanceTypeStable: "g5.xlarge", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		"tiler.dev/pool": "gpu", "team": "ml", "node.kubernetes.io/lifecycle": "spot", "kubelet.kubernetes.io/x": "y",
		"node-role.kubernetes.io/gpu": "", "example.k8s.io/z": "1", "cloud.google.com/gke-accelerator": "nvidia-l4",
		"nvidia.com/gpu.replicas": "4",
	}
	got := KubeletLabels(labels, api.GPUConfig{Sharing: "time-slicing", Replicas: 4})
	// The cloud's and the kubelet's own labels go, so do reserved namespaces other than
	// node.kubernetes.io and kubelet.kubernetes.io; the device plugin's config is added.
	want := map[string]string{"tiler.dev/pool": "gpu", "team": "ml", "node.kubernetes.io/lifecycle": "spot",
		"kubelet.kubernetes.io/x": "y", "cloud.google.com/gke-accelerator": "nvidia-l4", "nvidia.com/gpu.replicas": "4",
		api.LabelDevicePluginConfig: "tiler-time-slicing-4", api.LabelDeployDRADriver: "false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	mig := KubeletLabels(nil, api.GPUConfig{Sharing: "mig", MIGConfig: "all-1g.10gb"})
	if diff := cmp.Diff(map[string]string{api.LabelMIGConfig: "all-1g.10gb", api.LabelDeployDRADriver: "false"}, mig); diff != "" {
		t.Errorf("MIG (-want +got):\n%s", diff)
	}
	// Whole GPUs of the device plugin: the DRA driver must not publish them too.
	if diff := cmp.Diff(map[string]string{api.LabelDeployDRADriver: "false"}, KubeletLabels(nil, api.GPUConfig{Sharing: "exclusive"})); diff != "" {
		t.Errorf("exclusive (-want +got):\n%s", diff)
	}
	// GPUs that only the DRA driver publishes: the operator must not run the device plugin.
	for _, g := range []api.GPUConfig{{Sharing: "exclusive", ConsumableMemory: true}, {Sharing: "dynamic-mig"}, {Sharing: "exclusive", DRA: true}} {
		want := map[string]string{api.LabelDeployDevicePlugin: "false", api.LabelDeployDRADriver: "true"}
		if diff := cmp.Diff(want, KubeletLabels(nil, g)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", g, diff)
		}
	}
	// A type without GPUs in a GPU pool (no GPU configuration): neither.
	if got := KubeletLabels(nil, api.GPUConfig{}); len(got) != 0 {
		t.Errorf("no GPUs: %v", got)
	}
}

func TestDevicePluginConfig(t *testing.T) {
	for _, tt := range []struct {
		gpu  api.GPUConfig
		want string
	}{
		{api.GPUConfig{}, ""},
		{api.GPUConfig{Sharing: "exclusive"}, ""},
		{api.GPUConfig{Sharing: "mig", MIGConfig: "all-1g.10gb"}, ""},
		{api.GPUConfig{Sharing: "time-slicing", Replicas: 6}, "tiler-time-slicing-6"},
		{api.GPUConfig{Sharing: "mps", Replicas: 2, RenameShared: true}, "tiler-mps-2-renamed"},
	} {
		if got := DevicePluginConfig(tt.gpu); got != tt.want {
			t.Errorf("DevicePluginConfig(%+v) = %q, want %q", tt.gpu, got, tt.want)
		}
	}
}

func TestFlags(t *testing.T) {
	if got := LabelsFlag(map[string]string{"b": "2", "a": "1", "c": ""}); got != "a=1,b=2,c=" {
		t.Errorf("LabelsFlag = %q", got)
	}
	taints := []corev1.Taint{{Key: "z", Effect: corev1.TaintEffectNoExecute},
		{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	if got := TaintsFlag(taints); got != "nvidia.com/gpu=present:NoSchedule,z:NoExecute" {
		t.Errorf("TaintsFlag = %q", got)
	}
}
