package awstest

import (
	"encoding/json"
	"fmt"
)

// PriceItem renders one Price List item the way GetProducts returns it (a JSON document in a
// string): an on-demand, shared-tenancy Linux item with capacitystatus Used in region, priced
// usd per hour.
func PriceItem(region, instanceType, usd string) string {
	sku := "AWSTEST-" + instanceType
	item := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance", "sku": sku,
			"attributes": map[string]string{
				"instanceType": instanceType, "regionCode": region, "operatingSystem": "Linux",
				"preInstalledSw": "NA", "tenancy": "Shared", "capacitystatus": "Used",
				"marketoption": "OnDemand", "servicecode": "AmazonEC2",
			},
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{sku + ".JRTCKXETXF": map[string]any{
			"priceDimensions": map[string]any{sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
				"unit": "Hrs", "pricePerUnit": map[string]string{"USD": usd},
				"description": fmt.Sprintf("$%s per On Demand Linux %s Instance Hour", usd, instanceType),
			}},
		}}},
	}
	b, err := json.Marshal(item)
	if err != nil {
		panic(err) // the map above always marshals
	}
	return string(b)
}

// GetProducts is a GetProducts response page with the given items and NextToken ("" for the
// last page).
func GetProducts(nextToken string, items ...string) Response {
	page := map[string]any{"FormatVersion": "aws_v1", "PriceList": items}
	if nextToken != "" {
		page["NextToken"] = nextToken
	}
	b, err := json.Marshal(page)
	if err != nil {
		panic(err)
	}
	return PricingJSON(b)
}
