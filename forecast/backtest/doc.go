// Package backtest scores the forecaster on recorded traces the way it will be used: walking
// forward through time, forecasting each target from only the samples before its origin, and
// comparing with seasonal-naive baselines (Run); and replays a trace as request traffic through a
// node pool with a boot delay, comparing reactive scaling with forecast-driven pre-scaling
// (Replay). Like forecast it is pure: series in, figures out.
package backtest
