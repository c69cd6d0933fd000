// Package promsource (imported as prom) reads the history and current values the forecaster needs from Prometheus through
// its HTTP API (query_range and query), with per-request timeouts, retries of transient failures,
// splitting of long ranges under Prometheus's 11,000-points-per-series limit, and typed errors:
// a QueryError whose Kind tells bad PromQL (fix the ConfigMap) from an empty result (the metric is
// not there yet) from an unavailable server (try again), so the controller can turn each into a
// fitting Event. Results come back as forecast.Series, gaps as NaN.
//
// Subpackage kubestate reads a cluster's pods from its kube-state-metrics series for
// `tiler replay --prometheus-url`.
package promsource
