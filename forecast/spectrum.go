package forecast

import (
	"hash/fnv"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sort"
)

// permutations is how many shuffled copies of a series set the significance threshold; with 100
// copies the 99th largest maximum power is the threshold of a test at the 1 % level (crane uses
// the same numbers).
const permutations = 100

// bluestein holds what Bluestein's chirp-z transform precomputes for one length: the chirp and
// the transformed convolution kernel. The permutation test transforms 101 series of the same
// length, so computing these once per length matters.
type bluestein struct {
	n, m int
	w    []complex128 // chirp exp(−iπk²/n)
	bf   []complex128 // FFT of the conjugate chirp, wrapped to length m
}

func newBluestein(n int) *bluestein {
	m := 1
	for m < 2*n-1 {
		m <<= 1
	}
	p := &bluestein{n: n, m: m, w: make([]complex128, n), bf: make([]complex128, m)}
	for k := range p.w {
		kk := (k * k) % (2 * n) // k² mod 2n keeps the angle exact for large k
		p.w[k] = cmplx.Exp(complex(0, -math.Pi*float64(kk)/float64(n)))
	}
	p.bf[0] = cmplx.Conj(p.w[0])
	for k := 1; k < n; k++ {
		p.bf[k] = cmplx.Conj(p.w[k])
		p.bf[m-k] = p.bf[k]
	}
	radix2(p.bf, false)
	return p
}

// transform returns the discrete Fourier transform of x (len(x) == p.n). Exact bins matter: the
// daily frequency of a series trimmed to whole days falls on a bin only when the length is not
// padded, which is why this is not a plain power-of-two FFT.
func (p *bluestein) transform(x []complex128) []complex128 {
	if p.n&(p.n-1) == 0 {
		out := append([]complex128(nil), x...)
		radix2(out, false)
		return out
	}
	a := make([]complex128, p.m)
	for k := 0; k < p.n; k++ {
		a[k] = x[k] * p.w[k]
	}
	radix2(a, false)
	for i := range a {
		a[i] *= p.bf[i]
	}
	radix2(a, true)
	out := make([]complex128, p.n)
	for k := range out {
		out[k] = a[k] * p.w[k] / complex(float64(p.m), 0)
	}
	return out
}

// radix2 is the in-place iterative Cooley-Tukey transform; len(x) must be a power of two. The
// inverse is unscaled.
func radix2(x []complex128, inverse bool) {
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

// amplitudes returns |X(k)| for k = 0..n/2 of a real series.
func (p *bluestein) amplitudes(x []float64) []float64 {
	c := make([]complex128, len(x))
	for i, v := range x {
		c[i] = complex(v, 0)
	}
	X := p.transform(c)
	out := make([]float64, len(x)/2+1)
	for k := range out {
		out[k] = cmplx.Abs(X[k])
	}
	return out
}

// powerThreshold is the 99th percentile, over shuffled copies of x, of the largest non-DC
// amplitude. Shuffling keeps the values and destroys any order, so a frequency of the real series
// that beats it is periodic with 99 % confidence. The generator is seeded from x itself so the
// result is a function of the input.
func (p *bluestein) powerThreshold(x []float64) float64 {
	rng := rand.New(rand.NewPCG(seedOf(x), uint64(len(x))))
	y := append([]float64(nil), x...)
	maxima := make([]float64, permutations)
	for i := range maxima {
		rng.Shuffle(len(y), func(a, b int) { y[a], y[b] = y[b], y[a] })
		amp := p.amplitudes(y)
		for _, a := range amp[1:] {
			maxima[i] = math.Max(maxima[i], a)
		}
	}
	sort.Float64s(maxima)
	return maxima[permutations*99/100-1]
}

func seedOf(x []float64) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, v := range x {
		bits := math.Float64bits(v)
		for i := range buf {
			buf[i] = byte(bits >> (8 * i))
		}
		h.Write(buf[:])
	}
	return h.Sum64()
}
