package forecast

import (
	"math"
	"testing"
	"time"
)

// referenceFit is the stack's fit as written before its sums were blocked: one pass over the
// rows, every entry of the normal equations read and written back per row.
func referenceFit(m *seasonal, o, window int) weights {
	var a [nFeatures][nFeatures]float64
	var b [nFeatures]float64
	scale := meanObserved(m.y[max(0, o-window+1) : o+1])
	rows := 0
	for T := max(0, o-window+1); T <= o; T++ {
		x, ok := m.features(T)
		if !ok || math.IsNaN(m.y[T]) {
			continue
		}
		wt := 1 / (math.Abs(m.y[T]) + 4*scale)
		for i := range x {
			b[i] += wt * x[i] * m.y[T]
			for j := range x {
				a[i][j] += wt * x[i] * x[j]
			}
		}
		rows++
	}
	if rows < nFeatures {
		return priorWeights
	}
	return ridge(a, b, priorWeights)
}

// TestFitMatchesReference: the blocked fit gives the weights of the plain one to the bit, at
// every daily refit of a trace with gaps and for each kind of model, from the first refits (fewer
// rows than a block) to full windows.
func TestFitMatchesReference(t *testing.T) {
	s, err := loadTrace(t, "tune/crane-dsp/input1.csv").Resample(5 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 400; i++ {
		s.Values[i] = math.NaN()
	}
	for _, m := range []*seasonal{newSeasonal(s, PeriodDay, 3, 6, nil), newSeasonal(s, PeriodWeek, 12, 6, nil), newSeasonal(s, PeriodDay, 288, 6, time.UTC)} {
		for o := 0; o < s.Len(); o += s.Steps(Day) / 2 {
			for _, window := range []int{s.Steps(Day), s.Steps(fitWindow)} {
				if got, want := m.fit(o, window), referenceFit(m, o, window); got != want {
					t.Fatalf("%s model, origin %d, window %d: weights %v, want %v", m.label(), o, window, got, want)
				}
			}
		}
	}
}
