package aws

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tiler-dev/tiler/pricing"
)

// spotProductDescriptions are the Linux product descriptions. EC2 reports VPC and EC2-Classic
// history separately in old accounts; both price the same Linux capacity.
var spotProductDescriptions = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// spotMaxResults is the largest page DescribeSpotPriceHistory serves.
const spotMaxResults = 1000

type spotKey struct {
	t    api.InstanceTypeName
	zone string
}

// spot pages through DescribeSpotPriceHistory from now and keeps the newest price per
// (type, zone). EC2 ends with an empty nextToken rather than none; the paginator takes both as
// the last page. A token seen before is an error, as in onDemand.
func (s *Source) spot(ctx context.Context, now time.Time) ([]pricing.Price, error) {
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(s.ec2, s.spotInput(now))
	latest := map[spotKey]pricing.Price{}
	seen := map[string]bool{}
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: more than %d pages", maxPages)
		}
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeSpotPriceHistory page %d: %w", page, err)
		}
		for i, item := range out.SpotPriceHistory {
			p, err := spotPrice(item)
			if err != nil {
				return nil, fmt.Errorf("DescribeSpotPriceHistory page %d, spotPriceHistorySet[%d]: %w", page, i, err)
			}
			if !s.cfg.InstanceTypes.Allows(string(p.InstanceType)) {
				continue
			}
			k := spotKey{p.InstanceType, p.Zone}
			if old, ok := latest[k]; !ok || p.ObservedAt.After(old.ObservedAt) {
				latest[k] = p
			}
		}
		if token := awssdk.ToString(out.NextToken); token != "" {
			if seen[token] {
				return nil, fmt.Errorf("DescribeSpotPriceHistory page %d: nextToken repeats an earlier page's", page)
			}
			seen[token] = true
		}
	}
	out := make([]pricing.Price, 0, len(latest))
	for _, p := range latest {
		out = append(out, p)
	}
	return out, nil
}

func (s *Source) spotInput(now time.Time) *ec2.DescribeSpotPriceHistoryInput {
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: spotProductDescriptions,
		StartTime:           awssdk.Time(now),
		MaxResults:          awssdk.Int32(spotMaxResults),
	}
	if values := s.cfg.InstanceTypes.EC2Values(); len(values) > 0 {
		in.Filters = []ec2types.Filter{{Name: awssdk.String("instance-type"), Values: values}}
	}
	return in
}

// spotPrice converts one history item; errors name the field.
func spotPrice(item ec2types.SpotPrice) (pricing.Price, error) {
	name := string(item.InstanceType)
	zone := awssdk.ToString(item.AvailabilityZone)
	switch {
	case name == "":
		return pricing.Price{}, fmt.Errorf("instanceType is missing")
	case zone == "":
		return pricing.Price{}, fmt.Errorf("%s: availabilityZone is missing", name)
	case item.Timestamp == nil:
		return pricing.Price{}, fmt.Errorf("%s in %s: timestamp is missing", name, zone)
	}
	raw := awssdk.ToString(item.SpotPrice)
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || !(v > 0 && v <= catalog.MaxPricePerHour) { // NaN fails both comparisons
		return pricing.Price{}, fmt.Errorf("%s in %s: spotPrice %q is not a positive number of at most %g $/h", name, zone, raw, float64(catalog.MaxPricePerHour))
	}
	return pricing.Price{
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: api.InstanceTypeName(name), Zone: zone, CapacityType: api.Spot}, PricePerHour: v},
		ObservedAt:     item.Timestamp.UTC(),
	}, nil
}
