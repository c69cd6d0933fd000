package aws

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/aws/aws-sdk-go-v2/config"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/pricing"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// NewCatalogFromAPI discovers the region's instance types and prices them live: the catalog
// `tiler catalog --cloud aws` prints and `tiler run --cloud aws` plans with. SDK clients come
// from the default AWS configuration (optFns are applied last). Errors name the call, page and
// item that failed.
func NewCatalogFromAPI(ctx context.Context, cfg Config, clk clock.PassiveClock, optFns ...func(*config.LoadOptions) error) (*catalog.Catalog, error) {
	if err := cfg.ValidateCatalog(); err != nil {
		return nil, fmt.Errorf("aws catalog config: %w", err)
	}
	awsCfg, err := awspricing.LoadAWSConfig(ctx, cfg.Region, optFns...)
	if err != nil {
		return nil, err
	}
	ec2Client := awspricing.NewEC2Client(awsCfg, cfg.Endpoint)
	pricingClient := awspricing.NewPricingClient(awsCfg, pricingRegion(cfg), cfg.Endpoint)
	newSource := func(zones []string) (pricing.Source, error) {
		return awspricing.NewFromClients(cfg.pricingConfig(zones), pricingClient, ec2Client, clk)
	}
	return NewCatalog(ctx, ec2Client, newSource, cfg, clk.Now())
}

func pricingRegion(cfg Config) string {
	if cfg.PricingRegion != "" {
		return cfg.PricingRegion
	}
	return awspricing.DefaultPricingRegion
}

// NewCatalog discovers types with client, builds a price source for the zones found with
// newSource (so on-demand prices are repeated for exactly those zones) and merges the two.
// Passing the source through a constructor keeps it decoratable.
func NewCatalog(ctx context.Context, client EC2API, newSource func(zones []string) (pricing.Source, error), cfg Config, now time.Time) (*catalog.Catalog, error) {
	types, err := DiscoverTypes(ctx, client, cfg)
	if err != nil {
		return nil, fmt.Errorf("discovering aws instance types: %w", err)
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("discovering aws instance types: no type in region %s matches instanceTypes %v in a usable zone", cfg.Region, cfg.InstanceTypes)
	}
	src, err := newSource(zonesOf(types))
	if err != nil {
		return nil, err
	}
	prices, err := src.Prices(ctx)
	if err != nil {
		return nil, fmt.Errorf("pricing aws instance types: %w", err)
	}
	source := fmt.Sprintf("aws api %s: DescribeInstanceTypes, DescribeInstanceTypeOfferings, %s prices (GetProducts, DescribeSpotPriceHistory)",
		now.UTC().Format(time.RFC3339), src.Name())
	return BuildCatalog(cfg.Region, types, prices, source)
}

// BuildCatalog merges discovered types with prices. Each type gets an on-demand and a spot
// offering per zone that offers it, when it supports that usage class and a positive price is
// known (a price with an empty zone applies to every zone). A type left with no offering is
// dropped: the catalog holds facts, and a price is not invented. A spot price above on-demand is
// kept (see pricing/aws). MaxPods is catalog.DefaultMaxPods, as in the embedded catalogs.
func BuildCatalog(region string, types []TypeInfo, prices []pricing.Price, source string) (*catalog.Catalog, error) {
	index := map[api.Offering]float64{}
	for _, p := range prices {
		index[p.Offering] = p.PricePerHour
	}
	priceOf := func(t api.InstanceTypeName, z string, ct api.CapacityType) float64 {
		if v, ok := index[api.Offering{InstanceType: t, Zone: z, CapacityType: ct}]; ok {
			return v
		}
		return index[api.Offering{InstanceType: t, CapacityType: ct}]
	}
	c := &catalog.Catalog{Name: "aws-" + region, Provider: "aws", Region: region, Source: source}
	zones := map[string]bool{}
	for _, ti := range types {
		it := catalog.InstanceType{Name: ti.Name, VCPU: ti.VCPU, MemoryMiB: ti.MemoryMiB, Arch: ti.Arch,
			GPU: ti.GPU, MaxPods: catalog.DefaultMaxPods}
		for _, z := range ti.Zones {
			for _, ct := range capacityTypes(ti) {
				if p := priceOf(ti.Name, z, ct); p > 0 {
					it.Offerings = append(it.Offerings, catalog.ZonePrice{Zone: z, CapacityType: ct, PricePerHour: p})
					zones[z] = true
				}
			}
		}
		if len(it.Offerings) > 0 {
			c.Types = append(c.Types, it)
		}
	}
	for z := range zones {
		c.Zones = append(c.Zones, z)
	}
	sort.Strings(c.Zones)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Sort()
	return c, nil
}

func capacityTypes(ti TypeInfo) []api.CapacityType {
	var out []api.CapacityType
	if ti.OnDemand {
		out = append(out, api.OnDemand)
	}
	if ti.Spot {
		out = append(out, api.Spot)
	}
	return out
}

func zonesOf(types []TypeInfo) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range types {
		for _, z := range t.Zones {
			if !seen[z] {
				seen[z] = true
				out = append(out, z)
			}
		}
	}
	sort.Strings(out)
	return out
}
