package gcp

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"

	"cloud.google.com/go/billing/apiv1/billingpb"
)

// part is what a SKU prices: one vCPU or one GiB of RAM of a machine family, or one GPU of an
// accelerator type, bought on demand or spot.
type part struct {
	kind     partKind
	name     string // machine family for core and RAM, accelerator type for GPU
	capacity api.CapacityType
}

type partKind string

const (
	core partKind = "core"
	ram  partKind = "ram"
	gpu  partKind = "gpu"
)

// maxRateNanosPerHour bounds a part's rate: $10,000 per vCPU-, GiB- or GPU-hour, some 10^5 times
// any real rate, so that machine prices (VCPU × rate and the like, within catalog's bounds) are
// exact int64 sums.
const maxRateNanosPerHour int64 = 10_000 * 1_000_000_000

// rate is a part's price in nano-dollars per unit-hour (unit: vCPU, GiB or GPU). Integers keep
// the composition exact: the SKUs give units + nanos, so the sum is exact to the nano-dollar.
type rate struct {
	nanosPerHour int64
	effective    time.Time
	skuID        string
	regions      int // how many regions the SKU covers: a narrower SKU wins over a broader one
}

var (
	// "A2 Instance Core running in Americas", "Spot Preemptible N1 Predefined Instance Ram running
	// in Americas". Custom, sole-tenant and commitment SKUs do not match.
	machinePartSKU = regexp.MustCompile(`^(?:Spot )?(?:Preemptible )?(\w+) (?:Predefined )?Instance (Core|Ram) running in `)
	// "Nvidia Tesla A100 GPU running in Americas", "Nvidia L4 GPU attached to Spot Preemptible VMs
	// running in Americas", older "Preemptible Nvidia Tesla T4 GPU running in …".
	gpuSKU = regexp.MustCompile(`^(?:Preemptible )?Nvidia (.+?) GPU (?:attached to Spot Preemptible VMs )?running in `)
)

// gpuSKUModels maps the model in a GPU SKU description, lowercased and without "Tesla ", to the
// GCE accelerator type. Models not listed (virtual workstation SKUs, retired GPUs) are not priced.
var gpuSKUModels = map[string]string{
	"a100":           "nvidia-tesla-a100",
	"a100 80gb":      "nvidia-a100-80gb",
	"h100 80gb":      "nvidia-h100-80gb",
	"h100 80gb mega": "nvidia-h100-mega-80gb",
	"h100 mega 80gb": "nvidia-h100-mega-80gb",
	"l4":             "nvidia-l4",
	"t4":             "nvidia-tesla-t4",
	"v100":           "nvidia-tesla-v100",
	"p100":           "nvidia-tesla-p100",
	"p4":             "nvidia-tesla-p4",
}

// classify returns the part a SKU prices, or false if the SKU is not one the source uses.
func classify(sku *billingpb.Sku) (part, bool) {
	var capacity api.CapacityType
	switch sku.GetCategory().GetUsageType() {
	case "OnDemand":
		capacity = api.OnDemand
	case "Preemptible":
		capacity = api.Spot
	default: // Commit1Yr, Commit3Yr, …: commitments are not offerings
		return part{}, false
	}
	desc := sku.GetDescription()
	if m := machinePartSKU.FindStringSubmatch(desc); m != nil {
		kind := core
		if m[2] == "Ram" {
			kind = ram
		}
		return part{kind: kind, name: strings.ToLower(m[1]), capacity: capacity}, true
	}
	if m := gpuSKU.FindStringSubmatch(desc); m != nil {
		model := strings.TrimPrefix(strings.ToLower(m[1]), "tesla ")
		if acc, ok := gpuSKUModels[model]; ok {
			return part{kind: gpu, name: acc, capacity: capacity}, true
		}
	}
	return part{}, false
}

// inRegion reports whether the SKU applies to region.
func inRegion(sku *billingpb.Sku, region string) bool {
	return slices.Contains(sku.GetServiceRegions(), region) || slices.Contains(sku.GetGeoTaxonomy().GetRegions(), region)
}

// unitsPerHour converts a usage unit to "per unit-hour" for the part: rates of core and GPU SKUs
// are per hour (h; min and s are accepted), RAM SKUs per GiB-hour (GiBy.h; MiBy.h accepted). The
// result multiplies the SKU's unit price.
func unitsPerHour(kind partKind, usageUnit string) (int64, bool) {
	if kind == ram {
		switch usageUnit {
		case "GiBy.h":
			return 1, true
		case "MiBy.h":
			return 1024, true
		}
		return 0, false
	}
	switch usageUnit {
	case "h":
		return 1, true
	case "min":
		return 60, true
	case "s":
		return 3600, true
	}
	return 0, false
}

