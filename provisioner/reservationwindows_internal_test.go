package provisioner

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// windowCloud reports reservation windows, counting its calls; err fails them.
type windowCloud struct {
	cloudprovider.Provider
	windows map[string]cloudprovider.ReservationWindow
	err     error
	calls   int
}

func (c *windowCloud) ReservationWindows(_ context.Context, ids []string) (map[string]cloudprovider.ReservationWindow, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	out := map[string]cloudprovider.ReservationWindow{}
	for _, id := range ids {
		if w, ok := c.windows[id]; ok {
			out[id] = w
		}
	}
	return out, nil
}

// TestReservationWindowsFromTheCloud: a reservation listed without dates takes the cloud's; what
// the policy sets wins; the policy read is not changed; a policy with nothing to fill comes back
// as it is. The cloud is asked once per refresh period (and when the reservations change), and a
// failed read keeps the windows last read.
func TestReservationWindowsFromTheCloud(t *testing.T) {
	start := time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC)
	end := start.Add(7 * 24 * time.Hour)
	pol, err := policy.Parse([]byte(`apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: train
  instanceTypes: [p5.48xlarge]
  reservations:
  - {id: cr-0block, instanceType: p5.48xlarge, zone: us-east-1a, count: 2, pricePerHour: 0, drainBefore: 2h}
  - {id: cr-0own, instanceType: p5.48xlarge, zone: us-east-1b, count: 1, pricePerHour: 0, endsAt: "2026-12-10T00:00:00Z"}
  - {id: cr-0odcr, instanceType: p5.48xlarge, zone: us-east-1c, count: 1, pricePerHour: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	cloud := &windowCloud{windows: map[string]cloudprovider.ReservationWindow{
		"cr-0block": {Start: start, End: end},
		"cr-0own":   {Start: start, End: end.Add(time.Hour)},
	}}
	c := &Controller{provider: cloud, log: zaptest.NewLogger(t)}
	now := start.Add(-time.Hour)
	got := c.withCloudReservations(context.Background(), now, pol)
	rs := got.Pools[0].Reservations
	if rs[0].StartsAt == nil || !rs[0].StartsAt.Time.Equal(start) || rs[0].EndsAt == nil || !rs[0].EndsAt.Time.Equal(end) {
		t.Errorf("cr-0block: %v – %v, want the cloud's %v – %v", rs[0].StartsAt, rs[0].EndsAt, start, end)
	}
	if from, _ := rs[0].DrainFrom(); !from.Equal(end.Add(-2 * time.Hour)) {
		t.Errorf("cr-0block drains from %v, want the policy's 2h before the cloud's end", from)
	}
	if !rs[1].EndsAt.Time.Equal(time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)) || rs[1].StartsAt == nil || !rs[1].StartsAt.Time.Equal(start) {
		t.Errorf("cr-0own: %v – %v, want the cloud's start and the policy's end", rs[1].StartsAt, rs[1].EndsAt)
	}
	if rs[2].StartsAt != nil || rs[2].EndsAt != nil {
		t.Errorf("cr-0odcr, which the cloud gives no window: %v – %v", rs[2].StartsAt, rs[2].EndsAt)
	}
	if r := pol.Pools[0].Reservations[0]; r.StartsAt != nil || r.EndsAt != nil {
		t.Errorf("the policy read was changed: %+v", r)
	}
	// Within the refresh period: no second read.
	c.withCloudReservations(context.Background(), now.Add(time.Minute), pol)
	if cloud.calls != 1 {
		t.Errorf("%d reads within the refresh period, want 1", cloud.calls)
	}
	// After it, a failed read keeps the windows.
	cloud.err = errors.New("throttled")
	got = c.withCloudReservations(context.Background(), now.Add(reservationWindowsRefresh), pol)
	if cloud.calls != 2 || got.Pools[0].Reservations[0].EndsAt == nil {
		t.Errorf("%d reads; after a failed read cr-0block ends %v, want the last read kept", cloud.calls, got.Pools[0].Reservations[0].EndsAt)
	}
	// Nothing to fill: the same policy, and no read.
	full := *pol
	full.Pools = []policy.Pool{pol.Pools[0]}
	full.Pools[0].Reservations = []policy.Reservation{pol.Pools[0].Reservations[1]}
	full.Pools[0].Reservations[0].StartsAt = &metav1.Time{Time: start}
	if got := c.withCloudReservations(context.Background(), now, &full); got != &full || cloud.calls != 2 {
		t.Errorf("a policy with every window set: got a copy (%v) or read the cloud (%d reads)", got != &full, cloud.calls)
	}
	// A provider that does not read windows leaves the policy as it is.
	plain := &Controller{provider: struct{ cloudprovider.Provider }{}, log: zaptest.NewLogger(t)}
	if got := plain.withCloudReservations(context.Background(), now, pol); got != pol {
		t.Error("a provider without windows changed the policy")
	}
}
