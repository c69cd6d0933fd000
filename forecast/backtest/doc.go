// Package backtest scores the forecaster on recorded traces the way it will be used: walking
// forward through time, forecasting each target from only the samples before its origin, and
// comparing with seasonal-naive baselines — with a bootstrap interval of the ratio, the experts'
// shares over time and a verdict in words (Run); and replays a trace as work arriving through a
// node pool with a boot delay and a queue, comparing reactive scaling, forecast-driven
// pre-scaling, and pre-scaling with the queue-depth signal, against the cheapest policy that knows
// the future (Replay, ClairvoyantIncrease). Like forecast it is pure: series in, figures out.
package backtest