// rateOf reads the hourly rate of a SKU that classify accepted. Errors name the SKU and the field:
// a SKU that prices a part Tiler uses must be understood, or its machines would be mispriced.
func rateOf(sku *billingpb.Sku, kind partKind, currency string) (rate, error) {
	info := latestPricing(sku.GetPricingInfo())
	if info == nil {
		return rate{}, skuError(sku, "pricingInfo is empty")
	}
	expr := info.GetPricingExpression()
	perHour, ok := unitsPerHour(kind, expr.GetUsageUnit())
	if !ok {
		return rate{}, skuError(sku, fmt.Sprintf("pricingExpression.usageUnit %q is not an hourly unit for a %s SKU", expr.GetUsageUnit(), kind))
	}
	var tier *billingpb.PricingExpression_TierRate
	for _, t := range expr.GetTieredRates() {
		if t.GetStartUsageAmount() == 0 {
			tier = t
			break
		}
	}
	if tier == nil {
		return rate{}, skuError(sku, "pricingExpression.tieredRates has no tier starting at 0")
	}
	price := tier.GetUnitPrice()
	if c := price.GetCurrencyCode(); c != "" && c != currency {
		return rate{}, skuError(sku, fmt.Sprintf("unitPrice.currencyCode is %q, want %q", c, currency))
	}
	units, frac := price.GetUnits(), int64(price.GetNanos())
	switch {
	case units < 0 || frac < 0:
		return rate{}, skuError(sku, "unitPrice is negative")
	case frac > 999_999_999:
		return rate{}, skuError(sku, fmt.Sprintf("unitPrice.nanos %d is not below 10^9", frac))
	case units > maxRateNanosPerHour/1e9/perHour:
		// Checked before multiplying: units*1e9 overflowed int64 for large units.
		return rate{}, skuError(sku, fmt.Sprintf("unitPrice.units %d is above %d $ per %s", units, maxRateNanosPerHour/1e9/perHour, expr.GetUsageUnit()))
	}
	nanos := units*1e9 + frac
	if nanos*perHour > maxRateNanosPerHour {
		return rate{}, skuError(sku, fmt.Sprintf("unitPrice %d nano-dollars per %s is above %d $ per unit-hour", nanos, expr.GetUsageUnit(), maxRateNanosPerHour/1e9))
	}
	return rate{
		nanosPerHour: nanos * perHour,
		effective:    info.GetEffectiveTime().AsTime(),
		skuID:        sku.GetSkuId(),
		regions:      len(sku.GetServiceRegions()),
	}, nil
}

// latestPricing returns the pricing info with the latest effectiveTime (ListSkus returns the
// current one only unless a time range is asked for, but a list may hold several).
func latestPricing(infos []*billingpb.PricingInfo) *billingpb.PricingInfo {
	var latest *billingpb.PricingInfo
	for _, p := range infos {
		if latest == nil || p.GetEffectiveTime().AsTime().After(latest.GetEffectiveTime().AsTime()) {
			latest = p
		}
	}
	return latest
}

func skuError(sku *billingpb.Sku, msg string) error {
	return fmt.Errorf("sku %s (%q): %s", sku.GetSkuId(), sku.GetDescription(), msg)
}

// RateCard holds the hourly rates of the parts of Compute Engine machines in one region.
type RateCard struct {
	region string
	rates  map[part]rate
}

// NewRateCard reads the SKUs that price machine parts in region. SKUs of other regions, usage
// types other than OnDemand and Preemptible, and descriptions that are not machine parts are
// skipped. A SKU that prices a part but cannot be read (no pricing, unknown unit, other currency)
// is an error naming it. When two SKUs price the same part in the region, the one covering fewer
// regions wins (then the lower SKU ID), so the choice is deterministic.
func NewRateCard(skus []*billingpb.Sku, region, currency string) (*RateCard, error) {
	card := &RateCard{region: region, rates: map[part]rate{}}
	for _, sku := range skus {
		p, ok := classify(sku)
		if !ok || !inRegion(sku, region) {
			continue
		}
		r, err := rateOf(sku, p.kind, currency)
		if err != nil {
			return nil, err
		}
		if old, ok := card.rates[p]; ok && !narrower(r, old) {
			continue
		}
		card.rates[p] = r
	}
	return card, nil
}

func narrower(a, b rate) bool {
	if a.regions != b.regions {
		return a.regions < b.regions
	}
	return a.skuID < b.skuID
}

// Price returns the hourly price of machine m bought as capacity, in dollars, and the latest
// effective time of the SKUs it is made of:
//
//	nanos = VCPU × core + round(MemoryMiB × RAM / 1024) + AcceleratorCount × GPU
//
// with every rate in nano-dollars per unit-hour. It returns false if a part has no rate.
func (c *RateCard) Price(m Machine, capacity api.CapacityType) (float64, time.Time, bool) {
	cpu, okC := c.rates[part{core, m.Family, capacity}]
	mem, okM := c.rates[part{ram, m.Family, capacity}]
	if !okC || !okM {
		return 0, time.Time{}, false
	}
	if m.VCPU < 0 || m.VCPU > catalog.MaxVCPU || m.MemoryMiB < 0 || m.MemoryMiB > catalog.MaxMemoryMiB ||
		m.AcceleratorCount < 0 || m.AcceleratorCount > catalog.MaxGPUs {
		return 0, time.Time{}, false // outside the catalog's bounds the int64 sum could overflow
	}
	// MiB × rate / 1024, rounded, split as whole GiB plus the rest so that no product overflows.
	gib, rest := m.MemoryMiB/1024, m.MemoryMiB%1024
	total := int64(m.VCPU)*cpu.nanosPerHour + gib*mem.nanosPerHour + (rest*mem.nanosPerHour+512)/1024
	effective := later(cpu.effective, mem.effective)
	if m.AcceleratorCount > 0 {
		g, ok := c.rates[part{gpu, m.Accelerator, capacity}]
		if !ok {
			return 0, time.Time{}, false
		}
		total += int64(m.AcceleratorCount) * g.nanosPerHour
		effective = later(effective, g.effective)
	}
	if float64(total)/1e9 > catalog.MaxPricePerHour {
		return 0, time.Time{}, false
	}
	return float64(total) / 1e9, effective, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
