package simulator_test

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
)

// TestDisruptKeepsOnDemandBase: consolidation replaces an on-demand GPU node by spot at half the
// price (TestDisruptOnDemandToSpot), unless its pool's mix needs it on-demand; a second
// on-demand node above the base with spotAbove 100 may still go to spot.
func TestDisruptKeepsOnDemandBase(t *testing.T) {
	withMix := func(f *fleet) {
		f.pol = strings.Replace(f.pol, "  instanceFamilies: [g6, g5]\n", "  instanceFamilies: [g6, g5]\n  mix: {onDemandBase: 1, spotAbove: 100}\n", 1)
	}
	f := newFleet(t)
	withMix(f)
	f.node("od", "gpu", "g6.xlarge", api.OnDemand)
	f.pod("infer", "od").CPU("2").Mem("8Gi").GPU(1)
	p := f.plan()
	if got := keptAs(p, "od"); got != api.KeepPurchasingMix {
		t.Errorf("the pool's only on-demand node, base 1: kept as %q, want %s; actions %+v", got, api.KeepPurchasingMix, p.Actions)
	}

	f = newFleet(t)
	withMix(f)
	f.node("od-1", "gpu", "g6.xlarge", api.OnDemand)
	f.pod("infer-1", "od-1").CPU("2").Mem("8Gi").GPU(1)
	f.node("od-2", "gpu", "g6.xlarge", api.OnDemand)
	f.pod("infer-2", "od-2").CPU("2").Mem("8Gi").GPU(1)
	p = f.plan()
	replaced := 0
	for _, name := range []string{"od-1", "od-2"} {
		if a := actionOf(p, name); a != nil && a.Replacement != nil && a.Replacement.CapacityType == api.Spot {
			replaced++
		} else if got := keptAs(p, name); got != api.KeepPurchasingMix {
			t.Errorf("%s kept as %q", name, got)
		}
	}
	if replaced != 1 {
		t.Errorf("%d of two on-demand nodes replaced by spot, want 1 (base 1): %+v", replaced, p.Actions)
	}
}
