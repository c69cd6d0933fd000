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
	"github.com/tiler-dev/tiler/simulator"
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

// TestNodeImages: each Node with a record that knows its image gets that image and the one its
// provider launches now for its GPU configuration; a record without an image, or whose Node is
// gone, gets nothing; an image the provider cannot say now is an error, with the other nodes
// known; a provider that does not choose images gives nothing.
func TestNodeImages(t *testing.T) {
	rec := func(name, image string, gpu *api.GPUConfig) LaunchRecord {
		return LaunchRecord{LaunchID: name, NodeName: name, Image: image, GPU: gpu}
	}
	exclusive := &api.GPUConfig{Sharing: api.Exclusive}
	recs := []LaunchRecord{
		rec("old-cpu", "ami-cpu-1", nil),
		rec("new-cpu", "ami-cpu-2", nil),
		rec("old-gpu", "ami-gpu-1", exclusive),
		rec("unknown", "", nil),
		rec("no-node", "ami-cpu-1", nil),
	}
	var nodes []*corev1.Node
	for _, r := range recs[:4] {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.NodeName}})
	}
	idx := newNodeIndex(nodes)
	ctx := context.Background()
	got, err := nodeImages(ctx, imageCloud{cpu: "ami-cpu-2", gpu: "ami-gpu-2"}, recs, idx)
	want := map[string]simulator.NodeImage{
		"old-cpu": {Booted: "ami-cpu-1", Now: "ami-cpu-2"},
		"new-cpu": {Booted: "ami-cpu-2", Now: "ami-cpu-2"},
		"old-gpu": {Booted: "ami-gpu-1", Now: "ami-gpu-2"},
	}
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("nodeImages: %v (-want +got):\n%s", err, d)
	}
	unread := errors.New("reading the AMI of SSM parameter /gpu: throttled")
	got, err = nodeImages(ctx, imageCloud{cpu: "ami-cpu-2", gpu: "ami-gpu-2", gpuErr: unread}, recs, idx)
	if _, ok := got["old-gpu"]; !errors.Is(err, unread) || ok || len(got) != 2 {
		t.Errorf("with the GPU image unknown: %v, %v; want the two CPU nodes and the error", got, err)
	}
	if got, err := nodeImages(ctx, struct{ cloudprovider.Provider }{}, recs, idx); err != nil || got != nil {
		t.Errorf("a provider that does not choose images: %v, %v; want nothing", got, err)
	}
}
