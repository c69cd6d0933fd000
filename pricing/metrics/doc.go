// Package metrics exports a pricing.Refresher's state to Prometheus. It lives apart from package
// pricing so that the root package stays free of client_golang (see hack/verify.sh).
package metrics
