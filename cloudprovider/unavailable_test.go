package cloudprovider_test

import (
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

var testNow = time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC)

func offering(t, zone string, ct api.CapacityType) api.Offering {
	return api.Offering{InstanceType: api.InstanceTypeName(t), Zone: zone, CapacityType: ct}
}

func TestUnavailableOfferingsTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	u := cloudprovider.NewUnavailableOfferings(clk, 3*time.Minute)
	a, b := offering("g5.xlarge", "us-east-1a", api.Spot), offering("g5.xlarge", "us-east-1b", api.Spot)
	u.MarkUnavailable(a, "InsufficientInstanceCapacity")
	clk.Step(time.Minute)
	u.MarkUnavailable(b, "UnfulfillableCapacity")
	if !u.IsUnavailable(a) || !u.IsUnavailable(b) || u.IsUnavailable(offering("g5.xlarge", "us-east-1a", api.OnDemand)) {
		t.Fatal("a and b must be unavailable, the on-demand offering not")
	}
	clk.Step(2*time.Minute - time.Nanosecond)
	if !u.IsUnavailable(a) {
		t.Error("a was marked a nanosecond less than the TTL ago: still unavailable")
	}
	clk.Step(time.Nanosecond) // a was marked exactly the TTL ago: available again; b 2 minutes ago
	if u.IsUnavailable(a) || !u.IsUnavailable(b) {
		t.Errorf("after 3m: a unavailable %v (want false), b %v (want true)", u.IsUnavailable(a), u.IsUnavailable(b))
	}
	want := []cloudprovider.UnavailableEntry{{Offering: b, Code: "UnfulfillableCapacity", Until: testNow.Add(4 * time.Minute)}}
	if diff := cmp.Diff(want, u.List()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	u.MarkUnavailable(b, "InsufficientInstanceCapacity") // marking again extends and replaces the code
	clk.Step(2 * time.Minute)
	want = []cloudprovider.UnavailableEntry{{Offering: b, Code: "InsufficientInstanceCapacity", Until: testNow.Add(6 * time.Minute)}}
	if diff := cmp.Diff(want, u.List()); diff != "" || !u.IsUnavailable(b) {
		t.Errorf("re-marking must extend the TTL; List (-want +got):\n%s", diff)
	}
}

func TestUnavailableOfferingsListIsSorted(t *testing.T) {
	u := cloudprovider.NewUnavailableOfferings(clocktesting.NewFakeClock(testNow), time.Minute)
	marked := []api.Offering{
		offering("p5.48xlarge", "us-east-1a", api.Spot),
		offering("g5.xlarge", "us-east-1b", api.Spot),
		offering("g5.xlarge", "us-east-1a", api.Spot),
		offering("g5.xlarge", "us-east-1a", api.OnDemand),
	}
	for _, o := range marked {
		u.MarkUnavailable(o, "InsufficientInstanceCapacity")
	}
	var got []api.Offering
	for _, e := range u.List() {
		got = append(got, e.Offering)
	}
	want := []api.Offering{marked[3], marked[2], marked[1], marked[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List order (-want +got):\n%s", diff)
	}
}

func TestUnavailableOfferingsApply(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow)
	u := cloudprovider.NewUnavailableOfferings(clk, time.Minute)
	c := &catalog.Catalog{Name: "t", Zones: []string{"us-east-1a", "us-east-1b"}, Types: []catalog.InstanceType{{
		Name: "g5.xlarge", VCPU: 4, MemoryMiB: 16384,
		Offerings: []catalog.ZonePrice{
			{Zone: "us-east-1a", CapacityType: api.Spot, PricePerHour: 0.4},
			{Zone: "us-east-1a", CapacityType: api.OnDemand, PricePerHour: 1.006},
			{Zone: "us-east-1b", CapacityType: api.Spot, PricePerHour: 0.39, Unavailable: true}, // the source's own mark
		},
	}}}
	flags := func(c *catalog.Catalog) []bool {
		var out []bool
		for _, o := range c.Types[0].Offerings {
			out = append(out, o.Unavailable)
		}
		return out
	}
	u.MarkUnavailable(offering("g5.xlarge", "us-east-1a", api.Spot), "InsufficientInstanceCapacity")
	u.MarkUnavailable(offering("p5.48xlarge", "us-east-1a", api.Spot), "InsufficientInstanceCapacity") // not in c
	got, n := u.Apply(c)
	if n != 1 {
		t.Errorf("Apply marked %d, want 1", n)
	}
	if diff := cmp.Diff([]bool{true, false, true}, flags(got)); diff != "" {
		t.Errorf("Unavailable flags of the copy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, true}, flags(c)); diff != "" {
		t.Errorf("Apply changed the catalog it was given (-want +got):\n%s", diff)
	}
	clk.Step(time.Minute)
	if got, n := u.Apply(c); n != 0 || got.Types[0].Offerings[0].Unavailable {
		t.Errorf("after the TTL Apply marked %d and left %v", n, got.Types[0].Offerings[0].Unavailable)
	}
}
