package provisioner

import (
	"maps"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
)

// unavailableOfferings remembers offerings the cloud refused, for a TTL. Launches and the
// interruption loop mark offerings as they happen; each batch reads a snapshot into its State.
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

// snapshot returns the offerings still unavailable and until when, forgetting those whose TTL
// has passed.
func (u *unavailableOfferings) snapshot() map[api.Offering]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, t := range u.until {
		if !now.Before(t) {
			delete(u.until, k)
		}
	}
	return maps.Clone(u.until)
}

// withUnavailable returns a copy of the catalog with the offerings unavailable at now marked, and
// their count.
func withUnavailable(c *catalog.Catalog, until map[api.Offering]time.Time, now time.Time) (*catalog.Catalog, int) {
	out := c.Clone()
	n := 0
	for i := range out.Types {
		it := &out.Types[i]
		for j := range it.Offerings {
			o := &it.Offerings[j]
			if t, ok := until[api.Offering{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}]; ok && now.Before(t) {
				o.Unavailable = true
				n++
			}
		}
	}
	return out, n
}
