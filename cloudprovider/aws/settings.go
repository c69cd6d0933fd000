package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Launch settings (cloudprovider.SettingsChooser): every instance carries, in its
// tiler.dev/launch-settings tag, a digest of the settings it was launched with besides its AMI and
// its node's labels and taints (those drift by ImageFor and the pool's hash):
//   - with Bootstrap, the cluster coordinates, the instance profile and the security groups of the
//     managed launch templates;
//   - with a launch template of your own, its ID or name and version: the number configured, or
//     the number $Default or $Latest names when the launch is made (read through
//     DescribeLaunchTemplates at most once per ImageRefresh, a failed read keeping the last). The
//     launch names that number, so a new default (or latest) version of the template drifts the
//     nodes launched from an older one, and they roll onto it under the pools' budgets.
//
// The instance's subnet follows the digest as "digest:subnet" when Subnets maps its zone, so a
// changed subnet of a zone drifts the nodes launched there. Instances launched before the tag
// existed say nothing, and are not drifted by their settings; nor are those launched from $Default
// or $Latest before the version was resolved (their tag is the digest of the symbolic version,
// Provider.settings: which version they run is not known).

var _ cloudprovider.SettingsChooser = (*Provider)(nil)

// boot is what a launch boots and is launched with, resolved once per launch: the AMI (ImageFor;
// "" with a launch template of your own), the version of your own launch template ("" with
// Bootstrap) and the digest of the launch settings.
type boot struct {
	image, version, settings string
}

// bootFor resolves the boot of a launch of a node with GPU configuration gpu.
func (p *Provider) bootFor(ctx context.Context, gpu api.GPUConfig) (boot, error) {
	image, err := p.ImageFor(ctx, gpu)
	if err != nil {
		return boot{}, err
	}
	version, settings, err := p.templateNow(ctx)
	if err != nil {
		return boot{}, err
	}
	return boot{image: image, version: version, settings: settings}, nil
}

// LaunchSettings returns the settings an instance launched now in zone records.
func (p *Provider) LaunchSettings(ctx context.Context, zone string) (string, error) {
	_, settings, err := p.templateNow(ctx)
	if err != nil {
		return "", err
	}
	return withSubnet(settings, p.cfg.Subnets[zone]), nil
}

// symbolicVersion reports whether the configured launch template version names a version that
// moves ($Default, $Latest).
func (c Config) symbolicVersion() bool {
	v := c.launchTemplateVersion()
	return c.Bootstrap == nil && (v == DefaultLaunchTemplateVersion || v == LatestLaunchTemplateVersion)
}

// templateNow returns the version of your own launch template a launch names now and the digest
// of the launch settings with it: the configured version and Provider.settings, unless the version
// is $Default or $Latest, whose number now is read from EC2 (cloudprovider.RefreshedImages, every
// ImageRefresh at most). With Bootstrap: no version, Provider.settings.
func (p *Provider) templateNow(ctx context.Context) (version, settings string, err error) {
	if p.cfg.Bootstrap != nil {
		return "", p.settings, nil
	}
	v := p.cfg.launchTemplateVersion()
	if !p.cfg.symbolicVersion() {
		return v, p.settings, nil
	}
	n, err := p.images.read.Resolve(ctx, "launch-template "+v, func(ctx context.Context) (string, error) {
		return p.readTemplateVersion(ctx, v)
	})
	if err != nil {
		return "", "", err
	}
	return n, settingsDigest(p.cfg, n), nil
}

// readTemplateVersion asks EC2 for the number the configured launch template's version v
// ($Default or $Latest) names.
func (p *Provider) readTemplateVersion(ctx context.Context, v string) (string, error) {
	in := &ec2.DescribeLaunchTemplatesInput{}
	what := p.cfg.LaunchTemplateID
	if what != "" {
		in.LaunchTemplateIds = []string{what}
	} else {
		what = p.cfg.LaunchTemplateName
		in.LaunchTemplateNames = []string{what}
	}
	out, err := p.ec2.DescribeLaunchTemplates(ctx, in)
	if err != nil {
		return "", fmt.Errorf("reading the %s version of launch template %s: %w", v, what, err)
	}
	if len(out.LaunchTemplates) != 1 {
		return "", fmt.Errorf("reading the %s version of launch template %s: EC2 lists %d templates, want 1", v, what, len(out.LaunchTemplates))
	}
	lt := out.LaunchTemplates[0]
	n := lt.DefaultVersionNumber
	if v == LatestLaunchTemplateVersion {
		n = lt.LatestVersionNumber
	}
	if n == nil {
		return "", fmt.Errorf("reading the %s version of launch template %s: EC2 gives no version number", v, what)
	}
	return strconv.FormatInt(*n, 10), nil
}

// settingsDigest is the first 16 hex digits of SHA-256 over the launch settings of cfg, with
// version as your own launch template's version, in a fixed form of its own: bump the version when
// adding fields. The provider computes it once with the configured version (Provider.settings):
// its configuration does not change; a $Default or $Latest version is digested as the number it
// names at the launch (templateNow).
func settingsDigest(cfg Config, version string) string {
	fields := []string{"tiler-settings-v1"}
	if b := cfg.Bootstrap; b != nil {
		sgs := slices.Sorted(slices.Values(b.SecurityGroupIDs))
		fields = append(fields, "bootstrap", b.ClusterName, b.APIServerEndpoint, b.CertificateAuthority, b.ServiceCIDR,
			b.InstanceProfile, strings.Join(sgs, ","))
	} else {
		fields = append(fields, "template", cfg.LaunchTemplateID, cfg.LaunchTemplateName, version)
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// instanceSettings returns the settings of an instance whose tag is digest, launched into subnet
// in zone: the subnet counts only where Subnets maps the zone, as in LaunchSettings.
func (p *Provider) instanceSettings(digest, zone, subnet string) string {
	if digest == "" || p.cfg.symbolicVersion() && digest == p.settings {
		return "" // not told, or launched from $Default or $Latest before it was resolved
	}
	if p.cfg.Subnets[zone] == "" {
		subnet = ""
	}
	return withSubnet(digest, subnet)
}

// withSubnet appends ":subnet" to digest when subnet is set.
func withSubnet(digest, subnet string) string {
	if subnet == "" {
		return digest
	}
	return digest + ":" + subnet
}
