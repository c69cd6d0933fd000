package provisioner

import (
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
)

// unavailableOfferings remembers offerings the cloud refused, for a TTL.
type unavailableOfferings struct {
	mu    sync.Mutex
	clock clock.Clock
	ttl   time.Duration
	until map[api.Offering]time.Time
}

func newUnavailable(clk clock.Clock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: clk, ttl: ttl, until: map[api.Offering]time.Time{}}
}

func (u *unavailableOfferings) mark(o api.Offering) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[o] = u.clock.Now().Add(u.ttl)
}

// apply returns a copy of the catalog with the unavailable offerings marked, and their count.
func (u *unavailableOfferings) apply(c *catalog.Catalog) (*catalog.Catalog, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, t := range u.until {
		if !now.Before(t) {
			delete(u.until, k)
		}
	}
	out := c.Clone()
	n := 0
	for i := range out.Types {
		it := &out.Types[i]
		for j := range it.Offerings {
			o := &it.Offerings[j]
			if _, ok := u.until[api.Offering{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}]; ok {
				o.Unavailable = true
				n++
			}
		}
	}
	return out, n
}
