package provisioner

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// imageCloud chooses images as the AWS provider does: one for GPU nodes, one for the rest ("" for
// a kind it does not choose); gpuErr fails the GPU nodes' (an SSM parameter unreadable).
type imageCloud struct {
	cloudprovider.Provider
	cpu, gpu string
	gpuErr   error
}

func (c imageCloud) ImageFor(_ context.Context, g api.GPUConfig) (string, error) {
	if g.Sharing != "" {
		return c.gpu, c.gpuErr
	}
	return c.cpu, nil
}

// TestImageDrift: a node is drifted when its record's image is not the one its provider launches
// now for its GPU configuration; not when the record has no image, the node is gone, the provider
// does not choose the image for that kind of node, or does not choose images at all.
func TestImageDrift(t *testing.T) {
	rec := func(name, image string, gpu *api.GPUConfig) LaunchRecord {
		return LaunchRecord{LaunchID: name, NodeName: name, Image: image, GPU: gpu}
	}
	exclusive := &api.GPUConfig{Sharing: api.Exclusive}
	recs := []LaunchRecord{
		rec("old-cpu", "ami-cpu-1", nil),
		rec("new-cpu", "ami-cpu-2", nil),
		rec("old-gpu", "ami-gpu-1", exclusive),
		rec("gpu-on-cpu-image", "ami-cpu-2", exclusive),
		rec("unknown", "", nil),
		rec("no-node", "ami-cpu-1", nil),
	}
	var nodes []*corev1.Node
	for _, r := range recs[:5] {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.NodeName}})
	}
	idx := newNodeIndex(nodes)
	ctx := context.Background()
	got, err := imageDrift(ctx, imageCloud{cpu: "ami-cpu-2", gpu: "ami-gpu-2"}, recs, idx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"old-cpu":          "booted from image ami-cpu-1; its nodes now boot from ami-cpu-2",
		"old-gpu":          "booted from image ami-gpu-1; its nodes now boot from ami-gpu-2",
		"gpu-on-cpu-image": "booted from image ami-cpu-2; its nodes now boot from ami-gpu-2",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("imageDrift (-want +got):\n%s", d)
	}
	if got, err := imageDrift(ctx, imageCloud{cpu: "ami-cpu-2"}, recs, idx); err != nil || len(got) != 1 || got["old-cpu"] == "" {
		t.Errorf("with no GPU image chosen: %v, %v; want only old-cpu", got, err)
	}
	// The GPU image unknown: the GPU nodes are not drifted by it, the error says why.
	unread := errors.New("reading the AMI of SSM parameter /gpu: throttled")
	if got, err := imageDrift(ctx, imageCloud{cpu: "ami-cpu-2", gpu: "ami-gpu-2", gpuErr: unread}, recs, idx); !errors.Is(err, unread) || len(got) != 1 || got["old-cpu"] == "" {
		t.Errorf("with the GPU image unknown: %v, %v; want only old-cpu and the error", got, err)
	}
	if got, err := imageDrift(ctx, struct{ cloudprovider.Provider }{}, recs, idx); err != nil || got != nil {
		t.Errorf("a provider that does not choose images: %v, %v; want nil", got, err)
	}
}
