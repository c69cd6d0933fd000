package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
)

// FuzzParse checks that Parse never panics and that a policy it accepts is valid and means the
// same when written back: limits non-negative, minNodes within maxNodes, prices finite, and the
// JSON form parsing to the same policy.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/config/*.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 32<<10 {
			t.Skip("input too large")
		}
		p, err := Parse(data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted policy fails Validate: %v", err)
		}
		for i, pl := range p.Pools {
			l := pl.Limits
			for _, v := range []*int{l.MaxNodes, l.MaxVCPU, l.MaxGPUs} {
				if v != nil && *v < 0 {
					t.Fatalf("pools[%d]: negative limit accepted: %+v", i, l)
				}
			}
			if v := l.MaxPricePerHour; v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				t.Fatalf("pools[%d]: maxPricePerHour %v accepted", i, *v)
			}
			if pl.MinNodes < 0 || l.MaxNodes != nil && pl.MinNodes > *l.MaxNodes {
				t.Fatalf("pools[%d]: minNodes %d accepted with %+v", i, pl.MinNodes, l)
			}
		}
		for i := range p.Pools {
			pl := &p.Pools[i]
			if th := pl.SavingsThresholdOf(); !(th >= 0 && th <= 1) {
				t.Fatalf("pools[%d]: savingsThreshold %v accepted", i, th)
			}
			for _, r := range []api.DisruptionReason{api.ReasonEmpty, api.ReasonUnderutilized} {
				if n := pl.AllowedDisruptions(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), r, 10); n < 0 {
					t.Fatalf("pools[%d]: %d disruptions allowed for %s", i, n, r)
				}
			}
		}
		if b := p.Budget; b != nil && !(b.MaxPricePerHour > 0) {
			t.Fatalf("budget %v accepted", b.MaxPricePerHour)
		}
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted policy does not encode: %v", err)
		}
		again, err := Parse(js)
		if err != nil {
			t.Fatalf("accepted policy does not parse again: %v\n%s", err, js)
		}
		js2, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(js, js2) {
			t.Fatalf("round trip changed the policy:\n%s\n%s", js, js2)
		}
	})
}
