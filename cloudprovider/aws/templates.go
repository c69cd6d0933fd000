package aws

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// managedTemplate is a launch template Tiler manages: its name and what it holds.
type managedTemplate struct {
	name string
	pool string
	hash string
	data *ec2types.RequestLaunchTemplateData
}

// templateNameUnsafe matches what a launch template name may not hold.
var templateNameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9().\-/_]`)

// templateFor builds the managed launch template of a node launched as offering o: the AMI,
// instance profile, security groups, IMDSv2 with instance tags readable (the GPU tags), and the
// nodeadm user data with the kubelet labels of the node launched as o and its taints (the
// reservation taint with the shared value api.ReservationPending). Its name
// is tiler-<pool>-<hash>, the hash being the first 16 hex digits of SHA-256 over the template's
// data: nodes of a pool that boot alike share one template, and any change of the bootstrap
// (labels, taints, GPU configuration, AMI, cluster coordinates) makes another.
func (p *Provider) templateFor(req cloudprovider.LaunchRequest, o api.Offering, image string) (managedTemplate, error) {
	b := p.cfg.Bootstrap
	cluster := b.ClusterName
	if cluster == "" {
		cluster = p.cfg.ClusterName
	}
	userData, err := b.UserData(cluster, cloudprovider.KubeletLabels(req.LabelsFor(o), req.GPU),
		cloudprovider.SharedTaints(req.Taints))
	if err != nil {
		return managedTemplate{}, err
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            awssdk.String(image),
		IamInstanceProfile: instanceProfile(b.InstanceProfile),
		SecurityGroupIds:   b.SecurityGroupIDs,
		UserData:           awssdk.String(base64.StdEncoding.EncodeToString(userData)),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
			HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
			HttpPutResponseHopLimit: awssdk.Int32(2),
			InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateEnabled,
		},
	}
	// The hash covers what the template holds, in a fixed form of its own (not the SDK type's
	// encoding, which would change with SDK upgrades); bump the version when adding fields.
	sum := sha256.Sum256([]byte(strings.Join([]string{"tiler-template-v1", awssdk.ToString(data.ImageId), b.InstanceProfile,
		strings.Join(b.SecurityGroupIDs, ","), "imdsv2-hop2-tags", string(userData)}, "\x00")))
	hash := hex.EncodeToString(sum[:8])
	pool := req.Pool
	if pool == "" {
		pool = "default"
	}
	pool = templateNameUnsafe.ReplaceAllString(pool, "-")
	if len(pool) > 64 {
		pool = pool[:64]
	}
	return managedTemplate{name: "tiler-" + pool + "-" + hash, pool: req.Pool, hash: hash, data: data}, nil
}

// instanceProfile names the instance profile by ARN or by name.
func instanceProfile(s string) *ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest {
	if strings.HasPrefix(s, "arn:") {
		return &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: awssdk.String(s)}
	}
	return &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: awssdk.String(s)}
}

// codeTemplateExists is EC2's error code for a launch template name that is taken.
const codeTemplateExists = "InvalidLaunchTemplateName.AlreadyExistsException"

// ensureTemplate makes sure EC2 has the managed template, idempotently by name: a template this
// provider saw is not looked up again; otherwise DescribeLaunchTemplates by name, and when EC2
// has none, CreateLaunchTemplate (with the name as client token). Losing the race to another
// replica that created it first (AlreadyExists) is success: the name fixes the content.
func (p *Provider) ensureTemplate(ctx context.Context, t managedTemplate) error {
	p.tmplMu.Lock()
	known := p.templates[t.name]
	p.used[t.name] = p.clock.Now()
	p.tmplMu.Unlock()
	if known {
		return nil
	}
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: awssdk.String("launch-template-name"), Values: []string{t.name}}},
	})
	if err != nil {
		return fmt.Errorf("looking up launch template %s: %w", t.name, err)
	}
	if len(out.LaunchTemplates) == 0 {
		_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: awssdk.String(t.name),
			ClientToken:        awssdk.String(t.name),
			LaunchTemplateData: t.data,
			TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: p.templateTags(t)}},
		})
		var ae smithy.APIError
		if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == codeTemplateExists) {
			return fmt.Errorf("creating launch template %s: %w", t.name, err)
		}
	}
	p.tmplMu.Lock()
	p.templates[t.name] = true
	p.tmplMu.Unlock()
	return nil
}

// templateTags are the tags of a managed launch template: cluster, pool and bootstrap hash.
func (p *Provider) templateTags(t managedTemplate) []ec2types.Tag {
	tags := []ec2types.Tag{
		{Key: awssdk.String(api.TagBootstrapHash), Value: awssdk.String(t.hash)},
		{Key: awssdk.String(api.TagCluster), Value: awssdk.String(p.cfg.ClusterName)},
	}
	if t.pool != "" {
		tags = append(tags, ec2types.Tag{Key: awssdk.String(api.TagPool), Value: awssdk.String(t.pool)})
	}
	return tags
}

// assignTemplates gives each target of the groups its managed launch template, ensuring each
// template once. Without Config.Bootstrap every target uses the configured template.
func (p *Provider) assignTemplates(ctx context.Context, req cloudprovider.LaunchRequest, groups []fleetGroup, image string) error {
	if p.cfg.Bootstrap == nil {
		return nil
	}
	ensured := map[string]bool{}
	for gi := range groups {
		for ti := range groups[gi].targets {
			t := &groups[gi].targets[ti]
			mt, err := p.templateFor(req, t.ref, image)
			if err != nil {
				return err
			}
			if !ensured[mt.name] {
				if err := p.ensureTemplate(ctx, mt); err != nil {
					return err
				}
				ensured[mt.name] = true
			}
			t.template = mt.name
		}
	}
	return nil
}
