package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// productFilter is one attribute the price items must have, checked by the API (TERM_MATCH) and
// again on every decoded item.
type productFilter struct{ field, value string }

// onDemandFilters select the price of an ordinary on-demand Linux instance: no Windows/RHEL/SQL
// (operatingSystem, preInstalledSw), no dedicated hosts (tenancy), and no reserved-capacity line
// items (capacitystatus: Used, not UnusedCapacityReservation or AllocatedCapacityReservation).
var onDemandFilters = []productFilter{
	{"operatingSystem", "Linux"},
	{"preInstalledSw", "NA"},
	{"tenancy", "Shared"},
	{"capacitystatus", "Used"},
	{"marketoption", "OnDemand"},
}

// priceItem is the part of a PriceList document that is read.
type priceItem struct {
	Product struct {
		SKU        string            `json:"sku"`
		Attributes map[string]string `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// onDemand pages through GetProducts and returns the hourly USD price per instance type. A
// NextToken seen before is an error: the paginator would only notice one repeating the previous
// page's, and then stop quietly with the prices incomplete.
func (s *Source) onDemand(ctx context.Context) (map[api.InstanceTypeName]float64, error) {
	pages := awspricing.NewGetProductsPaginator(s.pricing, s.getProductsInput())
	prices := map[api.InstanceTypeName]float64{}
	seen := map[string]bool{}
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("GetProducts: more than %d pages", maxPages)
		}
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("GetProducts page %d: %w", page, err)
		}
		for i, doc := range out.PriceList {
			if err := s.addItem(prices, doc); err != nil {
				return nil, fmt.Errorf("GetProducts page %d, PriceList[%d]: %w", page, i, err)
			}
		}
		if token := awssdk.ToString(out.NextToken); token != "" {
			if seen[token] {
				return nil, fmt.Errorf("GetProducts page %d: NextToken repeats an earlier page's", page)
			}
			seen[token] = true
		}
	}
	return prices, nil
}

func (s *Source) getProductsInput() *awspricing.GetProductsInput {
	filters := []pricingtypes.Filter{termMatch("regionCode", s.cfg.Region)}
	for _, f := range onDemandFilters {
		filters = append(filters, termMatch(f.field, f.value))
	}
	if types, ok := s.cfg.InstanceTypes.ExactTypes(); ok {
		filters = append(filters, pricingtypes.Filter{Field: awssdk.String("instanceType"),
			Type: pricingtypes.FilterTypeAnyOf, Value: awssdk.String(strings.Join(types, ","))})
	}
	return &awspricing.GetProductsInput{
		ServiceCode: awssdk.String("AmazonEC2"), Filters: filters, MaxResults: awssdk.Int32(100),
	}
}

func termMatch(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Field: awssdk.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: awssdk.String(value)}
}

// addItem decodes one PriceList document and records its price when the item is one we want.
// When two items price the same type, the lower price is kept.
func (s *Source) addItem(prices map[api.InstanceTypeName]float64, doc string) error {
	var item priceItem
	if err := json.Unmarshal([]byte(doc), &item); err != nil {
		return fmt.Errorf("decoding price item: %w", err)
	}
	attrs := item.Product.Attributes
	name := attrs["instanceType"]
	if name == "" {
		return fmt.Errorf("sku %q: product.attributes.instanceType is missing", item.Product.SKU)
	}
	if !s.wanted(attrs) {
		return nil
	}
	price, err := hourlyUSD(item)
	if err != nil {
		return fmt.Errorf("sku %q (%s): %w", item.Product.SKU, name, err)
	}
	if price == 0 {
		return nil // a zero list price is not an offer; the catalog requires positive prices
	}
	t := api.InstanceTypeName(name)
	if old, ok := prices[t]; !ok || price < old {
		prices[t] = price
	}
	return nil
}

// wanted re-checks the API filters on a decoded item. The region matches by regionCode or, for
// items that lack it, by the location name.
func (s *Source) wanted(attrs map[string]string) bool {
	for _, f := range onDemandFilters {
		v, ok := attrs[f.field]
		if !ok && f.field == "marketoption" {
			continue // items published before spot-in-price-list lack marketoption
		}
		if v != f.value {
			return false
		}
	}
	if !s.cfg.InstanceTypes.Allows(attrs["instanceType"]) {
		return false
	}
	if code := attrs["regionCode"]; code != "" {
		return code == s.cfg.Region
	}
	loc, ok := regionLocations[s.cfg.Region]
	return ok && attrs["location"] == loc
}

// hourlyUSD returns the single hourly USD price of an item's on-demand term.
func hourlyUSD(item priceItem) (float64, error) {
	if len(item.Terms.OnDemand) == 0 {
		return 0, fmt.Errorf("terms.OnDemand is empty")
	}
	for _, termKey := range sortedKeys(item.Terms.OnDemand) {
		term := item.Terms.OnDemand[termKey]
		for _, dimKey := range sortedKeys(term.PriceDimensions) {
			dim := term.PriceDimensions[dimKey]
			if dim.Unit != "Hrs" {
				continue
			}
			field := fmt.Sprintf("terms.OnDemand[%s].priceDimensions[%s].pricePerUnit.USD", termKey, dimKey)
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				return 0, fmt.Errorf("%s is missing", field)
			}
			v, err := strconv.ParseFloat(usd, 64)
			if err != nil || !(v >= 0 && v <= catalog.MaxPricePerHour) { // NaN fails both comparisons
				return 0, fmt.Errorf("%s %q is not a non-negative number of at most %g", field, usd, float64(catalog.MaxPricePerHour))
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("terms.OnDemand has no price dimension with unit Hrs")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// regionLocations maps region codes to the Pricing API's location names, for price items that
// predate the regionCode attribute.
var regionLocations = map[string]string{
	"us-east-1":      "US East (N. Virginia)",
	"us-east-2":      "US East (Ohio)",
	"us-west-1":      "US West (N. California)",
	"us-west-2":      "US West (Oregon)",
	"ca-central-1":   "Canada (Central)",
	"eu-west-1":      "EU (Ireland)",
	"eu-west-2":      "EU (London)",
	"eu-west-3":      "EU (Paris)",
	"eu-central-1":   "EU (Frankfurt)",
	"eu-north-1":     "EU (Stockholm)",
	"ap-northeast-1": "Asia Pacific (Tokyo)",
	"ap-northeast-2": "Asia Pacific (Seoul)",
	"ap-south-1":     "Asia Pacific (Mumbai)",
	"ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-southeast-2": "Asia Pacific (Sydney)",
	"sa-east-1":      "South America (Sao Paulo)",
	"af-south-1":     "Africa (Cape Town)",
}
