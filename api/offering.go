package api

import "fmt"

// InstanceTypeName names an instance type, e.g. "g6.xlarge" or "a2-highgpu-1g".
type InstanceTypeName string

// CapacityType is how an offering is bought.
type CapacityType string

const (
	// OnDemand capacity is bought at the list price and is not reclaimed.
	OnDemand CapacityType = "on-demand"
	// Spot capacity is cheaper and may be reclaimed by the cloud.
	Spot CapacityType = "spot"
)

// Valid reports whether c is one of the known capacity types.
func (c CapacityType) Valid() bool { return c == OnDemand || c == Spot }

// Offering is one way to buy a node: an instance type in a zone at a capacity type. It is the one
// key of prices, launches, fallbacks and the cache of unavailable offerings.
type Offering struct {
	InstanceType InstanceTypeName `json:"instanceType"`
	Zone         string           `json:"zone"`
	CapacityType CapacityType     `json:"capacityType"`
}

// String renders the offering as type/zone/capacity-type, e.g. "g6.xlarge/us-east-1a/spot".
func (o Offering) String() string {
	return fmt.Sprintf("%s/%s/%s", o.InstanceType, o.Zone, o.CapacityType)
}

// Less orders offerings by instance type, zone, then capacity type.
func (o Offering) Less(p Offering) bool {
	if o.InstanceType != p.InstanceType {
		return o.InstanceType < p.InstanceType
	}
	if o.Zone != p.Zone {
		return o.Zone < p.Zone
	}
	return o.CapacityType < p.CapacityType
}

// PricedOffering is an offering and what it costs per hour.
type PricedOffering struct {
	Offering
	PricePerHour float64 `json:"pricePerHour"`
	// CapacityReservation, on an on-demand offering, is the capacity reservation (a policy pool's
	// reservations[].id: an EC2 ODCR ID, a Compute Engine reservation name) the node is launched into, priced at the reservation's
	// effective price; empty for open capacity.
	CapacityReservation string `json:"capacityReservation,omitempty"`
}
