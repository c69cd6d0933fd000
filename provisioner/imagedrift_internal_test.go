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

// settingsCloud records launch settings by zone (subnets differ by zone), on top of an imageCloud
// or alone.
type settingsCloud struct {
	cloudprovider.Provider
	byZone map[string]string
}

func (c settingsCloud) LaunchSettings(_ context.Context, zone string) (string, error) {
	return c.byZone[zone], nil
}

// imageAndSettingsCloud chooses both.
type imageAndSettingsCloud struct {
	imageCloud
	byZone map[string]string
}

func (c imageAndSettingsCloud) LaunchSettings(_ context.Context, zone string) (string, error) {
	return c.byZone[zone], nil
}

// TestNodeImagesSettings: a record that knows its launch settings gets them and those a launch in
// its zone gets now, with its image when the provider chooses images too; a record without
// settings gets only its image; a provider that records settings but does not choose images gives
// the settings alone.
func TestNodeImagesSettings(t *testing.T) {
	recs := []LaunchRecord{
		{LaunchID: "a", NodeName: "a", Image: "ami-1", Settings: "s1:subnet-a"},
		{LaunchID: "b", NodeName: "b", Image: "ami-1", Settings: "s1:subnet-b"},
		{LaunchID: "c", NodeName: "c", Image: "ami-1"},
	}
	recs[0].Zone, recs[1].Zone, recs[2].Zone = "zone-a", "zone-b", "zone-a"
	idx := newNodeIndex([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}}})
	sc := settingsCloud{byZone: map[string]string{"zone-a": "s2:subnet-a", "zone-b": "s2:subnet-b2"}}
	got, err := nodeImages(context.Background(), imageAndSettingsCloud{imageCloud{cpu: "ami-1"}, sc.byZone}, recs, idx)
	want := map[string]simulator.NodeImage{
		"a": {Booted: "ami-1", Now: "ami-1", Settings: "s1:subnet-a", SettingsNow: "s2:subnet-a"},
		"b": {Booted: "ami-1", Now: "ami-1", Settings: "s1:subnet-b", SettingsNow: "s2:subnet-b2"},
		"c": {Booted: "ami-1", Now: "ami-1"},
	}
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("nodeImages with settings: %v (-want +got):\n%s", err, d)
	}
	got, err = nodeImages(context.Background(), sc, recs, idx)
	want = map[string]simulator.NodeImage{
		"a": {Settings: "s1:subnet-a", SettingsNow: "s2:subnet-a"},
		"b": {Settings: "s1:subnet-b", SettingsNow: "s2:subnet-b2"},
	}
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("nodeImages, settings only: %v (-want +got):\n%s", err, d)
	}
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
