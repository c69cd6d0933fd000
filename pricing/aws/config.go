package aws

import (
	"context"
	"errors"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/utils/clock"
)

// DefaultPricingRegion hosts the Price List Query API; it also answers from eu-central-1 and
// ap-south-1, but the prices are the same.
const DefaultPricingRegion = "us-east-1"

// Config is what a CLI fills from flags to build a Source.
type Config struct {
	// Region is the EC2 region to price, e.g. us-east-1.
	Region string
	// PricingRegion is where the Pricing API is called; DefaultPricingRegion when empty.
	PricingRegion string
	// Endpoint, when set, replaces the endpoint of both the EC2 and the Pricing client (tests,
	// LocalStack).
	Endpoint string
	// InstanceTypes restricts the prices fetched; see InstanceTypeFilter. Empty means all types.
	InstanceTypes InstanceTypeFilter
	// Zones are the zones on-demand prices are repeated for. When empty, the Source asks EC2
	// DescribeAvailabilityZones once and remembers the answer.
	Zones []string
}

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	if c.Region == "" {
		return errors.New("region must be set")
	}
	return c.InstanceTypes.Validate()
}

func (c Config) pricingRegion() string {
	if c.PricingRegion != "" {
		return c.PricingRegion
	}
	return DefaultPricingRegion
}

// LoadAWSConfig loads the SDK configuration for region the standard way (environment, shared
// files, IMDS), with optFns applied last so that tests can pass static credentials and a fast
// retryer.
func LoadAWSConfig(ctx context.Context, region string, optFns ...func(*config.LoadOptions) error) (awssdk.Config, error) {
	opts := append([]func(*config.LoadOptions) error{config.WithRegion(region)}, optFns...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return awssdk.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return cfg, nil
}

// NewEC2Client returns an EC2 client for awsCfg, sending to endpoint when it is not empty.
func NewEC2Client(awsCfg awssdk.Config, endpoint string) *ec2.Client {
	return ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
		if endpoint != "" {
			o.BaseEndpoint = awssdk.String(endpoint)
		}
	})
}

// NewPricingClient returns a Pricing API client in region, sending to endpoint when it is not
// empty.
func NewPricingClient(awsCfg awssdk.Config, region, endpoint string) *awspricing.Client {
	return awspricing.NewFromConfig(awsCfg, func(o *awspricing.Options) {
		o.Region = region
		if endpoint != "" {
			o.BaseEndpoint = awssdk.String(endpoint)
		}
	})
}

// New builds a Source with SDK clients made from the default AWS configuration. clk supplies the
// spot history start time and ObservedAt of on-demand prices; only cmd/ passes the real clock.
func New(ctx context.Context, cfg Config, clk clock.PassiveClock, optFns ...func(*config.LoadOptions) error) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("aws pricing config: %w", err)
	}
	awsCfg, err := LoadAWSConfig(ctx, cfg.Region, optFns...)
	if err != nil {
		return nil, err
	}
	return NewFromClients(cfg, NewPricingClient(awsCfg, cfg.pricingRegion(), cfg.Endpoint),
		NewEC2Client(awsCfg, cfg.Endpoint), clk)
}
