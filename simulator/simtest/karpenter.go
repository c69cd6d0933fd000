package simtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// KarpenterCatalog reproduces the instance types of Karpenter's scheduling benchmark: 400 types
// with 1–400 vCPU and 2 GiB per vCPU, each offered as spot in two zones and on-demand in three,
// priced 0.1×vCPU + 0.1×GiB. (Karpenter's fake cloud gives spot the same price formula.)
func KarpenterCatalog() *catalog.Catalog {
	zones := []string{"test-zone-1", "test-zone-2", "test-zone-3"}
	c := &catalog.Catalog{Name: "karpenter-bench", Provider: "aws", Region: "test-region", Zones: zones}
	for cpu := 1; cpu <= 400; cpu++ {
		mem := int64(cpu) * 2
		price := 0.1*float64(cpu) + 0.1*float64(mem)
		it := catalog.InstanceType{Name: api.InstanceTypeName(fmt.Sprintf("bench-%d", cpu)), VCPU: cpu,
			MemoryMiB: mem * 1024, Arch: "amd64", MaxPods: catalog.DefaultMaxPods}
		for _, z := range zones[:2] {
			it.Offerings = append(it.Offerings, catalog.ZonePrice{Zone: z, CapacityType: api.Spot, PricePerHour: price})
		}
		for _, z := range zones {
			it.Offerings = append(it.Offerings, catalog.ZonePrice{Zone: z, CapacityType: api.OnDemand, PricePerHour: price})
		}
		c.Types = append(c.Types, it)
	}
	c.Sort()
	return c
}

// KarpenterPods reproduces the pods of Karpenter's scheduling benchmark: n pods split evenly into
// generic pods, zonal topology spread, hostname topology spread, zonal self-affinity and hostname
// anti-affinity groups, with CPU 100m–1.5 and memory 100Mi–4Gi drawn from a seeded source.
func KarpenterPods(n int, seed uint64) *snapshot.Snapshot {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := &snapshot.Snapshot{}
	kinds := []func(*PodBuilder) *PodBuilder{
		func(b *PodBuilder) *PodBuilder { return b.Label("app", "generic") },
		func(b *PodBuilder) *PodBuilder {
			return b.Label("app", "zonal-spread").Spread("topology.kubernetes.io/zone", 1, true)
		},
		func(b *PodBuilder) *PodBuilder {
			return b.Label("app", "host-spread").Spread("kubernetes.io/hostname", 1, true)
		},
		func(b *PodBuilder) *PodBuilder {
			return b.Label("app", "zonal-affinity").Affinity("topology.kubernetes.io/zone", "zonal-affinity")
		},
		func(b *PodBuilder) *PodBuilder {
			return b.Label("app", "host-anti").AntiAffinity("kubernetes.io/hostname", "host-anti")
		},
	}
	for i := 0; i < n; i++ {
		cpu := 100 + r.IntN(1401)         // milli-CPU 100..1500
		mem := 100 + r.Int64N(4096-100+1) // MiB 100..4096
		b := Pod(fmt.Sprintf("pod-%05d", i)).
			Req("cpu", resource.NewMilliQuantity(int64(cpu), resource.DecimalSI).String()).
			Req("memory", resource.NewQuantity(mem*1024*1024, resource.BinarySI).String())
		s.Pods = append(s.Pods, kinds[i%len(kinds)](b).Obj())
	}
	return s
}
