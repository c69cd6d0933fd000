package pricing

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
)

// EmbeddedSourceName is the Name of an EmbeddedSource, in logs and metrics.
const EmbeddedSourceName = "embedded"

// EmbeddedSource is a Source over a catalog compiled into the binary: its prices are the catalog's
// offerings, all observed at one fixed time (the date the catalog's data was collected). It never
// fails and never changes, which makes it the fallback of a Refresher.
type EmbeddedSource struct {
	prices []Price
}

var _ Source = (*EmbeddedSource)(nil)

// NewEmbeddedSource returns a Source whose prices are the offerings of cat, each with ObservedAt
// set to observedAt. The catalog is read once; later changes to cat are not seen. Offerings marked
// Unavailable are included: availability is not a price fact.
func NewEmbeddedSource(cat *catalog.Catalog, observedAt time.Time) (*EmbeddedSource, error) {
	if cat == nil {
		return nil, fmt.Errorf("embedded price source: catalog is nil")
	}
	var prices []Price
	for _, t := range cat.Types {
		for _, o := range t.Offerings {
			prices = append(prices, Price{
				PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType}, PricePerHour: o.PricePerHour},
				ObservedAt:     observedAt,
			})
		}
	}
	SortPrices(prices)
	return &EmbeddedSource{prices: prices}, nil
}

// Name returns "embedded".
func (s *EmbeddedSource) Name() string { return EmbeddedSourceName }

// Prices returns a copy of the catalog's prices, sorted by type, zone and capacity type. It never
// returns an error.
func (s *EmbeddedSource) Prices(context.Context) ([]Price, error) {
	return append([]Price(nil), s.prices...), nil
}

// SortPrices orders prices by instance type, zone and capacity type, the order of a sorted
// catalog's offerings.
func SortPrices(prices []Price) {
	sort.Slice(prices, func(i, j int) bool {
		a, b := prices[i], prices[j]
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
}

// usable reports whether a price can be put on an offering: catalog.Validate requires a positive,
// finite price, so zero, negative, NaN and infinite prices are treated as missing.
func usable(p float64) bool { return p > 0 && !math.IsInf(p, 0) && !math.IsNaN(p) }

// Apply returns a clone of cat whose offerings carry the given prices. cat is not modified.
//
// The rules, because prices are facts and the catalog says what exists:
//   - An offering with a usable price in prices takes it; Unavailable marks are kept.
//   - A spot offering with no price is removed: without a current spot price we do not know that
//     spot capacity is sold, and the simulation must not plan on it.
//   - An on-demand offering with no price keeps the price it had: list prices change rarely, and a
//     source that omits a type (partial answer, new type) must not make it unbuyable.
//   - A spot price above the on-demand price is kept as it is; the simulation then picks on-demand
//     on cost, which is what a buyer would do.
//   - Prices for offerings the catalog does not have are ignored: Apply never adds types, zones or
//     offerings. A zero, negative, NaN or infinite price counts as missing.
//
// Types are kept even when they are left without offerings, so that the catalog still describes
// them.
func Apply(cat *catalog.Catalog, prices []Price) *catalog.Catalog {
	byKey := make(map[api.Offering]float64, len(prices))
	for _, p := range prices {
		if usable(p.PricePerHour) {
			byKey[p.Offering] = p.PricePerHour
		}
	}
	out := cat.Clone()
	for i := range out.Types {
		t := &out.Types[i]
		kept := t.Offerings[:0]
		for _, o := range t.Offerings {
			price, ok := byKey[api.Offering{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType}]
			switch {
			case ok:
				o.PricePerHour = price
			case o.CapacityType == api.Spot:
				continue
			}
			kept = append(kept, o)
		}
		t.Offerings = kept
	}
	return out
}
