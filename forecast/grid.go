package forecast

// Memos by target. Every fit, margin, fallback and break reads targets on the evidence grid
// (the multiples of the stride: evidenceSpacing); a target off it is asked for only while its
// forecasts are made, by each expert once, at the origin a backtest or replay has reached. So
// the memos keep the grid's targets in a slice and the last targets off it in an offGrid: a
// walk of one-minute data on a five-minute grid keeps a fifth of the values it would, and the
// collector, which took a quarter of such a walk's time, runs less often (crane's input0 15
// minutes ahead: 6.3 MB allocated a walk before, 4.7 MB after; 3.6 MB with pairSums' cut).

// offGridRows is the size of an offGrid: far more than the targets off the grid whose
// forecasts are made at once (one per origin).
const offGridRows = 64

// offGrid keeps the values of the last targets off the grid asked for, each in the slot of its
// target modulo offGridRows.
type offGrid[V any] [offGridRows]struct {
	tag int // the target + 1; 0 for none
	v   V
}

// at returns target T's value, set to empty unless its slot holds T already: good until a
// target offGridRows apart is asked for.
func (g *offGrid[V]) at(T int, empty V) *V {
	s := &g[T%offGridRows]
	if s.tag != T+1 {
		s.tag, s.v = T+1, empty
	}
	return &s.v
}

// forecastMemo memoises a forecast per target in [base, end), notYet until set.
type forecastMemo struct {
	base, end, stride int
	grid0             int       // the first multiple of the stride at or after base, in strides
	grid              []float64 // the targets on the grid, from grid0
	off               offGrid[float64]
}

func newForecastMemo(base, end, stride int) forecastMemo {
	m := forecastMemo{base: base, end: end, stride: stride, grid0: ceilTo(base, stride) / stride}
	m.grid = make([]float64, max(0, (end-1)/stride-m.grid0+1))
	for i := range m.grid {
		m.grid[i] = notYet
	}
	return m
}

// at returns target T's slot, nil outside [base, end).
func (m *forecastMemo) at(T int) *float64 {
	if T < m.base || T >= m.end {
		return nil
	}
	if T%m.stride == 0 {
		return &m.grid[T/m.stride-m.grid0]
	}
	return m.off.at(T, notYet)
}
