package backtest

import (
	"math"
	"time"

	"github.com/tiler-dev/tiler/forecast"
)

// DayScore is the forecaster against the best baseline over the scored targets of one day: a
// ratio over a whole backtest can hide that the forecaster lost badly on the day after an outage,
// a surge or a level break, and this says which days, and which expert carried each.
type DayScore struct {
	// Day is the midnight the day starts at, in the forecast's time zone (forecast.Options
	// Location: UTC unless the policy or --time-zone names one).
	Day time.Time `json:"day"`
	// Targets is how many scored targets fall on the day.
	Targets int `json:"targets"`
	// WAPE is the forecaster's Σ|y−ŷ| / Σ|y| over them, and Baseline the same of the best
	// baseline over the whole backtest (Result.BestBaselineName).
	WAPE     float64 `json:"wape"`
	Baseline float64 `json:"baseline"`
	// Ratio is WAPE / Baseline, absent when the baseline made no error that day.
	Ratio *float64 `json:"ratio,omitempty"`
	// Lead is the expert with the largest mean share of the day's forecasts (forecast.Share), and
	// FellBack the fraction of them that were a fallback alone (Result.FellBack).
	Lead     string  `json:"lead"`
	FellBack float64 `json:"fellBack"`
}

// days scores the targets day by day in loc (UTC when nil) against the baseline named best, in
// the order of the days. A day whose actuals are all zero has no WAPE and is left out; so is every
// day when no baseline was scored.
func (sc *scores) days(s forecast.Series, best string, loc *time.Location) []DayScore {
	b := -1
	for i, name := range sc.baseNames {
		if name == best {
			b = i
		}
	}
	if b < 0 {
		return nil
	}
	if loc == nil {
		loc = time.UTC
	}
	var out []DayScore
	for i := 0; i < len(sc.targets); {
		t := s.TimeAt(sc.targets[i]).In(loc)
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		next := day.AddDate(0, 0, 1)
		var errSum, baseSum, ySum, fell float64
		share := map[string]float64{}
		j := i
		for ; j < len(sc.targets) && s.TimeAt(sc.targets[j]).Before(next); j++ {
			errSum += sc.modelErr[j]
			baseSum += sc.baseErr[b][j]
			ySum += math.Abs(s.Values[sc.targets[j]])
			if sc.fell[j] {
				fell++
			}
			for _, x := range sc.shares[j] {
				share[x.Model] += x.Weight
			}
		}
		if ySum > 0 {
			d := DayScore{Day: day, Targets: j - i, WAPE: errSum / ySum, Baseline: baseSum / ySum, FellBack: fell / float64(j-i)}
			if baseSum > 0 {
				r := errSum / baseSum
				d.Ratio = &r
			}
			for m, v := range share {
				if d.Lead == "" || v > share[d.Lead] || v == share[d.Lead] && m < d.Lead {
					d.Lead = m
				}
			}
			out = append(out, d)
		}
		i = j
	}
	return out
}
