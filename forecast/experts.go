package forecast

import "fmt"

// ExpertForecast is the forecast one expert made, alone, for a target.
type ExpertForecast struct {
	// Model names the expert as Forecast.Model does.
	Model string
	// Point is its forecast, clipped at the cap as every expert's is before it is mixed.
	Point float64
}

// Experts returns what each expert would have forecast alone from origin o for the target
// HorizonSteps after it: the experts the mix of o's mix point weighs, whether or not they carry
// weight there, the forecasts the mix may fall back to (the baselines, and the week's median on
// a load at its floor) and the one a level break is followed with (breakFollower). Each is the
// forecast as the mix reads it (made at o, a stack with the weights of the refit before), so
// Σ Share.Weight·Point over a Forecast's Shares is its Point.
// Experts with no forecast for that target are left out. It lets a backtest score every expert
// on its own (tiler forecast backtest --experts): which one a series would have been best served
// by, in hindsight, and how far the mix is from it.
func (w *Walker) Experts(o int) ([]ExpertForecast, error) {
	if o < 0 || o >= w.s.Len() {
		return nil, fmt.Errorf("origin %d outside the series of %d points", o, w.s.Len())
	}
	T := o + w.h
	cands := w.candidates(floorTo(o, w.mixEvery))
	out := make([]ExpertForecast, 0, len(cands)+1)
	add := func(t *track) {
		for _, e := range out {
			if e.Model == t.name {
				return
			}
		}
		if f, ok := w.forecastOf(t, T); ok {
			out = append(out, ExpertForecast{Model: t.name, Point: f})
		}
	}
	for _, t := range cands {
		add(t)
	}
	for _, t := range w.fallbacks {
		add(t)
	}
	add(w.breakFollower(o, T, w.baselines[0]))
	return out, nil
}
