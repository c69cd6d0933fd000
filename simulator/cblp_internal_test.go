package simulator

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// TestCBLPMatchesGonum: on random covering LPs, the column-generation master LP (columns added
// one at a time, solved after each batch) reaches the optimum gonum's Simplex finds for the
// same LP in standard form, and its duals are dual feasible with b·π equal to it.
func TestCBLPMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for c := 0; c < 60; c++ {
		m, n := 2+r.IntN(12), 3+r.IntN(40)
		b := make([]float64, m)
		for i := range b {
			b[i] = float64(1 + r.IntN(5))
		}
		cols := make([]map[int]int, n)
		cost := make([]float64, n)
		for j := range cols {
			cols[j] = map[int]int{}
			for i := 0; i < m; i++ {
				if r.IntN(3) == 0 {
					cols[j][i] = 1 + r.IntN(3)
				}
			}
			cols[j][r.IntN(m)] = 1 + r.IntN(3)
			cost[j] = 0.1 + 5*r.Float64()
		}
		// Every row covered by some column.
		for i := 0; i < m; i++ {
			cols = append(cols, map[int]int{i: 1})
			cost = append(cost, 10)
		}
		work := 0
		p := newCBLP(b, 100)
		for j := range cols {
			p.addColumn(cols[j], cost[j])
			if j%7 == 0 {
				p.solve(&work)
			}
		}
		p.solve(&work)
		got := p.value()

		// gonum: min c·x s.t. A·x − s = b, x, s ≥ 0.
		N := len(cols) + m
		A := mat.NewDense(m, N, nil)
		cc := make([]float64, N)
		for j, col := range cols {
			for i, k := range col {
				A.Set(i, j, float64(k))
			}
			cc[j] = cost[j]
		}
		for i := 0; i < m; i++ {
			A.Set(i, len(cols)+i, -1)
		}
		want, _, err := lp.Simplex(cc, A, b, 1e-10, nil)
		if err != nil {
			t.Fatalf("case %d: gonum: %v", c, err)
		}
		if math.Abs(got-want) > 1e-6*math.Max(1, want) {
			t.Fatalf("case %d: master LP %.9f, gonum %.9f", c, got, want)
		}
		pi := p.duals()
		dual := 0.0
		for i := range pi {
			if pi[i] < -1e-7 {
				t.Fatalf("case %d: π[%d] = %g < 0", c, i, pi[i])
			}
			dual += b[i] * pi[i]
		}
		for j, col := range cols {
			v := 0.0
			for i, k := range col {
				v += pi[i] * float64(k)
			}
			if v > cost[j]+1e-7 {
				t.Fatalf("case %d: column %d prices out at the optimum: π·a %.9f > c %.9f", c, j, v, cost[j])
			}
		}
		if math.Abs(dual-want) > 1e-6*math.Max(1, want) {
			t.Fatalf("case %d: b·π %.9f, optimum %.9f", c, dual, want)
		}
	}
}
