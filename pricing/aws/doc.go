// Package aws is the live AWS price source: on-demand prices from the Price List Query API
// (GetProducts) and spot prices from EC2 DescribeSpotPriceHistory, behind pricing.Source.
//
// On-demand: GetProducts for service AmazonEC2, filtered to Linux, shared tenancy, no
// pre-installed software, capacitystatus=Used and the region's regionCode, paginated by NextToken.
// Each PriceList entry is itself a JSON document in a string; the filters are checked again on the
// decoded item (an item without regionCode is matched by its location name), because the API's
// TERM_MATCH filters are the only thing standing between us and reserved-capacity or Windows
// prices. On-demand prices hold region-wide, so each is repeated for every zone of the region.
//
// Spot: DescribeSpotPriceHistory with StartTime = now for Linux/UNIX, which returns the price in
// force per (type, zone); the newest entry per (type, zone) wins and its timestamp is ObservedAt.
// EC2 ends the pagination with an empty, not an absent, nextToken; both stop the loop.
//
// A spot price above the on-demand price of the same type and zone is kept (SpotAboveOnDemand
// lists them): the simulation compares offerings by price, so it will then prefer the on-demand
// offering, which is also the one that cannot be interrupted. Dropping the spot price would hide
// that spot capacity exists at all.
//
// Errors: Prices returns an error and no prices when any call or any item fails (a malformed item
// is named by page, index, SKU and field), so that the caller keeps the prices it had, as the
// pricing.Source contract requires.
package aws
