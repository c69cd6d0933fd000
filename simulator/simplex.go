package simulator

import "math"

const lpEps = 1e-9

// lpMinCover solves min c·x subject to A·x ≥ b, x ≥ 0, for b ≥ 0 and c ≥ 0, with the two-phase
// tableau simplex and Bland's rule (no cycling). A has one row per resource and one column per
// offering, so the tableau stays small (a handful of rows). It returns false when the demand
// cannot be covered.
func lpMinCover(A [][]float64, b, c []float64) (float64, bool) {
	v, _, ok := lpSolve(A, b, c)
	return v, ok
}

// lpSolve is lpMinCover that also returns an optimal basic solution x.
func lpSolve(A [][]float64, b, c []float64) (float64, []float64, bool) {
	m, n := len(A), len(c)
	x := make([]float64, n)
	if m == 0 {
		return 0, x, true
	}
	// Columns: x (n), surplus s (m), artificial a (m), right-hand side.
	width := n + 2*m + 1
	rhs := width - 1
	T := make([][]float64, m)
	basis := make([]int, m)
	for i := range T {
		T[i] = make([]float64, width)
		copy(T[i], A[i])
		T[i][n+i] = -1
		T[i][n+m+i] = 1
		T[i][rhs] = b[i]
		basis[i] = n + m + i
	}
	phase1 := make([]float64, width-1)
	for i := 0; i < m; i++ {
		phase1[n+m+i] = 1
	}
	if !runSimplex(T, basis, phase1, width-1) {
		return 0, nil, false
	}
	if objective(T, basis, phase1) > 1e-7 {
		return 0, nil, false
	}
	driveOutArtificials(T, basis, n+m)
	phase2 := make([]float64, n+m) // artificials may not re-enter
	copy(phase2, c)
	if !runSimplex(T, basis, phase2, n+m) {
		return 0, nil, false
	}
	for i, bj := range basis {
		if bj < n {
			x[bj] = T[i][rhs]
		}
	}
	return objective(T, basis, phase2), x, true
}

// runSimplex pivots until no column below limit has a negative reduced cost.
func runSimplex(T [][]float64, basis []int, cost []float64, limit int) bool {
	rhs := len(T[0]) - 1
	for iter := 0; iter < 50*(limit+len(T)); iter++ {
		enter := -1
		for j := 0; j < limit; j++ {
			d := cost[j]
			for i, bj := range basis {
				if bj < len(cost) {
					d -= cost[bj] * T[i][j]
				}
			}
			if d < -lpEps {
				enter = j
				break
			}
		}
		if enter < 0 {
			return true
		}
		leave := -1
		best := math.Inf(1)
		for i := range T {
			if T[i][enter] > lpEps {
				r := T[i][rhs] / T[i][enter]
				if r < best-lpEps || (r < best+lpEps && leave >= 0 && basis[i] < basis[leave]) {
					best, leave = r, i
				}
			}
		}
		if leave < 0 {
			return false // unbounded: cannot happen with c ≥ 0
		}
		pivot(T, leave, enter)
		basis[leave] = enter
	}
	return false
}

func pivot(T [][]float64, row, col int) {
	p := T[row][col]
	for j := range T[row] {
		T[row][j] /= p
	}
	for i := range T {
		if i == row || T[i][col] == 0 {
			continue
		}
		f := T[i][col]
		for j := range T[i] {
			T[i][j] -= f * T[row][j]
		}
	}
}

func objective(T [][]float64, basis []int, cost []float64) float64 {
	rhs := len(T[0]) - 1
	var z float64
	for i, bj := range basis {
		if bj < len(cost) {
			z += cost[bj] * T[i][rhs]
		}
	}
	return z
}

// driveOutArtificials replaces artificial columns left in the basis at level zero by any real
// column with a nonzero entry in their row.
func driveOutArtificials(T [][]float64, basis []int, firstArtificial int) {
	for i, bj := range basis {
		if bj < firstArtificial {
			continue
		}
		for j := 0; j < firstArtificial; j++ {
			if math.Abs(T[i][j]) > lpEps {
				pivot(T, i, j)
				basis[i] = j
				break
			}
		}
	}
}
