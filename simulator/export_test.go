package simulator

// WithCAStyleRule makes PlanDisruption decide with the Cluster Autoscaler's rule instead of
// Tiler's (see DisruptionOptions.caStyle), for the comparisons of the quality test.
func WithCAStyleRule(o *DisruptionOptions) { o.caStyle = true }
