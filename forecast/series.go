package forecast

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Sample is one observation of a metric: a value at a time.
type Sample struct {
	// Time is when the value was observed.
	Time time.Time
	// Value is the observed value; NaN means the value is missing.
	Value float64
}

// Series is a metric on a regular time grid. Values[i] was observed at Start+i·Step; a missing
// observation is NaN, never zero, and every model in this package skips it.
type Series struct {
	// Start is the time of Values[0].
	Start time.Time
	// Step is the spacing of the grid.
	Step time.Duration
	// Values holds one value per grid point, NaN where nothing was observed.
	Values []float64
}

// MaxPoints bounds the grid of a series (16 bytes a point while it is built, 64 MiB at most): 48
// days at one point a second, 8 years at one a minute. Samples a century apart at the step of two
// close ones would ask for billions (gigabytes).
const MaxPoints = 1 << 22

// minCoverage is the share of its grid points a long series (over sparseGrid points) must have
// samples in: a trace whose grid is almost all gap has a timestamp out of place (a digit lost),
// and planning on it would forecast from nothing.
const (
	minCoverage = 0.01
	sparseGrid  = 10000
)

// ErrNoSamples is returned when a series is built from no samples.
var ErrNoSamples = errors.New("no samples")

// NewSeries places samples on a regular grid of the given step starting at the first sample's
// time truncated to the step. Samples must be in strictly increasing time order (ReadCSV
// guarantees it); several samples in one grid cell are averaged, and cells with no sample are NaN.
func NewSeries(samples []Sample, step time.Duration) (Series, error) {
	if len(samples) == 0 {
		return Series{}, ErrNoSamples
	}
	if step <= 0 {
		return Series{}, fmt.Errorf("step %s: must be positive", step)
	}
	for i := 1; i < len(samples); i++ {
		if !samples[i].Time.After(samples[i-1].Time) {
			return Series{}, fmt.Errorf("sample %d at %s: not after the previous sample", i, samples[i].Time.Format(time.RFC3339))
		}
	}
	start := samples[0].Time.Truncate(step)
	span := samples[len(samples)-1].Time.Sub(start)
	if span == math.MaxInt64 || span/step >= MaxPoints {
		// Sub saturates past 292 years; either way the grid would not fit in memory.
		return Series{}, fmt.Errorf("the samples span %s to %s: at a step of %s that is more than %d grid points",
			samples[0].Time.Format(time.RFC3339), samples[len(samples)-1].Time.Format(time.RFC3339), step, MaxPoints)
	}
	n := int(span/step) + 1
	if n > sparseGrid && float64(len(samples)) < minCoverage*float64(n) {
		i := largestGap(samples)
		return Series{}, fmt.Errorf("%d samples on a grid of %d points at a step of %s: the largest gap, %s, is between sample %d at %s and sample %d at %s (a timestamp out of place?)",
			len(samples), n, step, samples[i+1].Time.Sub(samples[i].Time), i, samples[i].Time.Format(time.RFC3339), i+1, samples[i+1].Time.Format(time.RFC3339))
	}
	sum := make([]float64, n)
	count := make([]int, n)
	for _, s := range samples {
		if math.IsNaN(s.Value) {
			continue
		}
		i := int(s.Time.Sub(start) / step)
		sum[i] += s.Value
		count[i]++
	}
	for i := range sum {
		if count[i] == 0 {
			sum[i] = math.NaN()
			continue
		}
		sum[i] /= float64(count[i])
	}
	return Series{Start: start, Step: step, Values: sum}, nil
}

// largestGap returns the index of the sample followed by the longest gap (at least two samples).
func largestGap(samples []Sample) int {
	best := 0
	for i := 1; i+1 < len(samples); i++ {
		if samples[i+1].Time.Sub(samples[i].Time) > samples[best+1].Time.Sub(samples[best].Time) {
			best = i
		}
	}
	return best
}

