// Package prescale is Tiler's forecast-driven pre-scaler: the provisioner.Prescaler that reads the
// forecasts of the cost policy, queries the load's history in Prometheus, and returns, per
// workload, one expected pod for each replica the forecast wants a lead time ahead beyond the
// current ones. The controller plans and buys for expected pods as for real pending pods (they
// never reach the API server), keeps the nodes they need while the forecast wants them
// (provisioner.ExpectedPodsHolder), and, for forecasts that ask for it, holds the room with
// placeholder pods (provisioner.PlaceholderSource, placeholders.go).
//
// The controller does not import this package; cmd/tiler wires the two together.
package prescale
