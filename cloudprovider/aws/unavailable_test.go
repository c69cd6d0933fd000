package aws

import (
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
)

func TestUnavailableOfferingsTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	u := NewUnavailableOfferings(clk, 3*time.Minute)
	a, b := ref("g5.xlarge", "us-east-1a", api.Spot), ref("g5.xlarge", "us-east-1b", api.Spot)
	u.MarkUnavailable(a, "InsufficientInstanceCapacity")
	clk.Step(time.Minute)
	u.MarkUnavailable(b, "UnfulfillableCapacity")
	if !u.IsUnavailable(a) || !u.IsUnavailable(b) || u.IsUnavailable(ref("g5.xlarge", "us-east-1a", api.OnDemand)) {
		t.Fatal("a and b must be unavailable, the on-demand offering not")
	}
	clk.Step(2 * time.Minute) // a was marked 3 minutes ago: expired; b 2 minutes ago
	if u.IsUnavailable(a) || !u.IsUnavailable(b) {
		t.Errorf("after 3m: a unavailable %v (want false), b %v (want true)", u.IsUnavailable(a), u.IsUnavailable(b))
	}
	want := []UnavailableEntry{{Offering: b, Code: "UnfulfillableCapacity", Until: testNow.Add(4 * time.Minute)}}
	if diff := cmp.Diff(want, u.List()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	u.MarkUnavailable(b, "InsufficientInstanceCapacity") // marking again extends
	clk.Step(2 * time.Minute)
	if !u.IsUnavailable(b) {
		t.Error("re-marking must extend the TTL")
	}
}

func TestUnavailableOfferingsApply(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	u := NewUnavailableOfferings(clk, time.Minute)
	c := &catalog.Catalog{Name: "t", Zones: []string{"us-east-1a", "us-east-1b"}, Types: []catalog.InstanceType{{
		Name: "g5.xlarge", VCPU: 4, MemoryMiB: 16384,
		Offerings: []catalog.ZonePrice{
			{Zone: "us-east-1a", CapacityType: api.Spot, PricePerHour: 0.4},
			{Zone: "us-east-1a", CapacityType: api.OnDemand, PricePerHour: 1.006},
			{Zone: "us-east-1b", CapacityType: api.Spot, PricePerHour: 0.39, Unavailable: true}, // stale mark
		},
	}}}
	u.MarkUnavailable(ref("g5.xlarge", "us-east-1a", api.Spot), "InsufficientInstanceCapacity")
	if n := u.Apply(c); n != 1 {
		t.Errorf("Apply marked %d, want 1", n)
	}
	got := []bool{c.Types[0].Offerings[0].Unavailable, c.Types[0].Offerings[1].Unavailable, c.Types[0].Offerings[2].Unavailable}
	if diff := cmp.Diff([]bool{true, false, false}, got); diff != "" {
		t.Errorf("Unavailable flags (-want +got):\n%s", diff)
	}
	clk.Step(time.Minute)
	if n := u.Apply(c); n != 0 || c.Types[0].Offerings[0].Unavailable {
		t.Errorf("after the TTL Apply marked %d and left %v", n, c.Types[0].Offerings[0].Unavailable)
	}
}
