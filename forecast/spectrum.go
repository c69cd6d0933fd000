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

// bluestein holds what Bluestein's chirp-z transform precomputes for one length: the chirp, the
// transformed convolution kernel, the radix-2 plan of the padded length and the buffers a
// transform works in. The permutation test transforms 101 series of the same length, so
// computing these once per length matters. A bluestein is not safe for concurrent use.
type bluestein struct {
	n, m int
	w    []complex128 // chirp exp(−iπk²/n)
	bf   []complex128 // FFT of the conjugate chirp, wrapped to length m
	plan *radix2Plan  // of length m, or n when n is a power of two
	a    []complex128 // work buffer of length m
}

func newBluestein(n int) *bluestein {
	if n&(n-1) == 0 {
		return &bluestein{n: n, m: n, plan: newRadix2Plan(n), a: make([]complex128, n)}
	}
	m := 1
	for m < 2*n-1 {
		m <<= 1
	}
	p := &bluestein{n: n, m: m, w: make([]complex128, n), bf: make([]complex128, m), plan: newRadix2Plan(m), a: make([]complex128, m)}
	for k := range p.w {
		kk := (k * k) % (2 * n) // k² mod 2n keeps the angle exact for large k
		p.w[k] = cmplx.Exp(complex(0, -math.Pi*float64(kk)/float64(n)))
	}
	p.bf[0] = cmplx.Conj(p.w[0])
	for k := 1; k < n; k++ {
		p.bf[k] = cmplx.Conj(p.w[k])
		p.bf[m-k] = p.bf[k]
	}
	p.plan.transform(p.bf, false)
	return p
}

// amplitudes returns |X(k)| for k = 0..n/2 of the discrete Fourier transform X of the real
// series x (len(x) == p.n), written to out when it has room. Exact bins matter: the daily
// frequency of a series trimmed to whole days falls on a bin only when the length is not padded,
// which is why this is not a plain power-of-two FFT.
func (p *bluestein) amplitudes(x []float64, out []float64) []float64 {
	if cap(out) < len(x)/2+1 {
		out = make([]float64, len(x)/2+1)
	}
	out = out[:len(x)/2+1]
	a := p.a
	if p.n&(p.n-1) == 0 {
		for i, v := range x {
			a[i] = complex(v, 0)
		}
		p.plan.transform(a, false)
		for k := range out {
			out[k] = cmplx.Abs(a[k])
		}
		return out
	}
	for k, v := range x {
		a[k] = complex(v, 0) * p.w[k]
	}
	clear(a[p.n:])
	p.plan.transform(a, false)
	for i := range a {
		a[i] *= p.bf[i]
	}
	p.plan.transform(a, true)
	for k := range out {
		out[k] = cmplx.Abs(a[k] * p.w[k] / complex(float64(p.m), 0))
	}
	return out
}

// radix2Plan is what the in-place iterative Cooley-Tukey transform of one power-of-two length
// precomputes: the bit-reversal swaps, and each stage's twiddle factors in both directions as
// the transform used to compute them on the fly (w = 1, then w *= step per butterfly), so the
// planned transform is the same to the bit.
type radix2Plan struct {
	n     int
	swaps []int32 // pairs i, j to exchange
	// tw[inverse][half+k] is the k-th twiddle factor of the stage of size 2·half.
	tw [2][]complex128
}

func newRadix2Plan(n int) *radix2Plan {
	p := &radix2Plan{n: n}
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			p.swaps = append(p.swaps, int32(i), int32(j))
		}
	}
	for d, sign := range [2]float64{-1, 1} {
		tw := make([]complex128, max(1, n))
		for size := 2; size <= n; size <<= 1 {
			step := cmplx.Exp(complex(0, sign*2*math.Pi/float64(size)))
			w := complex(1, 0)
			for k := range size / 2 {
				tw[size/2+k] = w
				w *= step
			}
		}
		p.tw[d] = tw
	}
	return p
}

// transform is the in-place iterative Cooley-Tukey transform of x (len(x) == p.n); the inverse
// is unscaled.
func (p *radix2Plan) transform(x []complex128, inverse bool) {
	x = x[:p.n]
	for i := 0; i+1 < len(p.swaps); i += 2 {
		a, b := p.swaps[i], p.swaps[i+1]
		x[a], x[b] = x[b], x[a]
	}
	d := 0
	if inverse {
		d = 1
	}
	for size := 2; size <= p.n; size <<= 1 {
		half := size / 2
		tw := p.tw[d][half:size]
		for start := 0; start < p.n; start += size {
			lo, hi := x[start:start+half], x[start+half:start+size]
			for k, w := range tw {
				u, v := lo[k], hi[k]*w
				lo[k], hi[k] = u+v, u-v
			}
		}
	}
}

// powerThreshold is the 99th percentile, over shuffled copies of x, of the largest non-DC
// amplitude. Shuffling keeps the values and destroys any order, so a frequency of the real series
// that beats it is periodic with 99 % confidence. The generator is seeded from x itself so the
// result is a function of the input.
func (p *bluestein) powerThreshold(x []float64) float64 {
	rng := rand.New(rand.NewPCG(seedOf(x), uint64(len(x))))
	y := append([]float64(nil), x...)
	maxima := make([]float64, permutations)
	var amp []float64
	for i := range maxima {
		rng.Shuffle(len(y), func(a, b int) { y[a], y[b] = y[b], y[a] })
		amp = p.amplitudes(y, amp)
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
