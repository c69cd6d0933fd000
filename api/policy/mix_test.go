package policy

import (
	"os"
	"testing"
	"time"
)

// mixBadPolicies are the expected errors of the purchasing-mix bad files (TestBadPolicies).
var mixBadPolicies = map[string]string{
	"mix-spot-above.bad.yaml":                "policy: pools[0].mix.spotAbove 120 must be a percentage in 0..100",
	"mix-base-spot-only.bad.yaml":            "policy: pools[0].mix.onDemandBase needs on-demand capacity, but the pool's capacityTypes allow only [spot]",
	"mix-base-max-nodes.bad.yaml":            "policy: pools[0].mix.onDemandBase 3 exceeds limits.maxNodes 2",
	"mix-unknown-field.bad.yaml":             `unknown field "pools[0].mix.onDemandBaseCapacity"`,
	"mix-diversity.bad.yaml":                 "policy: pools[0].mix.spotDiversity -2 must be in 0..100",
	"reservation-count.bad.yaml":             "policy: pools[0].reservations[0].count 0 must be in 1..100000",
	"reservation-price.bad.yaml":             "policy: pools[0].reservations[0].pricePerHour -0.1 must be in 0..1e+09",
	"reservation-id.bad.yaml":                "policy: pools[0].reservations[0].id must be set",
	"reservation-duplicate.bad.yaml":         `policy: pools[1].reservations[0].id "cr-0123" is already listed at pools[0].reservations[0]`,
	"reservation-zone.bad.yaml":              `policy: pools[0].reservations[0].zone "us-east-1a" is not among the pool's zones`,
	"reservation-spot-pool.bad.yaml":         "policy: pools[0].reservations[0]: a reservation is on-demand capacity, but pools[0].capacityTypes allow only [spot]",
	"reservation-ends-before-start.bad.yaml": "policy: pools[0].reservations[0].endsAt 2026-12-07T11:30:00Z must be after startsAt 2026-12-14T11:30:00Z",
	"reservation-drain.bad.yaml":             "policy: pools[0].reservations[0].drainBefore -1h0m0s must be positive",
	"budget-reservation-ending.bad.yaml":     `policy: pools[0].disruption.budgets[0].reasons[0]: "ReservationEnding" must be Empty, Underutilized, Drifted or Expired: the nodes of an ending reservation go whatever a budget says`,
}

func TestMixGoodPolicy(t *testing.T) {
	b, err := os.ReadFile("../../testdata/config/policy-mix.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	web := p.Pools[0]
	if web.Mix == nil || web.Mix.OnDemandBase != 2 || web.Mix.SpotAbovePercent() != 75 || web.Mix.SpotDiversity != 3 {
		t.Errorf("mix = %+v", web.Mix)
	}
	if len(web.Reservations) != 2 || web.Reservations[1].PricePerHour != 0.22 || web.Reservations[0].Count != 4 {
		t.Errorf("reservations = %+v", web.Reservations)
	}
	if web.Reservations[0].EndsAt != nil {
		t.Errorf("an ODCR without an end: endsAt %v", web.Reservations[0].EndsAt)
	}
	// The capacity block: plannable from its start until 90 minutes before its end.
	block := &p.Pools[2].Reservations[0]
	start := time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC)
	end := start.Add(7 * 24 * time.Hour)
	if from, ok := block.DrainFrom(); !ok || !from.Equal(end.Add(-90*time.Minute)) {
		t.Errorf("drain from %v (%v), want 90m before %v", from, ok, end)
	}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{{start.Add(-time.Second), false}, {start, true}, {end.Add(-90*time.Minute - time.Second), true}, {end.Add(-90 * time.Minute), false}, {end, false}} {
		if got := block.Plannable(c.at); got != c.want {
			t.Errorf("plannable at %s: %v, want %v", c.at.Format(time.RFC3339), got, c.want)
		}
	}
	// The default drain is an hour.
	block.DrainBefore = nil
	if from, _ := block.DrainFrom(); !from.Equal(end.Add(-DefaultReservationDrainBefore)) {
		t.Errorf("default drain from %v, want an hour before %v", from, end)
	}
}

func TestOnDemandNeeded(t *testing.T) {
	pct := func(v int) *int { return &v }
	cases := []struct {
		mix   *Mix
		total int
		want  int
	}{
		{nil, 5, 0},
		{&Mix{OnDemandBase: 1, SpotAbove: pct(100)}, 0, 0},
		{&Mix{OnDemandBase: 1, SpotAbove: pct(100)}, 1, 1},
		{&Mix{OnDemandBase: 1, SpotAbove: pct(100)}, 4, 1},
		{&Mix{OnDemandBase: 3}, 2, 2},                     // fewer nodes than the base: all on-demand
		{&Mix{OnDemandBase: 2, SpotAbove: pct(75)}, 7, 4}, // 2 + ceil(5 × 25%)
		{&Mix{SpotAbove: pct(50)}, 3, 2},                  // ceil(1.5)
		{&Mix{SpotAbove: pct(0)}, 3, 3},
	}
	for _, c := range cases {
		if got := c.mix.OnDemandNeeded(c.total); got != c.want {
			t.Errorf("%+v.OnDemandNeeded(%d) = %d, want %d", c.mix, c.total, got, c.want)
		}
	}
}
