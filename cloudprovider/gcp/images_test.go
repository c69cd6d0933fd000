package gcp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// TestImageFromFamily: an image family is read as the image it names now, which launches boot
// (the insert's source image) and record (tiler-image) and ImageFor reports; it is read once per
// refresh period, so a new image published in the family is launched, and reported, after it; a
// read that fails keeps the image last read; with none read yet the launch fails, naming the
// family. A plain image is used as it is, with no read.
func TestImageFromFamily(t *testing.T) {
	ctx := context.Background()
	srv := gcptest.NewServer(t, project)
	clk := clocktesting.NewFakeClock(time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC))
	p := newTestProvider(t, srv, clk)
	// An insert's operation is polled once, after PollInterval on the fake clock.
	create := func(p *Provider, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
		var inst *cloudprovider.Instance
		done := make(chan error, 1)
		go func() {
			var err error
			inst, err = p.Create(ctx, req)
			done <- err
		}()
		var err error
		waitUntil(t, func() bool {
			select {
			case err = <-done:
				return true
			default:
				if clk.HasWaiters() {
					clk.Step(time.Millisecond) // PollInterval
				}
				return false
			}
		})
		return inst, err
	}
	reads := func() int { return len(srv.RequestsTo("GET", "/global/images/family/cos-stable")) }
	cos := func(name string) string { return "projects/cos-cloud/global/images/" + name }

	got, err := p.ImageFor(ctx, api.GPUConfig{})
	if err != nil || got != cos(gcptest.DefaultCOSImage) {
		t.Fatalf("ImageFor = %q, %v; want %s", got, err, cos(gcptest.DefaultCOSImage))
	}
	inst, err := create(p, t4Request())
	if err != nil {
		t.Fatal(err)
	}
	body := insertBodies(t, srv)[0]
	source := body["disks"].([]any)[0].(map[string]any)["initializeParams"].(map[string]any)["sourceImage"]
	if source != cos(gcptest.DefaultCOSImage) || inst.Image != cos(gcptest.DefaultCOSImage) || reads() != 1 {
		t.Errorf("launch boots %v, records %q, after %d family reads; want %s, once", source, inst.Image, reads(), cos(gcptest.DefaultCOSImage))
	}

	// A new image in the family: the old one is used until the refresh, the new one after.
	srv.SetImageFamily("cos-cloud", "cos-stable", "cos-stable-121-18867-90-62")
	clk.Step(DefaultImageRefresh - time.Second)
	if got, _ := p.ImageFor(ctx, api.GPUConfig{}); got != cos(gcptest.DefaultCOSImage) || reads() != 1 {
		t.Errorf("within the refresh: %q after %d reads, want the image read first, no new read", got, reads())
	}
	clk.Step(time.Second)
	if got, _ := p.ImageFor(ctx, api.GPUConfig{}); got != cos("cos-stable-121-18867-90-62") || reads() != 2 {
		t.Errorf("after the refresh: %q after %d reads, want the new image, read again", got, reads())
	}
	req := t4Request()
	req.LaunchID, req.NodeName = "launch-0002", "gpu-node-fghij"
	if inst, err := create(p, req); err != nil || inst.Image != cos("cos-stable-121-18867-90-62") {
		t.Errorf("second launch records %v (%v), want the new image", inst, err)
	}

	// A read that fails keeps the image last read.
	srv.Fail(gcptest.Failure{Method: "GET", PathContains: "/images/family/", Status: http.StatusInternalServerError,
		Body: []byte(`{"error":{"code":500,"message":"backend error"}}`)})
	clk.Step(DefaultImageRefresh)
	if got, err := p.ImageFor(ctx, api.GPUConfig{}); err != nil || got != cos("cos-stable-121-18867-90-62") {
		t.Errorf("failed read: %q, %v; want the image last read", got, err)
	}

	// With none read yet, the launch fails and names the family.
	cfg := testConfig(srv)
	cfg.Image = "projects/my-images/global/images/family/gpu-node"
	fresh, err := NewProvider(ctx, cfg, embeddedCatalog(t), clk, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	req.LaunchID, req.NodeName = "launch-0003", "gpu-node-klmno"
	if _, err := create(fresh, req); err == nil || !strings.Contains(err.Error(), "image family gpu-node of project my-images") {
		t.Errorf("launch with an unreadable family: %v, want an error naming it", err)
	}

	// A plain image is used as it is.
	cfg.Image = cos("cos-stable-121-18867-90-38")
	plain, err := NewProvider(ctx, cfg, embeddedCatalog(t), clk, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	before := len(srv.Requests())
	if got, err := plain.ImageFor(ctx, api.GPUConfig{}); err != nil || got != cfg.Image || len(srv.Requests()) != before {
		t.Errorf("plain image: %q, %v, %d requests; want it as configured, none", got, err, len(srv.Requests())-before)
	}
}
