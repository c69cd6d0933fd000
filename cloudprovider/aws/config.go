package aws

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// Defaults for the optional Config fields.
const (
	// DefaultLaunchTemplateVersion launches the template's default version.
	DefaultLaunchTemplateVersion = "$Default"
	// LatestLaunchTemplateVersion launches the template's latest version.
	LatestLaunchTemplateVersion = "$Latest"
	// DefaultUnavailableTTL is how long an offering EC2 had no capacity for stays unavailable. Karpenter uses three
	// minutes: long enough to stop hammering a pool that just said no, short enough to retry
	// capacity that EC2 frees continuously.
	DefaultUnavailableTTL = 3 * time.Minute
	// DefaultWaitTimeSeconds is the SQS long-poll wait, the maximum SQS allows.
	DefaultWaitTimeSeconds = 20
	// DefaultVisibilityTimeoutSeconds hides a received message from other pollers while Tiler
	// handles it; Tiler deletes it once the node is annotated, and one not deleted by then (the
	// controller died or failed to annotate) is received again.
	DefaultVisibilityTimeoutSeconds = 20
	// DefaultTemplateRetention is how long a managed launch template no launch used is kept:
	// a week covers a pool that scales up once a weekend.
	DefaultTemplateRetention = 7 * 24 * time.Hour
)

// Config is what a CLI fills from flags to build the provider, the catalog and the interruption
// source. Zero values of optional fields take the defaults above.
type Config struct {
	// Region is the EC2 region, e.g. us-east-1.
	Region string
	// Endpoint, when set, replaces the EC2, Pricing and SQS endpoints (tests, LocalStack).
	Endpoint string
	// PricingRegion is where the Pricing API is called (default us-east-1).
	PricingRegion string
	// ClusterName is the value of the tiler.dev/cluster tag on every instance.
	ClusterName string
	// Subnets maps availability zone to the subnet ID launches in that zone use. When set, the
	// catalog only offers these zones.
	Subnets map[string]string
	// LaunchTemplateID or LaunchTemplateName names a launch template of your own whose user data
	// bootstraps the node (reading the instance's tags for its pool and GPU configuration), or
	// Bootstrap has Tiler manage the launch templates; exactly one of the three is set.
	LaunchTemplateID   string
	LaunchTemplateName string
	// LaunchTemplateVersion is the version of the template of your own: a number, $Default (the
	// default) or $Latest, which launches name as the number they name now (settings.go).
	LaunchTemplateVersion string
	// Bootstrap, when set, has Tiler create a launch template per pool and bootstrap
	// configuration whose nodeadm user data registers the node with its planned labels and
	// taints (see NodeBootstrap).
	Bootstrap *NodeBootstrap
	// QueueURL is the SQS queue EventBridge sends EC2 interruption events to.
	QueueURL string
	// InstanceTypes is the catalog's allow-list of families, types or patterns; empty allows all.
	InstanceTypes awspricing.InstanceTypeFilter
	// UnavailableTTL defaults to DefaultUnavailableTTL.
	UnavailableTTL time.Duration
	// TemplateRetention is how long a managed launch template (Bootstrap) that no launch used
	// is kept before CollectGarbage deletes it; zero means DefaultTemplateRetention.
	TemplateRetention time.Duration
	// ImageRefresh is how long an AMI read from an SSM parameter (Bootstrap's images), or the
	// number a launch template of your own's $Default or $Latest version names, is used before it
	// is read again; zero means DefaultImageRefresh.
	ImageRefresh time.Duration
	// WaitTimeSeconds and VisibilityTimeoutSeconds tune the SQS long poll (defaults above).
	WaitTimeSeconds          int32
	VisibilityTimeoutSeconds int32
}

// ValidateProvider checks what launching needs; errors are sentences naming the field.
func (c Config) ValidateProvider() error {
	var errs []error
	if c.Region == "" {
		errs = append(errs, errors.New("region must be set"))
	}
	if c.ClusterName == "" {
		errs = append(errs, errors.New("clusterName must be set"))
	}
	if len(c.Subnets) == 0 {
		errs = append(errs, errors.New("subnets must map at least one zone to a subnet ID"))
	}
	for _, z := range sortedZones(c.Subnets) {
		if !strings.HasPrefix(c.Subnets[z], "subnet-") {
			errs = append(errs, fmt.Errorf("subnets[%s] %q is not a subnet ID", z, c.Subnets[z]))
		}
	}
	set := 0
	for _, b := range []bool{c.LaunchTemplateID != "", c.LaunchTemplateName != "", c.Bootstrap != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, errors.New("exactly one of launchTemplateID, launchTemplateName and bootstrap must be set"))
	}
	if c.Bootstrap != nil {
		errs = append(errs, c.Bootstrap.validate())
	}
	return errors.Join(errs...)
}

// ValidateCatalog checks what catalog discovery needs.
func (c Config) ValidateCatalog() error {
	if c.Region == "" {
		return errors.New("region must be set")
	}
	return c.InstanceTypes.Validate()
}

// ValidateInterruptions checks what the interruption source needs.
func (c Config) ValidateInterruptions() error {
	var errs []error
	if c.Region == "" {
		errs = append(errs, errors.New("region must be set"))
	}
	if c.QueueURL == "" {
		errs = append(errs, errors.New("queueURL must be set"))
	}
	if c.WaitTimeSeconds < 0 || c.WaitTimeSeconds > 20 {
		errs = append(errs, fmt.Errorf("waitTimeSeconds %d must be between 0 and 20", c.WaitTimeSeconds))
	}
	return errors.Join(errs...)
}

func (c Config) launchTemplateVersion() string {
	if c.LaunchTemplateVersion != "" {
		return c.LaunchTemplateVersion
	}
	return DefaultLaunchTemplateVersion
}

func (c Config) templateRetention() time.Duration {
	if c.TemplateRetention > 0 {
		return c.TemplateRetention
	}
	return DefaultTemplateRetention
}

func (c Config) imageRefresh() time.Duration {
	if c.ImageRefresh > 0 {
		return c.ImageRefresh
	}
	return DefaultImageRefresh
}

func (c Config) unavailableTTL() time.Duration {
	if c.UnavailableTTL > 0 {
		return c.UnavailableTTL
	}
	return DefaultUnavailableTTL
}

func (c Config) pricingConfig(zones []string) awspricing.Config {
	return awspricing.Config{Region: c.Region, PricingRegion: c.PricingRegion, Endpoint: c.Endpoint,
		InstanceTypes: c.InstanceTypes, Zones: zones}
}

// zoneOfSubnet returns the zone whose configured subnet is id.
func (c Config) zoneOfSubnet(id string) string {
	for z, s := range c.Subnets {
		if s == id {
			return z
		}
	}
	return ""
}

func sortedZones(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for z := range m {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}
