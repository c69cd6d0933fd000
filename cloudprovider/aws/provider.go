package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// EC2API is the part of the EC2 client this package uses; *ec2.Client satisfies it. Tests point
// a real client at awstest; decorators may wrap it to measure each call. The paginated calls are
// the SDK's own client interfaces, which its paginators take.
type EC2API interface {
	ec2.DescribeInstancesAPIClient
	ec2.DescribeInstanceTypesAPIClient
	ec2.DescribeInstanceTypeOfferingsAPIClient
	ec2.DescribeLaunchTemplatesAPIClient
	ec2.DescribeCapacityReservationsAPIClient
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, optFns ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// SQSAPI is the part of the SQS client the interruption source uses; *sqs.Client satisfies it.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// maxPages bounds every pagination loop; a service that never stops paging is a bug.
const maxPages = 1000

// Provider is the EC2 cloudprovider.Provider. It is safe for concurrent use.
type Provider struct {
	cfg         Config
	ec2         EC2API
	clock       clock.Clock
	unavailable *cloudprovider.UnavailableOfferings

	// prices is the catalog whose prices fill Instance.PricePerHour (SetPrices), nil before.
	prices atomic.Pointer[catalog.Catalog]

	// templates are the managed launch templates known to exist (Config.Bootstrap), used when
	// each was last needed by a launch; gcSince is the first CollectGarbage call.
	tmplMu    sync.Mutex
	templates map[string]bool
	used      map[string]time.Time
	gcSince   time.Time
	// images resolves the bootstrap's image settings (images.go).
	images *imageResolver
	// gcMu keeps CollectGarbage from deleting a template between a launch's ensuring it and
	// CreateFleet: launches hold it for reading, deletions for writing.
	gcMu sync.RWMutex
	// settings is the digest of the launch settings (settings.go).
	settings string
}

var (
	_ cloudprovider.Provider            = (*Provider)(nil)
	_ cloudprovider.UnavailableReporter = (*Provider)(nil)
	_ cloudprovider.GarbageCollector    = (*Provider)(nil)
	_ cloudprovider.ImageChooser        = (*Provider)(nil)
)

// NewProvider builds a Provider with an EC2 client from the default AWS configuration (optFns
// are applied last; tests pass static credentials and a fast retryer). Only cmd/ passes the real
// clock.
func NewProvider(ctx context.Context, cfg Config, clk clock.Clock, optFns ...func(*config.LoadOptions) error) (*Provider, error) {
	if err := cfg.ValidateProvider(); err != nil {
		return nil, fmt.Errorf("aws provider config: %w", err)
	}
	awsCfg, err := awspricing.LoadAWSConfig(ctx, cfg.Region, optFns...)
	if err != nil {
		return nil, err
	}
	p, err := NewProviderFromClient(cfg, awspricing.NewEC2Client(awsCfg, cfg.Endpoint), clk)
	if err != nil {
		return nil, err
	}
	p.images.ssm = NewSSMClient(awsCfg, cfg.Endpoint)
	return p, nil
}

// NewProviderFromClient builds a Provider over client, with no SSM client: image settings that
// name an SSM parameter fail to resolve.
func NewProviderFromClient(cfg Config, client EC2API, clk clock.Clock) (*Provider, error) {
	if err := cfg.ValidateProvider(); err != nil {
		return nil, fmt.Errorf("aws provider config: %w", err)
	}
	if client == nil || clk == nil {
		return nil, errors.New("aws provider: EC2 client and clock must be set")
	}
	return &Provider{cfg: cfg, ec2: client, clock: clk, settings: settingsDigest(cfg, cfg.LaunchTemplateVersion),
		unavailable: cloudprovider.NewUnavailableOfferings(clk, cfg.unavailableTTL()), templates: map[string]bool{},
		used: map[string]time.Time{}, images: &imageResolver{read: cloudprovider.RefreshedImages{Clock: clk, Refresh: cfg.imageRefresh()}}}, nil
}

// Name returns "aws".
func (p *Provider) Name() string { return "aws" }

// Unavailable returns the cache of offerings EC2 recently found unavailable. Create fills it,
// including on partial success, and skips the offerings in it; the controller learns of the same
// offerings from CreateReportingUnavailable and keeps them out of its plans.
func (p *Provider) Unavailable() *cloudprovider.UnavailableOfferings { return p.unavailable }

// SetPrices records the catalog's prices, which fill Instance.PricePerHour from then on; without
// it PricePerHour is zero. The controller does not need it: it prices what it launched from the
// plan's offering and fallbacks, or its catalog (provisioner boughtAs).
func (p *Provider) SetPrices(c *catalog.Catalog) {
	p.prices.Store(c)
}

func (p *Provider) priceOf(o api.Offering) float64 {
	cat := p.prices.Load()
	if cat == nil {
		return 0
	}
	price, _ := cat.Price(o)
	return price
}
