package forecast

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// referenceAmplitudes is the transform as it was before it was planned (twiddle factors and
// bit-reversal computed on the fly, fresh buffers per call): the planned one must match it to
// the bit, since the period detected, and so every forecast, rests on the amplitudes.
func referenceAmplitudes(x []float64) []float64 {
	radix2 := func(x []complex128, inverse bool) {
		n := len(x)
		for i, j := 1, 0; i < n; i++ {
			bit := n >> 1
			for ; j&bit != 0; bit >>= 1 {
				j ^= bit
			}
			j ^= bit
			if i < j {
				x[i], x[j] = x[j], x[i]
			}
		}
		sign := -1.0
		if inverse {
			sign = 1
		}
		for size := 2; size <= n; size <<= 1 {
			step := cmplx.Exp(complex(0, sign*2*math.Pi/float64(size)))
			for start := 0; start < n; start += size {
				w := complex(1, 0)
				for k := 0; k < size/2; k++ {
					u, v := x[start+k], x[start+k+size/2]*w
					x[start+k], x[start+k+size/2] = u+v, u-v
					w *= step
				}
			}
		}
	}
	n := len(x)
	c := make([]complex128, n)
	for i, v := range x {
		c[i] = complex(v, 0)
	}
	var X []complex128
	if n&(n-1) == 0 {
		X = append([]complex128(nil), c...)
		radix2(X, false)
	} else {
		m := 1
		for m < 2*n-1 {
			m <<= 1
		}
		w, bf := make([]complex128, n), make([]complex128, m)
		for k := range w {
			kk := (k * k) % (2 * n)
			w[k] = cmplx.Exp(complex(0, -math.Pi*float64(kk)/float64(n)))
		}
		bf[0] = cmplx.Conj(w[0])
		for k := 1; k < n; k++ {
			bf[k] = cmplx.Conj(w[k])
			bf[m-k] = bf[k]
		}
		radix2(bf, false)
		a := make([]complex128, m)
		for k := 0; k < n; k++ {
			a[k] = c[k] * w[k]
		}
		radix2(a, false)
		for i := range a {
			a[i] *= bf[i]
		}
		radix2(a, true)
		X = make([]complex128, n)
		for k := range X {
			X[k] = a[k] * w[k] / complex(float64(m), 0)
		}
	}
	out := make([]float64, n/2+1)
	for k := range out {
		out[k] = cmplx.Abs(X[k])
	}
	return out
}

// TestAmplitudesMatchReference: the planned transform, reusing its buffers over the shuffles of
// a permutation test, gives the amplitudes of the unplanned one bit for bit, at powers of two
// and at the lengths of hourly windows.
func TestAmplitudesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 8, 64, 168, 336, 1000, 1344, 2048} {
		p := newBluestein(n)
		var out []float64
		for round := range 3 {
			x := make([]float64, n)
			for i := range x {
				x[i] = 100*math.Sin(2*math.Pi*float64(i)/24) + 20*rng.NormFloat64()
				if round == 2 && i%5 == 0 {
					x[i] = 0 // zeros, whose signs the complex products must treat alike
				}
			}
			out = p.amplitudes(x, out)
			want := referenceAmplitudes(x)
			if len(out) != len(want) {
				t.Fatalf("n=%d: %d amplitudes, want %d", n, len(out), len(want))
			}
			for k := range want {
				if math.Float64bits(out[k]) != math.Float64bits(want[k]) {
					t.Fatalf("n=%d round %d: amplitude %d is %v, want %v", n, round, k, out[k], want[k])
				}
			}
		}
	}
}
