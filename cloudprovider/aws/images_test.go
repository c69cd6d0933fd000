package aws

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// nvidiaAMIParameter is AWS's public SSM parameter of the latest EKS-optimized AL2023 NVIDIA AMI.
const nvidiaAMIParameter = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id"

// TestImageFromSSMParameter: an image setting naming an SSM parameter (resolve:ssm:) is read
// through the SSM API (the real SDK against the local server): the launch template and the
// instance boot from the AMI it holds, ImageFor names it, and it is read again only once
// ImageRefresh has passed. When AWS publishes a new AMI under the parameter, ImageFor names the
// new one after the refresh (the nodes booted from the old one drift); a read that fails keeps
// the AMI last read; with none read yet, the error is the launch's.
func TestImageFromSSMParameter(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.ServeLaunchTemplates()
	srv.Always("DescribeInstances", noInstances())
	pool := awstest.FleetPool{Type: "m7i.xlarge", SubnetID: subnetB, Zone: "us-east-1b", Lifecycle: "spot"}
	srv.Always("CreateFleet", awstest.CreateFleet([]awstest.FleetLaunch{{Pool: pool, InstanceIDs: []string{"i-0web"}}}, nil))
	params := srv.ServeParameters(map[string]string{nvidiaAMIParameter: "ami-0nvidia00000000001"})
	cfg := bootstrapConfig(srv.URL)
	cfg.Bootstrap.ImageID, cfg.Bootstrap.GPUImageID = SSMImagePrefix+nvidiaAMIParameter, ""
	cfg.ImageRefresh = 10 * time.Minute
	clk := fakeClock()
	p, err := NewProvider(context.Background(), cfg, clk, srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	imageFor := func() string {
		t.Helper()
		img, err := p.ImageFor(ctx, api.GPUConfig{})
		if err != nil {
			t.Fatalf("ImageFor: %v", err)
		}
		return img
	}
	inst, err := p.Create(ctx, webRequest("web-1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.Image != "ami-0nvidia00000000001" || imageFor() != inst.Image {
		t.Errorf("launched image %q, ImageFor %q; want the parameter's ami-0nvidia00000000001", inst.Image, imageFor())
	}
	for i, c := range srv.Requests("CreateLaunchTemplate") {
		if got := c.Form.Get("LaunchTemplateData.ImageId"); got != "ami-0nvidia00000000001" {
			t.Errorf("template %d: ImageId %q, want the AMI the parameter holds", i, got)
		}
	}
	if n := len(srv.Requests("GetParameter")); n != 1 {
		t.Errorf("%d GetParameter calls within the refresh period, want 1", n)
	}
	// AWS publishes a new AMI: seen once the refresh period has passed.
	params.Set(nvidiaAMIParameter, "ami-0nvidia00000000002")
	if got := imageFor(); got != "ami-0nvidia00000000001" {
		t.Errorf("ImageFor within the refresh period = %q, want the AMI read before", got)
	}
	clk.Step(10 * time.Minute)
	if got := imageFor(); got != "ami-0nvidia00000000002" {
		t.Errorf("ImageFor after the refresh period = %q, want the new AMI", got)
	}
	// A read that fails keeps the AMI last read.
	clk.Step(10 * time.Minute)
	srv.Enqueue("GetParameter", awstest.SSMError(http.StatusBadRequest, "AccessDeniedException", "not authorized to perform ssm:GetParameter"))
	if got := imageFor(); got != "ami-0nvidia00000000002" {
		t.Errorf("ImageFor when the read fails = %q, want the AMI last read", got)
	}

	// A provider that has read nothing yet: the error is the launch's, naming the parameter.
	fresh, err := NewProvider(context.Background(), cfg, fakeClock(), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue("GetParameter", awstest.SSMError(http.StatusBadRequest, "ParameterNotFound", "Parameter not found."))
	if _, err := fresh.Create(ctx, webRequest("web-2")); err == nil || !strings.Contains(err.Error(), nvidiaAMIParameter) {
		t.Errorf("Create with the parameter unreadable: %v, want an error naming it", err)
	}
	params.Set(nvidiaAMIParameter, "not-an-ami")
	if _, err := fresh.ImageFor(ctx, api.GPUConfig{}); err == nil || !strings.Contains(err.Error(), "not an AMI ID") {
		t.Errorf("ImageFor of a parameter holding no AMI: %v", err)
	}
}
