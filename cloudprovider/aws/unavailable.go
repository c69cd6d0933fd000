package aws

import (
	"sort"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
)

// UnavailableOfferings remembers offerings that EC2 recently refused, each for a TTL, so that the
// controller stops planning onto them and Create stops asking for them. It is safe for concurrent
// use. (No general cache existed in cloudprovider/ when this was written; it can move there
// unchanged, as nothing in it is AWS-specific.)
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[api.Offering]UnavailableEntry
}

// UnavailableEntry is why and until when an offering is unavailable.
type UnavailableEntry struct {
	Offering api.Offering
	// Code is the cloud's error code, e.g. InsufficientInstanceCapacity.
	Code  string
	Until time.Time
}

// NewUnavailableOfferings returns an empty cache whose entries live for ttl on clk.
func NewUnavailableOfferings(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{clock: clk, ttl: ttl, entries: map[api.Offering]UnavailableEntry{}}
}

// MarkUnavailable records that o was refused with code; marking it again extends the TTL.
func (u *UnavailableOfferings) MarkUnavailable(o api.Offering, code string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries[o] = UnavailableEntry{Offering: o, Code: code, Until: u.clock.Now().Add(u.ttl)}
}

// IsUnavailable reports whether o was refused less than the TTL ago.
func (u *UnavailableOfferings) IsUnavailable(o api.Offering) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.entries[o]
	if ok && !u.clock.Now().Before(e.Until) {
		delete(u.entries, o)
		return false
	}
	return ok
}

// List returns the live entries sorted by type, zone and capacity type, dropping expired ones.
func (u *UnavailableOfferings) List() []UnavailableEntry {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	out := make([]UnavailableEntry, 0, len(u.entries))
	for k, e := range u.entries {
		if !now.Before(e.Until) {
			delete(u.entries, k)
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return lessRef(out[i].Offering, out[j].Offering) })
	return out
}

// Apply sets Unavailable on the catalog offerings that are in the cache and clears it on the
// others, so that one call per planning cycle brings a catalog copy up to date. It returns how
// many offerings it marked. Callers pass a Clone of a shared catalog.
func (u *UnavailableOfferings) Apply(c *catalog.Catalog) int {
	live := map[api.Offering]bool{}
	for _, e := range u.List() {
		live[e.Offering] = true
	}
	marked := 0
	for i := range c.Types {
		t := &c.Types[i]
		for j := range t.Offerings {
			o := &t.Offerings[j]
			o.Unavailable = live[api.Offering{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType}]
			if o.Unavailable {
				marked++
			}
		}
	}
	return marked
}

func lessRef(a, b api.Offering) bool {
	if a.InstanceType != b.InstanceType {
		return a.InstanceType < b.InstanceType
	}
	if a.Zone != b.Zone {
		return a.Zone < b.Zone
	}
	return a.CapacityType < b.CapacityType
}