// InferStep returns the median spacing of consecutive samples, the natural grid of a trace.
func InferStep(samples []Sample) time.Duration {
	if len(samples) < 2 {
		return time.Minute
	}
	d := make([]time.Duration, 0, len(samples)-1)
	for i := 1; i < len(samples); i++ {
		d = append(d, samples[i].Time.Sub(samples[i-1].Time))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// Len returns the number of grid points.
func (s Series) Len() int { return len(s.Values) }

// TimeAt returns the time of grid point i.
func (s Series) TimeAt(i int) time.Time { return s.Start.Add(time.Duration(i) * s.Step) }

// End returns the time just after the last grid point.
func (s Series) End() time.Time { return s.TimeAt(len(s.Values)) }

// Index returns the grid point at or before t; it may be negative or past the end.
func (s Series) Index(t time.Time) int {
	d := t.Sub(s.Start)
	i := int(d / s.Step)
	if d < 0 && d%s.Step != 0 {
		i--
	}
	return i
}

// Steps converts a duration to a whole number of grid steps, rounding up.
func (s Series) Steps(d time.Duration) int {
	return int((d + s.Step - 1) / s.Step)
}

// Missing returns how many grid points have no value.
func (s Series) Missing() int {
	n := 0
	for _, v := range s.Values {
		if math.IsNaN(v) {
			n++
		}
	}
	return n
}

// Until returns the prefix of the series observed strictly before t: what a forecaster standing
// at t may look at. It shares the underlying array.
func (s Series) Until(t time.Time) Series {
	i := s.Index(t)
	if s.TimeAt(i).Before(t) {
		i++
	}
	i = max(0, min(i, len(s.Values)))
	return Series{Start: s.Start, Step: s.Step, Values: s.Values[:i]}
}

// Resample averages the series into buckets of the given step, which must be a whole multiple of
// the current step. A bucket with no value is NaN; partial buckets average what they have.
func (s Series) Resample(step time.Duration) (Series, error) {
	if step == s.Step {
		return s, nil
	}
	if step < s.Step || step%s.Step != 0 {
		return Series{}, fmt.Errorf("resampling from %s to %s: the new step must be a whole multiple of the old", s.Step, step)
	}
	start := s.Start.Truncate(step)
	off := int(s.Start.Sub(start) / s.Step)
	k := int(step / s.Step)
	n := (off + len(s.Values) + k - 1) / k
	out := make([]float64, n)
	for b := range out {
		out[b] = nanMean(s.Values[max(0, b*k-off):min(len(s.Values), (b+1)*k-off)])
	}
	return Series{Start: start, Step: step, Values: out}, nil
}

// TrimToPeriods drops the oldest points so the series holds a whole number of periods, as crane's
// detector does before its frequency test; it returns the series and the number of periods.
func (s Series) TrimToPeriods(period time.Duration) (Series, int) {
	per := s.Steps(period)
	if per <= 0 {
		return s, 0
	}
	m := len(s.Values) / per
	drop := len(s.Values) - m*per
	return Series{Start: s.TimeAt(drop), Step: s.Step, Values: s.Values[drop:]}, m
}

// nanMean is the mean of the non-NaN values, or NaN when there are none.
func nanMean(x []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range x {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// median returns the median of x, which holds no NaN, reordering x; NaN for an empty slice.
func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	if len(x) <= 12 {
		// The insertion sort sort.Float64s runs on so few values (its pdqsort's), written out:
		// the profile takes a median per target and model.
		for i := 1; i < len(x); i++ {
			for j := i; j > 0 && x[j] < x[j-1]; j-- {
				x[j], x[j-1] = x[j-1], x[j]
			}
		}
	} else {
		sort.Float64s(x)
	}
	return sortedMedian(x)
}

// sortedMedian is the median of x, sorted and not empty.
func sortedMedian(x []float64) float64 {
	m := len(x)
	return (x[(m-1)/2] + x[m/2]) / 2
}

// observedSums returns the prefix sums of the observed values of y (of their absolute values,
// with abs) and the prefix counts of them: sums[i] and counts[i] cover y[:i].
func observedSums(y []float64, abs bool) (sums []float64, counts []int) {
	sums, counts = make([]float64, len(y)+1), make([]int, len(y)+1)
	for i, v := range y {
		sums[i+1], counts[i+1] = sums[i], counts[i]
		if !math.IsNaN(v) {
			if abs {
				v = math.Abs(v)
			}
			sums[i+1] += v
			counts[i+1]++
		}
	}
	return sums, counts
}
