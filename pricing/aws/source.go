package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/pricing"
)

// PricingAPI is the part of the Pricing API client the Source uses; *pricing.Client satisfies it,
// and tests or decorators may wrap it. It is the SDK's client interface of GetProducts, which the
// SDK's paginator takes.
type PricingAPI interface {
	awspricing.GetProductsAPIClient
}

// EC2API is the part of the EC2 client the Source uses; *ec2.Client satisfies it. The paginated
// call is the SDK's client interface, which its paginator takes.
type EC2API interface {
	ec2.DescribeSpotPriceHistoryAPIClient
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// maxPages bounds every pagination loop: a service that keeps returning tokens is a bug, not a
// reason to loop forever. 1000 pages of 100 price items is far above the ~1,000 EC2 types.
const maxPages = 1000

// Source is the live AWS pricing.Source. It holds no prices between calls; it is safe for
// concurrent use.
type Source struct {
	cfg     Config
	pricing PricingAPI
	ec2     EC2API
	clock   clock.PassiveClock

	mu    sync.Mutex
	zones []string // from cfg.Zones or, once fetched, DescribeAvailabilityZones
}

var _ pricing.Source = (*Source)(nil)

// NewFromClients builds a Source over the given clients.
func NewFromClients(cfg Config, pricingClient PricingAPI, ec2Client EC2API, clk clock.PassiveClock) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("aws pricing config: %w", err)
	}
	if pricingClient == nil || ec2Client == nil || clk == nil {
		return nil, errors.New("aws pricing: pricing client, EC2 client and clock must be set")
	}
	return &Source{cfg: cfg, pricing: pricingClient, ec2: ec2Client, clock: clk,
		zones: append([]string(nil), cfg.Zones...)}, nil
}

// Name returns "aws".
func (s *Source) Name() string { return "aws" }

// Prices returns the on-demand price of every allowed type in every zone and the latest spot
// price per (type, zone), sorted by type, zone and capacity type. Any failed call or malformed
// item fails the whole refresh with an error naming it, and no prices are returned, so that the
// caller keeps the prices it had.
func (s *Source) Prices(ctx context.Context) ([]pricing.Price, error) {
	zones, err := s.zoneList(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws prices: %w", err)
	}
	now := s.clock.Now()
	onDemand, err := s.onDemand(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws on-demand prices: %w", err)
	}
	spot, err := s.spot(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("aws spot prices: %w", err)
	}
	out := make([]pricing.Price, 0, len(onDemand)*len(zones)+len(spot))
	for name, price := range onDemand {
		for _, z := range zones {
			out = append(out, pricing.Price{
				PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: name, Zone: z, CapacityType: api.OnDemand}, PricePerHour: price},
				ObservedAt:     now,
			})
		}
	}
	out = append(out, spot...)
	pricing.SortPrices(out)
	return out, nil
}

// SpotAboveOnDemand returns the spot prices in ps that are higher than the on-demand price of the
// same type and zone. Prices keeps them (see the package doc); callers log or count them.
func SpotAboveOnDemand(ps []pricing.Price) []pricing.Price {
	type key struct {
		t api.InstanceTypeName
		z string
	}
	od := map[key]float64{}
	for _, p := range ps {
		if p.CapacityType == api.OnDemand {
			od[key{p.InstanceType, p.Zone}] = p.PricePerHour
		}
	}
	var out []pricing.Price
	for _, p := range ps {
		if o, ok := od[key{p.InstanceType, p.Zone}]; ok && p.CapacityType == api.Spot && p.PricePerHour > o {
			out = append(out, p)
		}
	}
	return out
}

// zoneList returns the configured zones or asks EC2 once for the region's available zones.
func (s *Source) zoneList(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.zones) > 0 {
		return s.zones, nil
	}
	out, err := s.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{
		Filters: []ec2types.Filter{
			{Name: awssdk.String("zone-type"), Values: []string{"availability-zone"}},
			{Name: awssdk.String("state"), Values: []string{"available"}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("describing availability zones: %w", err)
	}
	var zones []string
	for i, z := range out.AvailabilityZones {
		name := awssdk.ToString(z.ZoneName)
		if name == "" {
			return nil, fmt.Errorf("describing availability zones: availabilityZoneInfo[%d].zoneName is empty", i)
		}
		zones = append(zones, name)
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("describing availability zones: region %s has no available zone", s.cfg.Region)
	}
	sort.Strings(zones)
	s.zones = zones
	return zones, nil
}
