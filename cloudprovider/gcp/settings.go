package gcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Launch settings (cloudprovider.SettingsChooser): every instance records, in its
// tiler-launch-settings metadata, a digest of the settings it was launched with besides its
// image and its node's labels and taints: the network and subnetwork, the boot disk's size and
// type, the service account and its scopes, the metadata of Config.Metadata (the bootstrap) and
// the spot termination action. A node launched with another digest than a launch now gets is
// drifted; instances launched before the metadata existed say nothing, and are not.

// MetadataLaunchSettings is the instance metadata key of the launch settings' digest.
const MetadataLaunchSettings = "tiler-launch-settings"

// LaunchSettings returns the settings an instance launched now records, in any zone.
func (p *Provider) LaunchSettings(context.Context, string) (string, error) { return p.settings, nil }

// settingsDigest is the first 16 hex digits of SHA-256 over the launch settings of cfg, in a fixed
// form of its own: bump the version when adding fields.
func settingsDigest(cfg Config) string {
	fields := []string{"tiler-settings-v1", cfg.Network, cfg.Subnetwork, strconv.FormatInt(cfg.DiskSizeGB, 10), cfg.DiskType,
		cfg.ServiceAccount, strings.Join(slices.Sorted(slices.Values(cfg.Scopes)), ","), cfg.SpotTerminationAction}
	for _, k := range slices.Sorted(maps.Keys(cfg.Metadata)) {
		fields = append(fields, k+"="+cfg.Metadata[k])
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
	return hex.EncodeToString(sum[:8])
}
