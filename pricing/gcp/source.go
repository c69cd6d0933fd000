package gcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/tiler-dev/tiler/api"

	billing "cloud.google.com/go/billing/apiv1"
	"cloud.google.com/go/billing/apiv1/billingpb"
	"google.golang.org/api/option"

	"github.com/tiler-dev/tiler/internal/gcpapi"
	"github.com/tiler-dev/tiler/pricing"
)

// ComputeEngineService is the Cloud Billing catalog name of the Compute Engine service.
const ComputeEngineService = "services/6F81-5844-456A"

// SourceName is the Name of the GCP price source, in logs and metrics.
const SourceName = "gcp"

// Config configures the GCP price source. A CLI fills it from flags.
type Config struct {
	// Region is the region whose prices are read, e.g. "us-central1".
	Region string
	// Zones are the zones that get the region's prices (GCE prices are per region).
	Zones []string
	// Endpoint overrides the Cloud Billing API endpoint (tests, private endpoints); empty means
	// the SDK's default.
	Endpoint string
	// Currency is the ISO 4217 code prices are asked in; empty means USD.
	Currency string
	// PageSize is the number of SKUs per ListSkus page; 0 means 5000, the API's maximum.
	PageSize int32
	// Retry governs retries of throttled and failed calls; zero means gcpapi.DefaultRetryPolicy.
	Retry gcpapi.RetryPolicy
}

func (c Config) withDefaults() Config {
	if c.Currency == "" {
		c.Currency = "USD"
	}
	if c.PageSize == 0 {
		c.PageSize = 5000
	}
	if c.Retry == (gcpapi.RetryPolicy{}) {
		c.Retry = gcpapi.DefaultRetryPolicy()
	}
	return c
}

// Validate checks the configuration; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.Region == "":
		return errors.New("gcp pricing: region is empty")
	case len(c.Zones) == 0:
		return errors.New("gcp pricing: zones is empty")
	case c.PageSize < 0:
		return errors.New("gcp pricing: pageSize must not be negative")
	}
	if err := c.withDefaults().Retry.Validate(); err != nil {
		return fmt.Errorf("gcp pricing: %w", err)
	}
	return nil
}

// Source is the pricing.Source over the Cloud Billing catalog. It prices the machines it was
// given, in every configured zone, on demand and spot.
type Source struct {
	cfg      Config
	client   *billing.CloudCatalogClient
	machines []Machine
}

var _ pricing.Source = (*Source)(nil)

// NewSource returns a Source for machines. It builds a Cloud Billing catalog client over REST (so
// that tests can point it at an httptest server with option.WithEndpoint); opts are added to the
// client options, e.g. option.WithoutAuthentication in tests. Close releases the client.
func NewSource(ctx context.Context, cfg Config, machines []Machine, opts ...option.ClientOption) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, err := billing.NewCloudCatalogRESTClient(ctx, gcpapi.ClientOptions(cfg.Endpoint, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("gcp pricing: creating the Cloud Billing client: %w", err)
	}
	return &Source{cfg: cfg, client: client, machines: machines}, nil
}

// Close releases the client's connections.
func (s *Source) Close() error { return s.client.Close() }

// Name returns "gcp".
func (s *Source) Name() string { return SourceName }

// Prices lists the Compute Engine SKUs (every page) and returns the price of every machine whose
// parts are all priced, per zone and capacity type, sorted. ObservedAt is the latest effective
// time of the SKUs a price is made of. An error — the API failing after retries, a page that does
// not decode, a SKU of a used part that cannot be read — means no prices, and the caller keeps
// the ones it had.
func (s *Source) Prices(ctx context.Context) ([]pricing.Price, error) {
	card, err := s.RateCard(ctx)
	if err != nil {
		return nil, err
	}
	var out []pricing.Price
	for _, m := range s.machines {
		for _, capacity := range []api.CapacityType{api.OnDemand, api.Spot} {
			price, at, ok := card.Price(m, capacity)
			if !ok {
				continue
			}
			for _, zone := range s.cfg.Zones {
				out = append(out, pricing.Price{
					PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: m.Name, Zone: zone, CapacityType: capacity}, PricePerHour: price},
					ObservedAt:     at,
				})
			}
		}
	}
	pricing.SortPrices(out)
	return out, nil
}

// RateCard lists the Compute Engine SKUs and returns the region's rate card.
func (s *Source) RateCard(ctx context.Context) (*RateCard, error) {
	skus, err := s.listSKUs(ctx)
	if err != nil {
		return nil, err
	}
	card, err := NewRateCard(skus, s.cfg.Region, s.cfg.Currency)
	if err != nil {
		return nil, fmt.Errorf("gcp pricing: %w", err)
	}
	return card, nil
}

// listSKUs reads every page of the Compute Engine SKU list; the SDK iterator follows
// nextPageToken.
func (s *Source) listSKUs(ctx context.Context) ([]*billingpb.Sku, error) {
	it := s.client.ListSkus(ctx, &billingpb.ListSkusRequest{
		Parent:       ComputeEngineService,
		CurrencyCode: s.cfg.Currency,
		PageSize:     s.cfg.PageSize,
	}, s.cfg.Retry.CallOption())
	// The REST client's list requests do not carry ctx (gcpapi.Collect): a hung endpoint would hold
	// a price refresh past its deadline.
	skus, err := gcpapi.Collect(ctx, it.Next)
	if err != nil {
		return nil, fmt.Errorf("gcp pricing: listing %s SKUs: %w", ComputeEngineService, err)
	}
	return skus, nil
}
