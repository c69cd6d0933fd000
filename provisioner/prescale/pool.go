package prescale

import (
	"math"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/forecast"
)

// poolFor returns the capacity bounds of the pool a workload's pods are bought from: the first
// pool the template's nodeSelector names (tiler.dev/pool) or whose labels it asks for all of.
// MaxGPUs is the pool's limits.maxGPUs; the budget is the smaller of the pool's
// limits.maxPricePerHour and the policy budget, priced at the cheapest GPU the pool may buy (from
// the catalog, when the pre-scaler has one). The boot time is the pool's observed one (SetBootTimes),
// else the configured one. Without a
// matching pool only the policy budget applies. The bounds cap the workload's own target: the
// simulation still enforces every pool limit and the budget across workloads when it plans.
func (p *ForecastPrescaler) poolFor(pools []policy.Pool, budget *policy.Budget, t *corev1.PodTemplateSpec) forecast.Pool {
	return poolBounds(pools, budget, t, p.cfg.BootTime, p.bootTimes, p.cfg.Catalog)
}

// poolBounds is poolFor with the configured boot time, the observed boot times (nil: none) and the
// catalog as arguments.
func poolBounds(pools []policy.Pool, budget *policy.Budget, t *corev1.PodTemplateSpec, boot time.Duration,
	bootTimes func(pool string) (time.Duration, bool), cat *catalog.Catalog) forecast.Pool {
	out := forecast.Pool{BootTime: boot}
	var pool *policy.Pool
	for i := range pools {
		if selectsPool(t.Spec.NodeSelector, &pools[i]) {
			pool = &pools[i]
			break
		}
	}
	if pool != nil && bootTimes != nil {
		if d, ok := bootTimes(pool.Name); ok {
			out.BootTime = d
		}
	}
	if budget != nil {
		out.BudgetPerHour = budget.MaxPricePerHour
	}
	if pool != nil {
		if pool.Limits.MaxGPUs != nil && *pool.Limits.MaxGPUs > 0 {
			out.MaxGPUs = *pool.Limits.MaxGPUs
		}
		if b := pool.Limits.MaxPricePerHour; b != nil && *b > 0 && (out.BudgetPerHour == 0 || *b < out.BudgetPerHour) {
			out.BudgetPerHour = *b
		}
	}
	if out.BudgetPerHour > 0 && cat != nil {
		out.PricePerGPUHour = cheapestGPUHour(cat, pool)
	}
	return out
}

// selectsPool reports whether a nodeSelector lands on the pool's nodes.
func selectsPool(sel map[string]string, pl *policy.Pool) bool {
	if name, ok := sel[api.LabelPool]; ok {
		return name == pl.Name
	}
	if len(pl.Labels) == 0 {
		return false
	}
	for k, v := range pl.Labels {
		if sel[k] != v {
			return false
		}
	}
	return true
}

// cheapestGPUHour is the lowest price of one GPU-hour among the GPU types the pool may buy (every
// GPU type of the catalog when pool is nil); 0 when there is none.
func cheapestGPUHour(cat *catalog.Catalog, pool *policy.Pool) float64 {
	best := math.Inf(1)
	for i := range cat.Types {
		it := &cat.Types[i]
		if it.GPU.Count == 0 || !poolAllows(pool, it) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Unavailable || o.PricePerHour <= 0 || pool != nil && !pool.AllowsCapacityType(o.CapacityType) {
				continue
			}
			if pool != nil && len(pool.Zones) > 0 && !hasString(pool.Zones, o.Zone) {
				continue
			}
			best = math.Min(best, o.PricePerHour/float64(it.GPU.Count))
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

func poolAllows(pool *policy.Pool, it *catalog.InstanceType) bool {
	if pool == nil {
		return true
	}
	if len(pool.InstanceTypes) > 0 {
		for _, n := range pool.InstanceTypes {
			if n == it.Name {
				return true
			}
		}
		return false
	}
	if len(pool.InstanceFamilies) > 0 {
		fam := string(it.Name)
		if i := strings.IndexAny(fam, ".-"); i > 0 {
			fam = fam[:i]
		}
		return hasString(pool.InstanceFamilies, fam)
	}
	return true
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
