package provisioner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Reservation windows from the cloud: a reservation the policy lists without startsAt or endsAt
// takes them from the cloud when its provider reports them (cloudprovider.ReservationReader: an
// EC2 Capacity Block's dates), so that a block listed by ID alone is still planned onto only
// while it holds its capacity, and drained before it ends. What the policy sets wins. The cloud
// is asked at most every reservationWindowsRefresh, and again when the reservations to ask for
// change; a failed read keeps the windows last read, and is logged.

// reservationWindowsRefresh is how long the windows read from the cloud are used.
const reservationWindowsRefresh = 10 * time.Minute

// windowCache holds the windows last read and when, for which reservation IDs.
type windowCache struct {
	mu      sync.Mutex
	at      time.Time
	ids     string
	windows map[string]cloudprovider.ReservationWindow
}

// withCloudReservations returns pol with the windows the cloud reports for its reservations that
// lack a start or an end; pol itself when there is nothing to fill.
func (c *Controller) withCloudReservations(ctx context.Context, now time.Time, pol *policy.CostPolicy) *policy.CostPolicy {
	rr, ok := c.provider.(cloudprovider.ReservationReader)
	if !ok || pol == nil {
		return pol
	}
	ids := reservationsWithoutWindow(pol)
	if len(ids) == 0 {
		return pol
	}
	w := &c.windows
	w.mu.Lock()
	defer w.mu.Unlock()
	if key := strings.Join(ids, ","); key != w.ids || now.Sub(w.at) >= reservationWindowsRefresh {
		got, err := rr.ReservationWindows(ctx, ids)
		w.ids, w.at = key, now
		if err != nil {
			c.log.Warn("reading the capacity reservations' windows; the last read stay in use", zap.Strings("reservations", ids), zap.Error(err))
		} else {
			if len(got) > 0 {
				c.log.Info("capacity reservation windows read from the cloud", zap.Int("reservations", len(got)))
			}
			w.windows = got
		}
	}
	return withReservationWindows(pol, w.windows)
}

// reservationsWithoutWindow lists, sorted, the IDs of the policy's reservations without startsAt
// or endsAt.
func reservationsWithoutWindow(pol *policy.CostPolicy) []string {
	var ids []string
	for _, pl := range pol.Pools {
		for _, r := range pl.Reservations {
			if r.StartsAt == nil || r.EndsAt == nil {
				ids = append(ids, r.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// withReservationWindows returns a copy of pol whose reservations without startsAt or endsAt take
// them from windows (zero times fill nothing); pol itself when none changes. pol is not modified.
func withReservationWindows(pol *policy.CostPolicy, windows map[string]cloudprovider.ReservationWindow) *policy.CostPolicy {
	var out *policy.CostPolicy
	for i, pl := range pol.Pools {
		for j, r := range pl.Reservations {
			win, ok := windows[r.ID]
			fillStart := ok && r.StartsAt == nil && !win.Start.IsZero()
			fillEnd := ok && r.EndsAt == nil && !win.End.IsZero()
			if !fillStart && !fillEnd {
				continue
			}
			if out == nil {
				cp := *pol
				cp.Pools = slices.Clone(pol.Pools)
				out = &cp
			}
			// (The pool's reservations are still pol's until cloned.)
			if &out.Pools[i].Reservations[0] == &pol.Pools[i].Reservations[0] {
				out.Pools[i].Reservations = slices.Clone(pl.Reservations)
			}
			res := &out.Pools[i].Reservations[j]
			if fillStart {
				res.StartsAt = &metav1.Time{Time: win.Start}
			}
			if fillEnd {
				res.EndsAt = &metav1.Time{Time: win.End}
			}
		}
	}
	if out == nil {
		return pol
	}
	return out
}
