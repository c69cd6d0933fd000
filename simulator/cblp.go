package simulator

import (
	"maps"
	"math"
	"slices"
)

// cbLP is the restricted master LP of configBound: min c·x s.t. A·x ≥ b, x ≥ 0, over columns
// added one at a time, kept as a full simplex tableau so that a new column is priced against the
// current basis and the solve resumes from it (warm start). gonum's lp.Simplex returns neither
// the basis nor the duals, which column generation needs after every solve.
//
// Columns 0..m−1 are the surplus variables (−e_i, cost 0), m..2m−1 artificial ones (e_i, cost
// bigM: covering a pod "for free" at more than any node costs, so that they leave the basis
// whenever real columns can cover), then the real columns. The tableau's artificial block is
// B⁻¹, from which a new column's entries and the duals π = c_B·B⁻¹ are read.
type cbLP struct {
	m     int
	bigM  float64
	T     [][]float64 // m rows × columns
	rhs   []float64
	basis []int
	cost  []float64
	d     []float64 // reduced costs
}

func newCBLP(b []float64, bigM float64) *cbLP {
	m := len(b)
	lp := &cbLP{m: m, bigM: bigM, T: make([][]float64, m), rhs: append([]float64(nil), b...), basis: make([]int, m),
		cost: make([]float64, 2*m), d: make([]float64, 2*m)}
	for i := range lp.T {
		lp.T[i] = make([]float64, 2*m, 4*m)
		lp.T[i][i] = -1
		lp.T[i][m+i] = 1
		lp.basis[i] = m + i
		lp.cost[m+i] = bigM
		lp.d[i] = bigM // 0 − bigM·(−1)
	}
	return lp
}

// addColumn appends the column covering k[i] pods of class i at the cost.
func (lp *cbLP) addColumn(k map[int]int, cost float64) {
	pi := lp.duals()
	d := cost
	// Sums in class order: a map's order would make the float sums, and so the bound, differ
	// from one run to the next on the same input.
	rows := slices.Sorted(maps.Keys(k))
	for _, i := range rows {
		d -= pi[i] * float64(k[i])
	}
	for r := range lp.T {
		v := 0.0
		for _, i := range rows {
			v += lp.T[r][lp.m+i] * float64(k[i])
		}
		lp.T[r] = append(lp.T[r], v)
	}
	lp.cost = append(lp.cost, cost)
	lp.d = append(lp.d, d)
}

// duals returns π = c_B·B⁻¹, read off the artificial columns' reduced costs.
func (lp *cbLP) duals() []float64 {
	pi := make([]float64, lp.m)
	for i := range pi {
		pi[i] = lp.bigM - lp.d[lp.m+i]
	}
	return pi
}

// solve pivots to an optimum: the most negative reduced cost enters (Bland's rule after a run
// of degenerate pivots, so it cannot cycle). It stops early when the work budget is spent; the
// duals are then those of a feasible basis, which configBound only uses as prices.
func (lp *cbLP) solve(work *int) {
	degenerate := 0
	for iter := 0; iter < 20*(len(lp.cost)+lp.m) && *work <= cbMaxWork; iter++ {
		enter := -1
		if degenerate < 20 {
			best := -cbEps
			for j, d := range lp.d {
				if d < best {
					best, enter = d, j
				}
			}
		} else {
			for j, d := range lp.d {
				if d < -cbEps {
					enter = j
					break
				}
			}
		}
		if enter < 0 {
			return
		}
		leave, ratio := -1, math.Inf(1)
		for i := range lp.T {
			if a := lp.T[i][enter]; a > cbEps {
				r := lp.rhs[i] / a
				if r < ratio-cbEps || (r < ratio+cbEps && leave >= 0 && lp.basis[i] < lp.basis[leave]) {
					ratio, leave = r, i
				}
			}
		}
		if leave < 0 {
			return // unbounded: cannot happen with costs ≥ 0
		}
		if ratio < cbEps {
			degenerate++
		} else {
			degenerate = 0
		}
		lp.pivot(leave, enter)
		*work += lp.m * len(lp.cost)
	}
}

func (lp *cbLP) pivot(row, col int) {
	pr := lp.T[row]
	p := pr[col]
	for j := range pr {
		pr[j] /= p
	}
	lp.rhs[row] /= p
	for i, ri := range lp.T {
		if i == row {
			continue
		}
		f := ri[col]
		if f == 0 {
			continue
		}
		for j, x := range pr {
			ri[j] -= f * x
		}
		lp.rhs[i] -= f * lp.rhs[row]
		ri[col] = 0
	}
	f := lp.d[col]
	for j, x := range pr {
		lp.d[j] -= f * x
	}
	lp.d[col] = 0
	lp.basis[row] = col
}

// value is c_B·x_B, the restricted LP's objective.
func (lp *cbLP) value() float64 {
	v := 0.0
	for i, j := range lp.basis {
		v += lp.cost[j] * lp.rhs[i]
	}
	return v
}
