package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tiler-dev/tiler/pricing"
)

// Reporter is what the collector reads at scrape time; *pricing.Refresher implements it.
type Reporter interface {
	// Staleness returns the age of the prices in use, per source name.
	Staleness() map[string]time.Duration
	// Status returns each live source's refresh state.
	Status() []pricing.SourceStatus
}

var _ Reporter = (*pricing.Refresher)(nil)

// Collector exports a Reporter's state. Values are read at scrape time, so they are never older
// than the scrape and the collector holds no state of its own.
type Collector struct {
	reporter  Reporter
	staleness *prometheus.Desc
	failures  *prometheus.Desc
	up        *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// Register builds a Collector over r and registers it with reg. The label "source" is bounded by
// the number of configured sources (embedded, aws, gcp, …).
func Register(reg prometheus.Registerer, r Reporter) (*Collector, error) {
	c := &Collector{
		reporter: r,
		staleness: prometheus.NewDesc("tiler_pricing_source_staleness_seconds",
			"Age of the prices in use for a source: time since its last good refresh, or the age of the embedded data standing in for it while it has never answered.",
			[]string{"source"}, nil),
		failures: prometheus.NewDesc("tiler_pricing_source_consecutive_failures",
			"Failed refreshes of a source since its last good one.",
			[]string{"source"}, nil),
		up: prometheus.NewDesc("tiler_pricing_source_up",
			"1 if the last refresh of a source succeeded, 0 otherwise.",
			[]string{"source"}, nil),
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering pricing metrics: %w", err)
	}
	return c, nil
}

// Describe sends the descriptors of the collector's metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.staleness
	ch <- c.failures
	ch <- c.up
}

// Collect reads the reporter and sends one sample per source and metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for name, age := range c.reporter.Staleness() {
		ch <- prometheus.MustNewConstMetric(c.staleness, prometheus.GaugeValue, age.Seconds(), name)
	}
	for _, st := range c.reporter.Status() {
		up := 0.0
		if st.LastError == nil && !st.LastSuccess.IsZero() {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.GaugeValue, float64(st.ConsecutiveFailures), st.Name)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, st.Name)
	}
}
