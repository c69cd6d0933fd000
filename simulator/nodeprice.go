package simulator

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
)

// nodePrice is what a running node is, read from its labels and the catalog.
type nodePrice struct {
	offering api.Offering
	// price is the offering's catalog $/h, 0 when the type or offering is unknown.
	price float64
	// gpus is the node's GPU count (the GPU operator's or Tiler's label, else the catalog's).
	gpus int
	// model and memMiB describe one GPU (the catalog's, else the node's labels).
	model  string
	memMiB int64
}

// priceNode reads the node's offering, price and GPUs. types indexes the catalog's types by
// label (typesByLabel).
func priceNode(types map[string]*catalog.InstanceType, cat *catalog.Catalog, n *corev1.Node) nodePrice {
	l := n.Labels
	it := types[CatalogTypeOf(l)]
	np := nodePrice{offering: api.Offering{InstanceType: api.InstanceTypeName(CatalogTypeOf(l)), Zone: l[LabelZone],
		CapacityType: api.CapacityType(l[api.LabelCapacityType])}, model: l[api.LabelGPUModel]}
	for _, k := range []string{api.LabelGPUCountNVIDIA, api.LabelGPUCount} {
		if v, err := strconv.Atoi(l[k]); err == nil && v > 0 {
			np.gpus = v
			break
		}
	}
	if v, err := strconv.ParseInt(l[api.LabelGPUMemory], 10, 64); err == nil {
		np.memMiB = v
	}
	if it == nil {
		return np
	}
	np.offering.InstanceType = it.Name
	if np.gpus == 0 {
		np.gpus = it.GPU.Count
	}
	np.model, np.memMiB = it.GPU.Model, it.GPU.MemoryMiB
	np.price, _ = cat.Price(np.offering)
	return np
}
