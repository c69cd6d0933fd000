package provisioner

import (
	"maps"

	"go.uber.org/zap"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator"
)

// addFallbacks adds the record's fallback offerings to the request, in the plan's order, each
// with the labels of the node launched as it (its type, zone and capacity type labels instead of
// the planned offering's). A fallback the catalog does not know is left out: the node could not
// be labelled as the simulation would plan it.
func (c *Controller) addFallbacks(log *zap.Logger, req *cloudprovider.LaunchRequest, r LaunchRecord) {
	if len(r.Fallbacks) == 0 {
		return
	}
	cat := c.currentCatalog()
	planned := r.Offering
	for _, f := range r.Fallbacks {
		ref := f.Offering
		labels, ok := relabel(cat, r.Labels, planned, ref)
		if !ok {
			log.Warn("fallback offering not in the catalog; left out", zap.String(keyFallback, string(f.InstanceType)))
			continue
		}
		if req.FallbackLabels == nil {
			req.FallbackLabels = map[api.Offering]map[string]string{}
		}
		req.Fallbacks = append(req.Fallbacks, ref)
		req.FallbackLabels[ref] = labels
	}
}

// boughtAs returns the record of a node the cloud launched as got, and true when got is not the
// record's offering (the cloud launched a fallback): offering, price, labels and GPU count become
// those of got, so that in-flight accounting plans with the node that is really coming. The price
// is the plan's price of the fallback, else the one the cloud reported, else the catalog's. A
// provider that does not say what it launched (no instance type) leaves the record as it is;
// one that leaves out the zone or capacity type keeps the record's.
func (c *Controller) boughtAs(r LaunchRecord, got api.Offering, reportedPrice float64) (LaunchRecord, bool) {
	planned := r.Offering
	if got.InstanceType == "" {
		return r, false
	}
	if got.Zone == "" {
		got.Zone = planned.Zone
	}
	if got.CapacityType == "" {
		got.CapacityType = planned.CapacityType
	}
	if got == planned {
		return r, false
	}
	cat := c.currentCatalog()
	price := reportedPrice
	for _, f := range r.Fallbacks {
		if f.Offering == got {
			price = f.PricePerHour
		}
	}
	if price <= 0 {
		price, _ = cat.Price(got)
	}
	if labels, ok := relabel(cat, r.Labels, planned, got); ok {
		r.Labels = labels
	} else {
		r.Labels = cloudprovider.WithInstanceTypeLabels(r.Labels, got.InstanceType)
	}
	if it, ok := cat.Type(got.InstanceType); ok && r.GPUs > 0 {
		r.GPUs = it.GPU.Count
	}
	r.Offering, r.PricePerHour = got, price
	return r, true
}

// openedAs returns the record of a node planned onto a capacity reservation that the cloud
// launched on open capacity instead (the reservation was full or gone, or the provider launches
// into none: Instance.CapacityReservation is not the record's), and true: no reservation, no
// reservation label, and the open price (the catalog's, else the one the cloud reported), so that
// the fleet's cost and the reservation's count are what was really bought.
func (c *Controller) openedAs(r LaunchRecord, inst *cloudprovider.Instance) (LaunchRecord, bool) {
	if r.CapacityReservation == "" || inst.CapacityReservation == r.CapacityReservation {
		return r, false
	}
	price, ok := c.currentCatalog().Price(r.Offering)
	if !ok {
		price = inst.PricePerHour
	}
	if _, labelled := r.Labels[api.LabelCapacityReservation]; labelled {
		r.Labels = maps.Clone(r.Labels)
		delete(r.Labels, api.LabelCapacityReservation)
	}
	r.CapacityReservation, r.PricePerHour = "", price
	return r, true
}

// relabel returns the labels of a node planned as from, for the node launched as to.
func relabel(cat *catalog.Catalog, labels map[string]string, from, to api.Offering) (map[string]string, bool) {
	fromLabels, ok := simulator.OfferingLabels(cat, from.InstanceType, from.Zone, from.CapacityType)
	if !ok {
		return nil, false
	}
	toLabels, ok := simulator.OfferingLabels(cat, to.InstanceType, to.Zone, to.CapacityType)
	if !ok {
		return nil, false
	}
	return simulator.WithOfferingLabels(labels, fromLabels, toLabels), true
}
