package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tiler-dev/tiler/pricing"
)

type fakeReporter struct {
	staleness map[string]time.Duration
	status    []pricing.SourceStatus
}

func (f fakeReporter) Staleness() map[string]time.Duration { return f.staleness }
func (f fakeReporter) Status() []pricing.SourceStatus      { return f.status }

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := fakeReporter{
		staleness: map[string]time.Duration{"gcp": 90 * time.Second, "aws": time.Hour},
		status: []pricing.SourceStatus{
			{Name: "gcp", LastSuccess: time.Unix(100, 0)},
			{Name: "aws", LastError: errors.New("throttled"), ConsecutiveFailures: 3},
		},
	}
	if _, err := Register(reg, r); err != nil {
		t.Fatal(err)
	}
	// metric{source} → value; testutil is avoided to keep the test's dependencies to client_golang
	// and client_model.
	want := map[string]float64{
		"tiler_pricing_source_consecutive_failures{aws}": 3,
		"tiler_pricing_source_consecutive_failures{gcp}": 0,
		"tiler_pricing_source_staleness_seconds{aws}":    3600,
		"tiler_pricing_source_staleness_seconds{gcp}":    90,
		"tiler_pricing_source_up{aws}":                   0,
		"tiler_pricing_source_up{gcp}":                   1,
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[f.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetGauge().GetValue()
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	if _, err := Register(reg, r); err == nil {
		t.Errorf("registering twice did not fail")
	}
}
