package gpushare

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewPodMix(t *testing.T) {
	pods := []Request{
		share(4000, 500), share(4000, 500), share(4000, 500), share(4000, 500), // 4 × A
		whole(8000, 1), whole(8000, 1), whole(8000, 1), // 3 × B
		{CPUMilli: 2000, MemoryMiB: 1}, {CPUMilli: 2000, MemoryMiB: 2}, // 2 × C: memory is not part of a shape
		share(1000, 100), // 1 × D
	}
	cases := []struct {
		name     string
		coverage float64
		want     []MixEntry
	}{
		// 90 % of 10 pods = 9: A+B+C cover 9, weights renormalised over 9.
		{"90 %", 90, []MixEntry{{shape(4000, 1, 500), 4.0 / 9}, {shape(8000, 1, 1000), 3.0 / 9}, {shape(2000, 0, 0), 2.0 / 9}}},
		// 50 % = 5: A (4) is short, A+B (7) covers it.
		{"50 %", 50, []MixEntry{{shape(4000, 1, 500), 4.0 / 7}, {shape(8000, 1, 1000), 3.0 / 7}}},
		{"all", 100, []MixEntry{{shape(4000, 1, 500), 0.4}, {shape(8000, 1, 1000), 0.3}, {shape(2000, 0, 0), 0.2}, {shape(1000, 1, 100), 0.1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewPodMix(pods, tc.coverage)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.Entries(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("mix (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewPodMixTieOrder pins the paper's order among equally common shapes: larger CPU first,
// then larger GPU share.
func TestNewPodMixTieOrder(t *testing.T) {
	m, err := NewPodMix([]Request{share(1000, 200), share(3000, 100), share(3000, 900)}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []PodShape
	for _, e := range m.Entries() {
		got = append(got, e.Shape)
	}
	want := []PodShape{shape(3000, 1, 900), shape(3000, 1, 100), shape(1000, 1, 200)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestPodMixRejects(t *testing.T) {
	if _, err := NewPodMix(nil, 95); err == nil {
		t.Error("empty pod list accepted")
	}
	if _, err := NewPodMix([]Request{share(1, 1)}, 0); err == nil {
		t.Error("coverage 0 accepted")
	}
	if _, err := NewPodMixFromWeights([]MixEntry{{shape(1, 1, 1), 0.5}}); err == nil {
		t.Error("weights summing to 0.5 accepted")
	}
	if _, err := NewPodMixFromWeights([]MixEntry{{shape(1, 1, 1), math.NaN()}}); err == nil {
		t.Error("NaN weight accepted")
	}
}
