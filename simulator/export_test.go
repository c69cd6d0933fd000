package simulator

// RawLowerBounds plans the input once (without preemption) and returns the plan's cost and its
// two lower bounds as computed, before the plan's min(bound, cost): the resource LP and the
// configuration LP.
func RawLowerBounds(in Input) (cost, resource, config float64, err error) {
	plan, s, err := simulatePass(in, true)
	if err != nil {
		return 0, 0, 0, err
	}
	return plan.CostPerHour, s.resourceBound(), s.configBound(), nil
}

// WithoutDRAMemo returns the options with what each node remembers of its DRA allocations turned
// off (memoOf, replays): a plan must not depend on it.
func WithoutDRAMemo(o Options) Options {
	o.noDRAMemo = true
	return o
}
