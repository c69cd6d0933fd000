package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzDecode checks that Decode never panics and that a catalog it accepts holds the bounds the
// simulator relies on (positive finite prices, vCPU and memory whose allocatable cannot
// overflow) and encodes back to itself.
func FuzzDecode(f *testing.F) {
	b, _ := json.Marshal(small())
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		c, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := range c.Types {
			it := &c.Types[i]
			cpu, mem, pods := Allocatable(c.Provider, it)
			if cpu > int64(it.VCPU)*1000 || mem > it.MemoryMiB<<20 || mem < -(1<<40) || pods <= 0 {
				t.Fatalf("type %s: allocatable cpu %d, memory %d, pods %d out of range", it.Name, cpu, mem, pods)
			}
			for _, o := range it.Offerings {
				if !(o.PricePerHour > 0) || math.IsInf(o.PricePerHour, 0) {
					t.Fatalf("type %s: price %v accepted", it.Name, o.PricePerHour)
				}
			}
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted catalog does not encode: %v", err)
		}
		c2, err := Decode(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("accepted catalog does not decode again: %v", err)
		}
		if b2, _ := json.Marshal(c2); !bytes.Equal(again, b2) {
			t.Fatalf("round trip changed the catalog")
		}
	})
}
