package gcp

import (
	"strings"
	"testing"

	"cloud.google.com/go/billing/apiv1/billingpb"
	"google.golang.org/genproto/googleapis/type/money"
)

// TestRateOfBounds: units × 10^9 overflowed int64 for large units (a negative or garbage rate);
// absurd or malformed unit prices are errors naming the SKU and the field.
func TestRateOfBounds(t *testing.T) {
	sku := func(unit string, units int64, nanos int32) *billingpb.Sku {
		return &billingpb.Sku{SkuId: "X", Description: "N1 Predefined Instance Core running in Americas", ServiceRegions: []string{"us-central1"},
			Category: &billingpb.Category{UsageType: "OnDemand"},
			PricingInfo: []*billingpb.PricingInfo{{PricingExpression: &billingpb.PricingExpression{UsageUnit: unit,
				TieredRates: []*billingpb.PricingExpression_TierRate{{UnitPrice: &money.Money{CurrencyCode: "USD", Units: units, Nanos: nanos}}}}}}}
	}
	cases := []struct {
		sku  *billingpb.Sku
		want string
	}{
		{sku("h", 1<<62, 0), "unitPrice.units 4611686018427387904 is above 10000 $ per h"},
		{sku("s", 3, 0), "unitPrice.units 3 is above 2 $ per s"},
		{sku("h", 0, -5), "unitPrice is negative"},
		{sku("h", 1, 2_000_000_000), "unitPrice.nanos 2000000000 is not below 10^9"},
	}
	for _, c := range cases {
		_, err := NewRateCard([]*billingpb.Sku{c.sku}, "us-central1", "USD")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "sku X") {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
	if _, err := NewRateCard([]*billingpb.Sku{sku("h", 0, 31611000)}, "us-central1", "USD"); err != nil {
		t.Errorf("a real rate: %v", err)
	}
}
