package cloudprovider

import (
	"slices"
	"time"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
)

// maxUnavailableOfferings bounds the cache. It is far above what one TTL can collect (a launch
// names a few dozen offerings); should it ever be reached, the least recently used offering is
// forgotten early, which costs one more launch attempt the cloud answers unavailable again.
const maxUnavailableOfferings = 10000

// UnavailableOfferings remembers offerings that are unavailable — the cloud would not sell them
// now (insufficient capacity, an account limit), took them back (a spot interruption) or never
// delivered them (a launch that did not register) — each for a TTL, so that plans leave them out
// and launches stop asking for them. The controller keeps one for planning; the AWS provider keeps
// one to skip offerings in CreateFleet. It is safe for concurrent use.
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration
	// entries maps api.Offering to UnavailableEntry.
	entries *cache.LRUExpireCache
}

// UnavailableEntry is why and until when an offering is unavailable.
type UnavailableEntry struct {
	Offering api.Offering
	// Code is the cloud's error code, e.g. InsufficientInstanceCapacity, or the controller's reason,
	// e.g. registration-timeout.
	Code string
	// Until is when the offering becomes available again: the last mark plus the TTL.
	Until time.Time
}

// NewUnavailableOfferings returns an empty cache whose entries live for ttl on clk.
func NewUnavailableOfferings(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{clock: clk, ttl: ttl,
		entries: cache.NewLRUExpireCacheWithClock(maxUnavailableOfferings, clk)}
}

// MarkUnavailable records that o is unavailable, with code saying why; marking it again replaces
// the code and restarts the TTL.
func (u *UnavailableOfferings) MarkUnavailable(o api.Offering, code string) {
	u.entries.Add(o, UnavailableEntry{Offering: o, Code: code, Until: u.clock.Now().Add(u.ttl)}, u.ttl)
}

// IsUnavailable reports whether o was marked less than the TTL ago.
func (u *UnavailableOfferings) IsUnavailable(o api.Offering) bool {
	_, ok := u.get(o)
	return ok
}

// get returns o's live entry.
func (u *UnavailableOfferings) get(o api.Offering) (UnavailableEntry, bool) {
	v, ok := u.entries.Get(o)
	if !ok {
		return UnavailableEntry{}, false
	}
	e := v.(UnavailableEntry)
	// The library keeps an entry up to and including its expiry instant; the offering is available
	// again at Until, a full TTL after the mark, not one tick later.
	if !u.clock.Now().Before(e.Until) {
		return UnavailableEntry{}, false
	}
	return e, true
}

// List returns the live entries sorted by type, zone and capacity type.
func (u *UnavailableOfferings) List() []UnavailableEntry {
	var out []UnavailableEntry
	for _, k := range u.entries.Keys() {
		if e, ok := u.get(k.(api.Offering)); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b UnavailableEntry) int { return compareOfferings(a.Offering, b.Offering) })
	return out
}

// Apply returns a copy of c with Unavailable set on the offerings in the cache, and how many it
// set, so that one call per planning cycle brings the plan's catalog up to date without touching
// the shared one. Marks c already has are kept.
func (u *UnavailableOfferings) Apply(c *catalog.Catalog) (*catalog.Catalog, int) {
	return MarkCatalog(c, u.List(), u.clock.Now())
}

// MarkCatalog returns a copy of c with Unavailable set on the offerings of the entries still
// unavailable at now, and how many it set; marks c already has are kept. It is Apply over a list
// of entries, for a decision made on a copy of them (the controller's Decide).
func MarkCatalog(c *catalog.Catalog, entries []UnavailableEntry, now time.Time) (*catalog.Catalog, int) {
	live := map[api.Offering]bool{}
	for _, e := range entries {
		if now.Before(e.Until) {
			live[e.Offering] = true
		}
	}
	out := c.Clone()
	n := 0
	for i := range out.Types {
		t := &out.Types[i]
		for j := range t.Offerings {
			o := &t.Offerings[j]
			if live[api.Offering{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType}] {
				o.Unavailable = true
				n++
			}
		}
	}
	return out, n
}
