package backtest

import (
	"cmp"
	"math"
	"slices"

	"github.com/tiler-dev/tiler/forecast"
)

// expertSums accumulates each expert's errors alone over the scored targets it forecast, and
// the baselines' on the same targets (Config.Experts).
type expertSums struct {
	names []string // in the order first seen
	by    map[string]*expertSum
}

type expertSum struct {
	n            int
	absErr, absY float64
	base         []float64 // each baseline's (scores.baseNames) summed absolute error on its targets
}

// add scores the experts' forecasts from origin o for the target just scored (y, the last of
// sc's targets).
func (ex *expertSums) add(w *forecast.Walker, o int, y float64, sc *scores) error {
	fs, err := w.Experts(o)
	if err != nil {
		return err
	}
	if ex.by == nil {
		ex.by = map[string]*expertSum{}
	}
	last := len(sc.targets) - 1
	for _, f := range fs {
		e, ok := ex.by[f.Model]
		if !ok {
			e = &expertSum{base: make([]float64, len(sc.baseNames))}
			ex.by[f.Model] = e
			ex.names = append(ex.names, f.Model)
		}
		e.n++
		e.absErr += math.Abs(y - f.Point)
		e.absY += math.Abs(y)
		for i := range e.base {
			e.base[i] += sc.baseErr[i][last]
		}
	}
	return nil
}

// scores returns every expert's score against the best baseline, named best ("" for none: the
// ratios are then 0), best ratio first (the lowest WAPE first without a baseline).
func (ex *expertSums) scores(sc *scores, best string) []ExpertScore {
	b := slices.Index(sc.baseNames, best)
	out := make([]ExpertScore, 0, len(ex.names))
	for _, name := range ex.names {
		e := ex.by[name]
		s := ExpertScore{Model: name, Targets: e.n, Share: float64(e.n) / float64(sc.n), WAPE: e.absErr / e.absY}
		if b >= 0 && e.base[b] > 0 {
			s.Ratio = e.absErr / e.base[b]
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(x, y ExpertScore) int {
		if b >= 0 {
			if c := cmp.Compare(x.Ratio, y.Ratio); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(x.WAPE, y.WAPE); c != 0 {
			return c
		}
		return cmp.Compare(x.Model, y.Model)
	})
	return out
}
