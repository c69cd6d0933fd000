package prescale

import (
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tiler-dev/tiler/forecast"
	prom "github.com/tiler-dev/tiler/promsource"
)

// Metrics are the pre-scaler's metrics. Every series is labelled by workload (its key,
// Kind/namespace/name), which the cost policy's forecasts section bounds; a workload's series are
// deleted when its forecast is removed.
type Metrics struct {
	// Value is the point forecast of the load one lead time ahead (tiler_forecast_value).
	Value *prometheus.GaugeVec
	// Sized is the value capacity is sized for, after the margin (tiler_forecast_sized_value).
	Sized *prometheus.GaugeVec
	// Actual is the load now (tiler_forecast_actual).
	Actual *prometheus.GaugeVec
	// ErrorRatio is (actual − forecast made one lead time ago for now) / actual
	// (tiler_forecast_error_ratio); absent when unknown.
	ErrorRatio *prometheus.GaugeVec
	// TargetReplicas is the replicas capacity is held for (tiler_forecast_target_replicas).
	TargetReplicas *prometheus.GaugeVec
	// ExpectedPods is the expected pods returned to the batch (tiler_forecast_reserved_pods; the
	// name predates "expected pods" and stays for dashboards).
	ExpectedPods *prometheus.GaugeVec
	// Failures counts forecasts that could not be made, by kind of failure
	// (tiler_forecast_failures_total; kinds: BadQuery, EmptyResult, MultipleSeries, Unavailable,
	// Timeout, Workload, Model).
	Failures *prometheus.CounterVec
}

// NewMetrics creates the pre-scaler's metrics and registers them with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	w := []string{"workload"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "forecast", Name: name, Help: help}, w)
	}
	m := &Metrics{
		Value:          gauge("value", "Point forecast of the workload's load one lead time ahead, in the units of its loadQuery."),
		Sized:          gauge("sized_value", "Forecast load the expected pods are sized for (after the safety margin)."),
		Actual:         gauge("actual", "The workload's load now (its loadQuery)."),
		ErrorRatio:     gauge("error_ratio", "(actual - forecast made one lead time ago for now) / actual."),
		TargetReplicas: gauge("target_replicas", "Replicas the pre-scaler holds capacity for, a lead time ahead."),
		ExpectedPods:   gauge("reserved_pods", "Expected pods (replicas beyond the current ones) planned in the last batch."),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "forecast", Name: "failures_total",
			Help: "Forecasts that could not be made (no pre-scaling for the workload that round), by kind."}, []string{"workload", "kind"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.Value, m.Sized, m.Actual, m.ErrorRatio, m.TargetReplicas, m.ExpectedPods, m.Failures} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the forecast metrics: %w", err)
		}
	}
	return m, nil
}

// observe records a decision.
func (m *Metrics) observe(workload string, r forecast.Reservation) {
	e := r.Explanation
	m.Value.WithLabelValues(workload).Set(e.Forecast)
	m.Sized.WithLabelValues(workload).Set(e.Sized)
	m.Actual.WithLabelValues(workload).Set(e.Actual)
	if math.IsNaN(e.Error) || math.IsInf(e.Error, 0) {
		m.ErrorRatio.DeleteLabelValues(workload)
	} else {
		m.ErrorRatio.WithLabelValues(workload).Set(e.Error)
	}
	m.TargetReplicas.WithLabelValues(workload).Set(float64(r.TargetReplicas))
	m.ExpectedPods.WithLabelValues(workload).Set(float64(r.Reserve))
}

// fail records a failed forecast: no pod is expected and the forecast series are removed.
func (m *Metrics) fail(workload string, err error) {
	kind := string(prom.KindOf(err))
	if kind == "" {
		kind = "Model"
		if isWorkloadError(err) {
			kind = "Workload"
		}
	}
	m.Failures.WithLabelValues(workload, kind).Inc()
	m.Value.DeleteLabelValues(workload)
	m.Sized.DeleteLabelValues(workload)
	m.Actual.DeleteLabelValues(workload)
	m.ErrorRatio.DeleteLabelValues(workload)
	m.TargetReplicas.DeleteLabelValues(workload)
	m.ExpectedPods.WithLabelValues(workload).Set(0)
}

// forget removes every series of a workload whose forecast is no longer declared.
func (m *Metrics) forget(workload string) {
	for _, g := range []*prometheus.GaugeVec{m.Value, m.Sized, m.Actual, m.ErrorRatio, m.TargetReplicas, m.ExpectedPods} {
		g.DeleteLabelValues(workload)
	}
	m.Failures.DeletePartialMatch(prometheus.Labels{"workload": workload})
}
