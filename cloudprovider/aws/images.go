package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// SSMImagePrefix marks an image setting (NodeBootstrap.ImageID, GPUImageID) that names an SSM
// parameter holding the AMI ID, as EC2 launch templates take it: resolve:ssm:NAME, e.g. AWS's
// public parameter of the latest EKS-optimized AL2023 NVIDIA AMI,
// resolve:ssm:/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id.
// When AWS publishes a new AMI under it, launches boot from it and the nodes booted from the
// old one drift (cloudprovider.ImageChooser): the fleet follows AWS's AMI releases under the
// pools' disruption budgets, as Karpenter's AMI aliases do.
const SSMImagePrefix = "resolve:ssm:"

// DefaultImageRefresh is how long an AMI read from an SSM parameter is used before the parameter
// is read again.
const DefaultImageRefresh = 10 * time.Minute

// SSMAPI is the part of the SSM client the provider uses.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// NewSSMClient returns an SSM client, sending to endpoint when it is not empty.
func NewSSMClient(awsCfg awssdk.Config, endpoint string) *ssm.Client {
	return ssm.NewFromConfig(awsCfg, func(o *ssm.Options) {
		if endpoint != "" {
			o.BaseEndpoint = awssdk.String(endpoint)
		}
	})
}

// imageResolver turns image settings into AMI IDs: an AMI ID as it is, an SSM parameter
// (SSMImagePrefix) into the AMI it holds, read at most once per refresh period
// (cloudprovider.RefreshedImages: a read that fails keeps the AMI last read; with none read yet,
// it is an error).
type imageResolver struct {
	ssm  SSMAPI
	read cloudprovider.RefreshedImages
}

func (r *imageResolver) resolve(ctx context.Context, setting string) (string, error) {
	name, ok := strings.CutPrefix(setting, SSMImagePrefix)
	if !ok {
		return setting, nil
	}
	return r.read.Resolve(ctx, setting, func(ctx context.Context) (string, error) { return r.get(ctx, name) })
}

func (r *imageResolver) get(ctx context.Context, name string) (string, error) {
	if r.ssm == nil {
		return "", fmt.Errorf("image %s%s: the provider has no SSM client", SSMImagePrefix, name)
	}
	out, err := r.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: awssdk.String(name)})
	if err != nil {
		return "", fmt.Errorf("reading the AMI of SSM parameter %s: %w", name, err)
	}
	if out.Parameter == nil {
		return "", fmt.Errorf("SSM parameter %s: no parameter in the answer", name)
	}
	ami := awssdk.ToString(out.Parameter.Value)
	if !strings.HasPrefix(ami, "ami-") {
		return "", fmt.Errorf("SSM parameter %s holds %q, not an AMI ID", name, ami)
	}
	return ami, nil
}

// validImageSetting reports what is wrong with an image setting (nil for nothing): an AMI ID, or
// an SSM parameter named after SSMImagePrefix.
func validImageSetting(s string) error {
	switch name, ssmParam := strings.CutPrefix(s, SSMImagePrefix); {
	case ssmParam && name == "":
		return errors.New("names no SSM parameter after " + SSMImagePrefix)
	case !ssmParam && !strings.HasPrefix(s, "ami-"):
		return errors.New("is not an AMI ID (ami-…) or an SSM parameter (" + SSMImagePrefix + "NAME)")
	}
	return nil
}

// ImageFor returns the AMI a node with GPU configuration gpu boots from (NodeBootstrap's ImageID
// or GPUImageID, an SSM parameter read as imageResolver does), or "" when the launch template is
// the user's (Config.LaunchTemplateID or LaunchTemplateName): Tiler does not choose the image
// then.
func (p *Provider) ImageFor(ctx context.Context, gpu api.GPUConfig) (string, error) {
	if p.cfg.Bootstrap == nil {
		return "", nil
	}
	return p.images.resolve(ctx, p.cfg.Bootstrap.imageFor(gpu))
}
