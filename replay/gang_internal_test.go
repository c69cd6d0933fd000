package replay

import (
	"math"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/forecast"
)

// TestSchedulerModelGangAllOrNothing: on one usable 4-GPU node, two pending pods of 4 GPUs each
// get one binding when they are on their own, and none when they are a gang that needs both —
// the scheduler model places a native PodGroup all or nothing; a gang of one binds.
func TestSchedulerModelGangAllOrNothing(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	pols, err := Policies(nil)
	if err != nil {
		t.Fatal(err)
	}
	var pol Policy
	for _, p := range pols {
		if p.Name == PolicyTilerNoConsolidation {
			pol = p
		}
	}
	pod := func(name, gang string) Pod {
		return Pod{Name: name, Depart: time.Hour, CPUMilli: 8000, MemoryMiB: 16384, NumGPUs: 4, GPUMilli: 1000, Gang: gang}
	}
	for _, tc := range []struct {
		name  string
		gangs []Gang
		pods  []Pod
		bound int
	}{
		{"no gang", nil, []Pod{pod("a", ""), pod("b", "")}, 1},
		{"gang of two", []Gang{{Name: "train", MinCount: 2}}, []Pod{pod("a", "train"), pod("b", "train")}, 0},
		{"gang of one", []Gang{{Name: "solo", MinCount: 1}}, []Pod{pod("a", "solo")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := &Workload{Name: tc.name, Start: ReplayEpoch, Length: time.Hour, Pods: tc.pods, Gangs: tc.gangs}
			if err := wl.Validate(); err != nil {
				t.Fatal(err)
			}
			w := newWorld(wl, pol, DefaultConfig(cat))
			nn := api.NewNode{Name: "gpu-1", Labels: map[string]string{api.LabelGPUCount: "4"}, Taints: []corev1.Taint{policy.DefaultGPUTaint},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48"), corev1.ResourceMemory: resource.MustParse("180Gi"),
					corev1.ResourcePods: resource.MustParse("110"), api.ResourceGPU: resource.MustParse("4")}}
			w.nodes[nn.Name] = &nodeState{planned: nn, obj: nodeObject(nn, w.now, true), devices: true}
			w.nodes[nn.Name].rec.GPUs = 4
			for _, p := range w.pods {
				w.arrive(p)
			}
			pending, err := w.schedule()
			if err != nil {
				t.Fatal(err)
			}
			if got := len(tc.pods) - pending; got != tc.bound {
				t.Errorf("%d of %d pods bound; want %d", got, len(tc.pods), tc.bound)
			}
		})
	}
}

// TestLoadUntilSeesNoFuture: what the replay's pre-scaler reads of a load series at now ends at
// the grid point at or before now (its value is the actual), starts history before now, and
// is nothing before the first sample, when the latest point is missing, or when the history
// window holds no sample (as Prometheus has nothing for a series gone stale).
func TestLoadUntilSeesNoFuture(t *testing.T) {
	start := ReplayEpoch
	load := forecast.Series{Start: start, Step: 30 * time.Minute, Values: []float64{1, 2, 3, 4, math.NaN(), 6, 7, 8}}
	hist, actual, ok := loadUntil(load, start.Add(100*time.Minute), time.Hour)
	if !ok || actual != 4 || hist.Len() != 3 || hist.Values[0] != 2 || hist.End().After(start.Add(100*time.Minute+30*time.Minute)) ||
		hist.TimeAt(hist.Len()-1) != start.Add(90*time.Minute) {
		t.Errorf("at 1h40: history %v from %s, actual %g, %v; want 2, 3, 4 up to 1h30 and 4", hist.Values, hist.Start, actual, ok)
	}
	if _, _, ok := loadUntil(load, start.Add(-time.Minute), time.Hour); ok {
		t.Error("before the first sample: a load was seen")
	}
	if _, _, ok := loadUntil(load, start.Add(2*time.Hour+10*time.Minute), time.Hour); ok {
		t.Error("the latest point missing: a load was seen")
	}
	if _, actual, ok := loadUntil(load, start.Add(4*time.Hour), time.Hour); !ok || actual != 8 {
		t.Errorf("just after the series: actual %g, %v; want its last value", actual, ok)
	}
	if _, _, ok := loadUntil(load, start.Add(10*time.Hour), time.Hour); ok {
		t.Error("a history window past the series' end: a load was seen")
	}
}
