package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// Launch settings (cloudprovider.SettingsChooser): every instance carries, in its
// tiler.dev/launch-settings tag, a digest of the settings it was launched with besides its AMI and
// its node's labels and taints (those drift by ImageFor and the pool's hash):
//   - with Bootstrap, the cluster coordinates, the instance profile and the security groups of the
//     managed launch templates;
//   - with a launch template of your own, its ID or name and version. A new default version of it
//     is not seen: name the version to roll the fleet onto it.
//
// The instance's subnet follows the digest as "digest:subnet" when Subnets maps its zone, so a
// changed subnet of a zone drifts the nodes launched there. Instances launched before the tag
// existed say nothing, and are not drifted by their settings.

var _ cloudprovider.SettingsChooser = (*Provider)(nil)

// LaunchSettings returns the settings an instance launched now in zone records.
func (p *Provider) LaunchSettings(zone string) string {
	return withSubnet(p.settings, p.cfg.Subnets[zone])
}

// settingsDigest is the first 16 hex digits of SHA-256 over the launch settings of cfg, in a fixed
// form of its own: bump the version when adding fields. The provider computes it once
// (Provider.settings): its configuration does not change.
func settingsDigest(cfg Config) string {
	fields := []string{"tiler-settings-v1"}
	if b := cfg.Bootstrap; b != nil {
		sgs := slices.Sorted(slices.Values(b.SecurityGroupIDs))
		fields = append(fields, "bootstrap", b.ClusterName, b.APIServerEndpoint, b.CertificateAuthority, b.ServiceCIDR,
			b.InstanceProfile, strings.Join(sgs, ","))
	} else {
		fields = append(fields, "template", cfg.LaunchTemplateID, cfg.LaunchTemplateName, cfg.LaunchTemplateVersion)
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// instanceSettings returns the settings of an instance whose tag is digest, launched into subnet
// in zone: the subnet counts only where Subnets maps the zone, as in LaunchSettings.
func (p *Provider) instanceSettings(digest, zone, subnet string) string {
	if digest == "" {
		return ""
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
